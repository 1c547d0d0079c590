// mqtt_packets.hpp — the MQTT 3.1.1 packets mqtt_server speaks, as plain functions over bytes (no I/O).
//
// A packet is a fixed header (type and flags in one byte, then the remaining length in one to four
// bytes of 7 bits each) and that many bytes. next_packet() finds the first whole packet in what was
// read, judging the declared length against the server's maximum as soon as the header is in — so
// an oversized packet is refused before its body is buffered, and what a connection buffers stays
// below the maximum plus five bytes. The readers below check every length against the bytes there
// are; anything that does not fit is malformed (the server closes the connection, as the standard
// asks for a protocol violation). Invariant: no function here reads past the view it was given.
#ifndef MQTT_PACKETS_HPP
#define MQTT_PACKETS_HPP

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mqtt {

enum packet_type : std::uint8_t {
    connect = 1, connack, publish, puback, pubrec, pubrel, pubcomp, subscribe, suback,
    unsubscribe, unsuback, pingreq, pingresp, disconnect,
};

struct packet {
    std::uint8_t type = 0;  ///< the high nibble of the first byte
    std::uint8_t flags = 0; ///< the low nibble
    std::string_view body;  ///< the remaining length's bytes
    std::size_t size = 0;   ///< header and body: how much of the input it took
};

enum class scan { whole, more, malformed, too_large };

/// The first packet of `in`, if whole. `max_packet` bounds header and body together.
inline scan next_packet(std::string_view in, std::size_t max_packet, packet& out) {
    if (in.empty()) return scan::more;
    std::size_t length = 0;
    std::size_t i = 1;
    for (unsigned shift = 0;; shift += 7, ++i) {
        if (i > 4) return scan::malformed; // a fifth length byte
        if (i >= in.size()) return scan::more;
        const auto b = static_cast<std::uint8_t>(in[i]);
        length |= std::size_t{b & 0x7fu} << shift;
        if ((b & 0x80u) == 0) break;
    }
    const std::size_t header = i + 1;
    if (header + length > max_packet) return scan::too_large;
    if (in.size() < header + length) return scan::more;
    out.type = static_cast<std::uint8_t>(static_cast<std::uint8_t>(in[0]) >> 4);
    out.flags = static_cast<std::uint8_t>(static_cast<std::uint8_t>(in[0]) & 0x0fu);
    out.body = in.substr(header, length);
    out.size = header + length;
    return scan::whole;
}

/// Reads a packet's fields front to back; any read past the end (or a bad string) fails the reader.
class reader {
public:
    explicit reader(std::string_view body) : rest_(body) {}
    bool ok() const noexcept { return ok_; }
    bool done() const noexcept { return rest_.empty(); }
    std::uint8_t byte() {
        if (rest_.empty()) return fail(), 0;
        const auto b = static_cast<std::uint8_t>(rest_[0]);
        rest_.remove_prefix(1);
        return b;
    }
    std::uint16_t u16() {
        const std::uint16_t hi = byte(), lo = byte();
        return static_cast<std::uint16_t>(hi << 8 | lo);
    }
    /// A length-prefixed string: UTF-8 without U+0000 (the standard's rule; the server checks no more).
    std::string_view text() {
        const std::string_view s = bytes();
        if (s.find('\0') != std::string_view::npos) fail();
        return s;
    }
    /// Length-prefixed binary data (a password, a will message).
    std::string_view bytes() {
        const std::size_t n = u16();
        if (!ok_ || rest_.size() < n) return fail(), std::string_view{};
        const std::string_view s = rest_.substr(0, n);
        rest_.remove_prefix(n);
        return s;
    }
    /// Whatever is left (a PUBLISH's payload).
    std::string_view rest() {
        const std::string_view s = rest_;
        rest_ = {};
        return s;
    }

private:
    void fail() noexcept { ok_ = false; }
    std::string_view rest_;
    bool ok_ = true;
};

struct connect_request {
    std::uint8_t level = 0;      ///< 4: MQTT 3.1.1
    std::uint16_t keep_alive = 0; ///< seconds; 0: the client asks for no keep-alive
    bool clean_session = true;
    std::string client_id;
};

/// A CONNECT's fields, or nothing when it is malformed (wrong protocol name, reserved flag set,
/// a will or login field missing or cut short, bytes left over).
inline std::optional<connect_request> parse_connect(std::string_view body) {
    reader r(body);
    const std::string_view name = r.text();
    connect_request c;
    c.level = r.byte();
    const std::uint8_t flags = r.byte();
    c.keep_alive = r.u16();
    if (!r.ok() || name != "MQTT" || (flags & 0x01u) != 0) return std::nullopt;
    const bool will = flags & 0x04u, user = flags & 0x80u, password = flags & 0x40u;
    if (!will && (flags & 0x38u) != 0) return std::nullopt; // will QoS or retain without a will
    if (((flags >> 3) & 0x03u) == 3) return std::nullopt;    // will QoS 3
    if (password && !user) return std::nullopt;
    c.clean_session = flags & 0x02u;
    c.client_id = std::string(r.text());
    if (will) {
        r.text();  // will topic
        r.bytes(); // will message
    }
    if (user) r.text();
    if (password) r.bytes();
    if (!r.ok() || !r.done()) return std::nullopt;
    return c;
}

/// A topic name a client publishes to: not empty, no wildcards.
inline bool valid_topic(std::string_view t) {
    return !t.empty() && t.find_first_of("+#") == std::string_view::npos;
}

/// A subscription's topic filter: '#' only as the whole last level, '+' only as a whole level.
inline bool valid_filter(std::string_view f) {
    if (f.empty()) return false;
    for (std::size_t i = 0; i < f.size(); ++i) {
        const bool level_start = i == 0 || f[i - 1] == '/';
        const bool level_end = i + 1 == f.size() || f[i + 1] == '/';
        if (f[i] == '#' && !(level_start && i + 1 == f.size())) return false;
        if (f[i] == '+' && !(level_start && level_end)) return false;
    }
    return true;
}

/// Whether `topic` matches `filter` (both valid). A filter starting with a wildcard does not match
/// a topic starting with '$' (the standard keeps $SYS-like topics out of '#' and '+').
inline bool matches(std::string_view filter, std::string_view topic) {
    if (!topic.empty() && topic[0] == '$' && (filter[0] == '#' || filter[0] == '+')) return false;
    std::size_t f = 0, t = 0;
    for (;;) {
        const std::size_t f_end = std::min(filter.find('/', f), filter.size());
        const std::string_view level = filter.substr(f, f_end - f);
        if (level == "#") return true; // this level and every one below (the parent too)
        const std::size_t t_end = std::min(topic.find('/', t), topic.size());
        if (level != "+" && level != topic.substr(t, t_end - t)) return false;
        const bool filter_last = f_end == filter.size(), topic_last = t_end == topic.size();
        if (filter_last || topic_last) {
            // "a/#" matches "a": the filter's next level is a lone '#'.
            if (topic_last && !filter_last) return filter.substr(f_end + 1) == "#";
            return filter_last && topic_last;
        }
        f = f_end + 1;
        t = t_end + 1;
    }
}

// --- what the server writes ------------------------------------------------------------------------

/// The remaining length's bytes.
inline void put_length(std::string& out, std::size_t n) {
    do {
        auto b = static_cast<std::uint8_t>(n & 0x7fu);
        n >>= 7;
        if (n > 0) b |= 0x80u;
        out.push_back(static_cast<char>(b));
    } while (n > 0);
}

inline std::string connack_packet(std::uint8_t return_code) {
    return std::string{static_cast<char>(connack << 4), 2, 0, static_cast<char>(return_code)};
}
/// A two-byte-body acknowledgement carrying a packet identifier (PUBACK, PUBREC, PUBCOMP, UNSUBACK).
inline std::string ack_packet(std::uint8_t type_and_flags, std::uint16_t id) {
    return std::string{static_cast<char>(type_and_flags), 2, static_cast<char>(id >> 8), static_cast<char>(id & 0xffu)};
}
inline std::string suback_packet(std::uint16_t id, const std::vector<std::uint8_t>& codes) {
    std::string out(1, static_cast<char>(suback << 4));
    put_length(out, 2 + codes.size());
    out.push_back(static_cast<char>(id >> 8));
    out.push_back(static_cast<char>(id & 0xffu));
    for (const std::uint8_t c : codes) out.push_back(static_cast<char>(c));
    return out;
}
inline std::string pingresp_packet() { return std::string{static_cast<char>(pingresp << 4), 0}; }
/// A QoS 0 PUBLISH of `payload` to `topic` (what subscribers are sent).
inline std::string publish_packet(std::string_view topic, std::string_view payload) {
    std::string out(1, static_cast<char>(publish << 4));
    put_length(out, 2 + topic.size() + payload.size());
    out.push_back(static_cast<char>(topic.size() >> 8));
    out.push_back(static_cast<char>(topic.size() & 0xffu));
    out.append(topic);
    out.append(payload);
    return out;
}

} // namespace mqtt

#endif
