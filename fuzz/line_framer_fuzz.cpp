// line_framer_fuzz.cpp — net::line_framer. Input: 2 bytes of max_line (1..1024), 1 byte
// seeding the read sizes and the stashes, then the byte stream. The stream is framed twice, in one
// piece and in pseudo-random small reads that sometimes stop early and stash the rest (as the session
// does under backpressure); each piece is lent from a scratch buffer that is scribbled over once it is
// given back, and each time the result is checked against a plain reference split: the same lines,
// none holding '\n' or longer than max_line, too_long exactly when the reference finds a longer line,
// and never more kept than max_line bytes of a partial line plus what was stashed.
#include <heartwheel/net/connection/line_framer.hpp>
#include "fuzz_check.hpp"

#include <algorithm>
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
    heartwheel::net::line_framer f(max_line);
    result r;
    std::string_view line;
    std::string scratch;
    auto take = [&](bool may_stop) { // false: too_long
        for (;;) {
            if (may_stop && seed != 0) {
                seed = seed * 1103515245u + 12345u;
                if ((seed >> 16) % 4 == 0) {
                    f.stash();
                    return true;
                }
            }
            const auto s = f.next(line);
            if (s == heartwheel::net::line_framer::status::need_more) return true;
            if (s == heartwheel::net::line_framer::status::too_long) {
                r.too_long = true;
                return false;
            }
            FUZZ_CHECK(line.size() <= max_line, "line within max_line");
            FUZZ_CHECK(line.find('\n') == std::string_view::npos, "no newline inside a line");
            r.lines.emplace_back(line);
        }
    };
    while (!in.empty()) {
        if (!take(false)) return r; // what an earlier read stashed comes first
        std::size_t n = in.size();
        if (seed != 0) { // small irregular reads
            seed = seed * 1103515245u + 12345u;
            n = std::min(n, std::size_t{1} + (seed >> 16) % 97);
        }
        scratch.assign(in.substr(0, n));
        in.remove_prefix(n);
        f.feed(scratch);
        const bool ok = take(true);
        FUZZ_CHECK(f.memory() == 0 || f.buffered() > 0, "no memory held for nothing");
        std::fill(scratch.begin(), scratch.end(), '#'); // the chunk goes back
        if (!ok) return r;
    }
    take(false);
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
