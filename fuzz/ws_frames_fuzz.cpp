// ws_frames_fuzz.cpp — net::ws_frame_reader. Input: one byte choosing the mode, one seeding the read
// sizes, then the bytes. Even mode: the bytes are a peer's stream, fed in pseudo-random reads; each
// event takes at most what it was given, data comes only inside a message, a message never exceeds
// max_message, control payloads never exceed 125 bytes, and an error is sticky (the same error,
// nothing taken). Odd mode: the bytes are one binary message, framed as a client would (masked, cut
// into fragments with a ping between two of them) and read back in pseudo-random reads: the same
// bytes come out as one message, and the ping with its payload.
#include <heartwheel/net/websocket/ws_frames.hpp>
#include "fuzz_check.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace {

using namespace heartwheel::net;

struct lcg {
    std::uint32_t s;
    std::uint32_t next(std::uint32_t mod) {
        s = s * 1664525u + 1013904223u;
        return (s >> 8) % mod;
    }
};

std::string client_frame(unsigned op, std::string_view payload, bool fin, lcg& r) {
    std::string out;
    out.push_back(static_cast<char>((fin ? 0x80 : 0) | op));
    const std::uint64_t n = payload.size();
    if (n < 126) out.push_back(static_cast<char>(0x80 | n));
    else if (n <= 0xFFFF) {
        out.push_back(static_cast<char>(0x80 | 126));
        out.push_back(static_cast<char>(n >> 8));
        out.push_back(static_cast<char>(n));
    } else {
        out.push_back(static_cast<char>(0x80 | 127));
        for (int k = 7; k >= 0; --k) out.push_back(static_cast<char>(n >> (8 * k)));
    }
    unsigned char key[4];
    for (auto& k : key) k = static_cast<unsigned char>(r.next(256));
    out.append(reinterpret_cast<const char*>(key), 4);
    for (std::size_t i = 0; i < payload.size(); ++i) out.push_back(static_cast<char>(static_cast<unsigned char>(payload[i]) ^ key[i % 4]));
    return out;
}

struct seen {
    std::string message, ping;
    int messages = 0;
    bool failed = false;
};

seen read(std::string input, lcg r, std::uint64_t max_message) {
    ws_frame_reader reader(max_message);
    seen out;
    std::string current;
    for (std::size_t at = 0; at < input.size() && !out.failed;) {
        const std::size_t piece = 1 + r.next(64);
        std::string scratch = input.substr(at, piece);
        at += scratch.size();
        for (std::size_t used = 0;;) {
            const ws_event ev = reader.next(scratch.data() + used, scratch.size() - used);
            FUZZ_CHECK(ev.consumed <= scratch.size() - used, "an event took more than it was given");
            used += ev.consumed;
            if (ev.kind == ws_event::need_more) {
                FUZZ_CHECK(used == scratch.size(), "need_more with bytes left");
                break;
            }
            if (ev.kind == ws_event::data) {
                FUZZ_CHECK(reader.in_message(), "data outside a message");
                current.append(ev.payload);
                FUZZ_CHECK(current.size() <= max_message, "a message past max_message");
            } else if (ev.kind == ws_event::message_end) {
                out.message = std::move(current);
                current.clear();
                ++out.messages;
            } else if (ev.kind == ws_event::error) {
                const ws_event again = reader.next(scratch.data(), scratch.size());
                FUZZ_CHECK(again.kind == ws_event::error && again.why == ev.why && again.consumed == 0, "an error that is not sticky");
                out.failed = true;
                break;
            } else {
                FUZZ_CHECK(ev.payload.size() <= 125, "a control payload over 125 bytes");
                if (ev.kind == ws_event::ping) out.ping = std::string(ev.payload);
            }
        }
    }
    return out;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 2) return 0;
    const bool round_trip = (data[0] & 1) != 0;
    lcg r{data[1]};
    const std::string bytes(reinterpret_cast<const char*>(data + 2), size - 2);
    if (!round_trip) {
        read(bytes, r, 1 + (data[0] >> 1) * 64u);
        return 0;
    }
    // One binary message in fragments, a ping after the first.
    std::string stream;
    std::size_t at = 0;
    bool first = true;
    do {
        const std::size_t n = std::min<std::size_t>(bytes.size() - at, r.next(300));
        const bool fin = at + n == bytes.size();
        stream += client_frame(first ? 2 : 0, std::string_view(bytes).substr(at, n), fin, r);
        if (first) stream += client_frame(9, std::string_view(bytes).substr(0, std::min<std::size_t>(bytes.size(), 125)), true, r);
        first = false;
        at += n;
    } while (at < bytes.size());
    const seen got = read(stream, lcg{data[1] ^ 0x5Au}, bytes.size());
    FUZZ_CHECK(!got.failed, "a well-formed message refused");
    FUZZ_CHECK(got.messages == 1 && got.message == bytes, "the message read back differs");
    FUZZ_CHECK(got.ping == bytes.substr(0, 125), "the ping's payload differs");
    return 0;
}
