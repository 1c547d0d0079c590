// line_framer_fuzz.cpp — the echo server's line framer. Input: 2 bytes of max_line (1..1024), 1 byte
// seeding the read sizes, then the byte stream. The stream is framed twice, in one piece per
// read_chunk and in pseudo-random small reads, and each time checked against a plain reference split:
// the same lines, none holding '\n' or longer than max_line, too_long exactly when the reference finds
// a longer line, and never more than max_line + read_chunk bytes buffered.
#include "echo/line_framer.hpp"
#include "fuzz_check.hpp"

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace {

struct result {
    std::vector<std::string> lines;
    bool too_long = false;
};

result reference(std::string_view in, std::size_t max_line) {
    result r;
    for (;;) {
        const auto nl = in.find('\n');
        const std::size_t len = nl == std::string_view::npos ? in.size() : nl;
        if (len > max_line) {
            r.too_long = true;
            return r;
        }
        if (nl == std::string_view::npos) return r;
        r.lines.emplace_back(in.substr(0, nl));
        in.remove_prefix(nl + 1);
    }
}

result frame(std::string_view in, std::size_t max_line, std::uint32_t seed) {
    echo::line_framer f(max_line);
    result r;
    std::string_view line;
    while (!in.empty()) {
        auto space = f.prepare();
        std::size_t n = space.size();
        if (seed != 0) { // small irregular reads
            seed = seed * 1103515245u + 12345u;
            n = 1 + (seed >> 16) % 97;
        }
        n = std::min(n, in.size());
        std::memcpy(space.data(), in.data(), n);
        f.commit(n);
        in.remove_prefix(n);
        FUZZ_CHECK(f.buffered() <= max_line + echo::line_framer::read_chunk, "buffer bounded");
        for (;;) {
            const auto s = f.next(line);
            if (s == echo::line_framer::status::need_more) break;
            if (s == echo::line_framer::status::too_long) {
                r.too_long = true;
                return r;
            }
            FUZZ_CHECK(line.size() <= max_line, "line within max_line");
            FUZZ_CHECK(line.find('\n') == std::string_view::npos, "no newline inside a line");
            r.lines.emplace_back(line);
        }
    }
    return r;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 3) return 0;
    const std::size_t max_line = 1 + ((data[0] | (data[1] << 8)) % 1024);
    const std::uint32_t seed = data[2] + 1u;
    const std::string_view in(reinterpret_cast<const char*>(data + 3), size - 3);
    const result want = reference(in, max_line);
    for (std::uint32_t s : {0u, seed}) {
        const result got = frame(in, max_line, s);
        FUZZ_CHECK(got.too_long == want.too_long, "too_long agrees with the reference");
        FUZZ_CHECK(got.lines == want.lines, "lines agree with the reference");
    }
    return 0;
}
