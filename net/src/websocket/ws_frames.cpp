// ws_frames.cpp — the server side of RFC 6455's framing: the client's frames read in place, the
// server's headers, the opening handshake's key. See ws_frames.hpp for the events and what is refused.
#include <heartwheel/net/websocket/ws_frames.hpp>

#include <algorithm>
#include <array>
#include <cstring>

namespace heartwheel::net {

std::uint16_t ws_close_code(ws_error e) noexcept {
    switch (e) {
    case ws_error::bad_utf8: return 1007;
    case ws_error::message_too_big: return 1009;
    default: return 1002;
    }
}

std::string_view to_string(ws_error e) noexcept {
    switch (e) {
    case ws_error::none: return "none";
    case ws_error::bad_reserved_bits: return "bad-reserved-bits";
    case ws_error::bad_opcode: return "bad-opcode";
    case ws_error::bad_unmasked_frame: return "bad-unmasked-frame";
    case ws_error::bad_control_fragment: return "bad-control-fragment";
    case ws_error::bad_control_size: return "bad-control-size";
    case ws_error::bad_continuation: return "bad-continuation";
    case ws_error::bad_data_frame: return "bad-data-frame";
    case ws_error::bad_size: return "bad-size";
    case ws_error::bad_utf8: return "bad-utf8";
    case ws_error::bad_close_size: return "bad-close-size";
    case ws_error::bad_close_code: return "bad-close-code";
    case ws_error::message_too_big: return "message-too-big";
    }
    return "unknown";
}

bool ws_close_code_allowed(std::uint16_t code) noexcept {
    return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) || (code >= 3000 && code <= 4999);
}

bool ws_utf8_check::feed(std::string_view s) noexcept {
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    const auto* const end = p + s.size();
    while (p != end) {
        if (need_ == 0) { // ASCII, the common text, eight bytes at a time
            while (end - p >= 8) {
                std::uint64_t w = 0;
                std::memcpy(&w, p, sizeof w);
                if ((w & 0x8080808080808080u) != 0) break;
                p += 8;
            }
            if (p == end) break;
        }
        const unsigned char b = *p++;
        if (need_ != 0) {
            if (b < lo_ || b > hi_) return false;
            --need_;
            lo_ = 0x80;
            hi_ = 0xBF;
            continue;
        }
        if (b < 0x80) continue;
        // The first byte says how many follow and narrows the next one's range: E0 and F0 exclude
        // overlong forms, ED the surrogates, F4 what lies past U+10FFFF.
        if (b >= 0xC2 && b <= 0xDF) need_ = 1;
        else if (b >= 0xE0 && b <= 0xEF) {
            need_ = 2;
            if (b == 0xE0) lo_ = 0xA0;
            if (b == 0xED) hi_ = 0x9F;
        } else if (b >= 0xF0 && b <= 0xF4) {
            need_ = 3;
            if (b == 0xF0) lo_ = 0x90;
            if (b == 0xF4) hi_ = 0x8F;
        } else return false;
    }
    return true;
}

ws_event ws_frame_reader::fail(ws_error e) noexcept {
    failed_ = e;
    ws_event ev;
    ev.kind = ws_event::error;
    ev.why = e;
    return ev;
}

// Eight bytes at a time: the mask, turned to the phase the payload is at, repeated twice in a word
// (byte i of the run takes mask_[(mask_at_ + i) & 3], which is that word's byte i % 8, 8 being a
// multiple of 4); the tail byte by byte from the same word.
void ws_frame_reader::unmask(char* p, std::size_t n) noexcept {
    unsigned char turned[8];
    for (unsigned k = 0; k < 8; ++k) turned[k] = mask_[(mask_at_ + k) & 3];
    std::uint64_t word = 0;
    std::memcpy(&word, turned, sizeof word);
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        std::uint64_t v = 0;
        std::memcpy(&v, p + i, sizeof v);
        v ^= word;
        std::memcpy(p + i, &v, sizeof v);
    }
    for (; i < n; ++i) p[i] = static_cast<char>(static_cast<unsigned char>(p[i]) ^ turned[i & 7]);
    mask_at_ = static_cast<std::uint8_t>((mask_at_ + n) & 3);
}

// Takes header bytes until the header is whole (consumed: what it took) or the input ends
// (need_more); refuses what it can as soon as the first two bytes are in.
ws_event ws_frame_reader::header(const char* data, std::size_t size) {
    ws_event ev;
    if (head_size_ == 0) cut_control_.reset(); // the last control frame's payload, handed out: it goes
    std::size_t i = 0;
    std::size_t want = 2;
    for (;;) {
        while (head_size_ < want && i < size) head_[head_size_++] = static_cast<unsigned char>(data[i++]);
        ev.consumed = i;
        if (head_size_ < want) return ev; // need_more: all taken
        if (want != 2) break;
        const unsigned char b0 = head_[0], b1 = head_[1];
        const unsigned op = b0 & 0x0F;
        const bool fin = (b0 & 0x80) != 0;
        if ((b0 & 0x70) != 0) return fail(ws_error::bad_reserved_bits);
        if (!(op <= 2 || (op >= 8 && op <= 10))) return fail(ws_error::bad_opcode);
        if ((b1 & 0x80) == 0) return fail(ws_error::bad_unmasked_frame);
        const unsigned len7 = b1 & 0x7F;
        if (op >= 8) {
            if (!fin) return fail(ws_error::bad_control_fragment);
            if (len7 > 125) return fail(ws_error::bad_control_size);
        } else if (op == 0 && message_ == 0) return fail(ws_error::bad_continuation);
        else if (op != 0 && message_ != 0) return fail(ws_error::bad_data_frame);
        want = 2 + (len7 == 126 ? 2 : len7 == 127 ? 8 : 0) + 4;
    }
    const unsigned len7 = head_[1] & 0x7F;
    std::uint64_t len = len7;
    std::size_t at = 2;
    if (len7 == 126) {
        len = (std::uint64_t{head_[2]} << 8) | head_[3];
        if (len < 126) return fail(ws_error::bad_size);
        at = 4;
    } else if (len7 == 127) {
        len = 0;
        for (std::size_t k = 2; k < 10; ++k) len = (len << 8) | head_[k];
        if ((len >> 63) != 0 || len <= 0xFFFF) return fail(ws_error::bad_size);
        at = 10;
    }
    std::memcpy(mask_, head_ + at, 4);
    opcode_ = head_[0] & 0x0F;
    fin_ = (head_[0] & 0x80) != 0;
    if (opcode_ < 8) {
        if (len > max_message_ - message_size_) return fail(ws_error::message_too_big);
        message_size_ += len;
        if (opcode_ != 0) message_ = opcode_;
    }
    remaining_ = len;
    mask_at_ = 0;
    head_size_ = 0;
    in_frame_ = true;
    return ev;
}

ws_event ws_frame_reader::control_end(std::string_view payload) {
    in_frame_ = false;
    ws_event ev;
    if (opcode_ == static_cast<std::uint8_t>(ws_opcode::ping)) ev.kind = ws_event::ping;
    else if (opcode_ == static_cast<std::uint8_t>(ws_opcode::pong)) ev.kind = ws_event::pong;
    else {
        ev.kind = ws_event::close;
        if (payload.size() == 1) return fail(ws_error::bad_close_size);
        ev.close_code = 1005;
        if (payload.size() >= 2) {
            ev.close_code = static_cast<std::uint16_t>((static_cast<unsigned char>(payload[0]) << 8) |
                                                       static_cast<unsigned char>(payload[1]));
            if (!ws_close_code_allowed(ev.close_code)) return fail(ws_error::bad_close_code);
            ws_utf8_check reason;
            if (!reason.feed(payload.substr(2)) || !reason.complete()) return fail(ws_error::bad_utf8);
            ev.payload = payload.substr(2);
        }
        return ev;
    }
    ev.payload = payload;
    return ev;
}

ws_event ws_frame_reader::next(char* data, std::size_t size) {
    std::size_t taken = 0;
    for (;;) {
        if (failed_ != ws_error::none) {
            ws_event ev = fail(failed_);
            ev.consumed = taken;
            return ev;
        }
        if (end_due_) {
            end_due_ = false;
            const bool text = message_ == static_cast<std::uint8_t>(ws_opcode::text);
            message_ = 0;
            message_size_ = 0;
            if (text && !utf8_.complete()) return fail(ws_error::bad_utf8);
            utf8_.reset();
            ws_event ev;
            ev.kind = ws_event::message_end;
            ev.consumed = taken;
            return ev;
        }
        if (!in_frame_) {
            ws_event ev = header(data + taken, size - taken);
            if (ev.kind == ws_event::error) {
                ev.consumed = taken + ev.consumed;
                return ev;
            }
            taken += ev.consumed;
            if (!in_frame_) { // the header is cut by the input's end
                ev.consumed = taken;
                return ev;
            }
            if (remaining_ == 0) {
                if (opcode_ >= 8) {
                    ws_event c = control_end({});
                    c.consumed = taken;
                    return c;
                }
                in_frame_ = false;
                if (fin_) end_due_ = true;
            }
            continue;
        }
        if (taken == size) {
            ws_event ev;
            ev.consumed = taken;
            return ev; // need_more
        }
        const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(remaining_, size - taken));
        char* p = data + taken;
        unmask(p, n);
        remaining_ -= n;
        taken += n;
        if (opcode_ >= 8) {
            const bool in_place = remaining_ == 0 && !cut_control_; // whole in the input: no copy
            if (!in_place) {                                         // cut by the input's end
                if (!cut_control_) cut_control_ = std::make_unique<std::string>();
                cut_control_->append(p, n);
            }
            if (remaining_ != 0) continue;
            ws_event c = control_end(in_place ? std::string_view(p, n) : std::string_view(*cut_control_));
            c.consumed = taken;
            return c;
        }
        if (message_ == static_cast<std::uint8_t>(ws_opcode::text) && !utf8_.feed({p, n})) return fail(ws_error::bad_utf8);
        if (remaining_ == 0) {
            in_frame_ = false;
            if (fin_) end_due_ = true;
        }
        ws_event ev;
        ev.kind = ws_event::data;
        ev.consumed = taken;
        ev.payload = {p, n};
        return ev;
    }
}

std::size_t ws_frame_header(unsigned char (&out)[10], ws_opcode op, std::uint64_t payload_size) noexcept {
    out[0] = static_cast<unsigned char>(0x80 | static_cast<unsigned>(op));
    if (payload_size < 126) {
        out[1] = static_cast<unsigned char>(payload_size);
        return 2;
    }
    if (payload_size <= 0xFFFF) {
        out[1] = 126;
        out[2] = static_cast<unsigned char>(payload_size >> 8);
        out[3] = static_cast<unsigned char>(payload_size);
        return 4;
    }
    out[1] = 127;
    for (int k = 0; k < 8; ++k) out[2 + k] = static_cast<unsigned char>(payload_size >> (56 - 8 * k));
    return 10;
}

namespace {

// SHA-1 (FIPS 180-4) of a short input: only the opening handshake's key transform uses it, as RFC
// 6455 fixes; nothing here relies on it for security.
std::array<unsigned char, 20> sha1(std::string_view in) {
    std::uint32_t h[5] = {0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0};
    std::string m(in);
    const std::uint64_t bits = static_cast<std::uint64_t>(in.size()) * 8;
    m.push_back(static_cast<char>(0x80));
    while (m.size() % 64 != 56) m.push_back('\0');
    for (int k = 7; k >= 0; --k) m.push_back(static_cast<char>(bits >> (8 * k)));
    const auto rotl = [](std::uint32_t x, int n) { return (x << n) | (x >> (32 - n)); };
    for (std::size_t block = 0; block < m.size(); block += 64) {
        std::uint32_t w[80];
        for (int t = 0; t < 16; ++t) {
            const auto* b = reinterpret_cast<const unsigned char*>(m.data() + block + 4 * t);
            w[t] = (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) | (std::uint32_t{b[2]} << 8) | b[3];
        }
        for (int t = 16; t < 80; ++t) w[t] = rotl(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16], 1);
        std::uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
        for (int t = 0; t < 80; ++t) {
            std::uint32_t f, k;
            if (t < 20) f = (b & c) | (~b & d), k = 0x5A827999;
            else if (t < 40) f = b ^ c ^ d, k = 0x6ED9EBA1;
            else if (t < 60) f = (b & c) | (b & d) | (c & d), k = 0x8F1BBCDC;
            else f = b ^ c ^ d, k = 0xCA62C1D6;
            const std::uint32_t next = rotl(a, 5) + f + e + k + w[t];
            e = d;
            d = c;
            c = rotl(b, 30);
            b = a;
            a = next;
        }
        h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e;
    }
    std::array<unsigned char, 20> out{};
    for (int i = 0; i < 20; ++i) out[static_cast<std::size_t>(i)] = static_cast<unsigned char>(h[i / 4] >> (24 - 8 * (i % 4)));
    return out;
}

constexpr char base64_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

} // namespace

std::string ws_accept_key(std::string_view client_key) {
    const auto digest = sha1(std::string(client_key) + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11");
    std::string out;
    for (std::size_t i = 0; i < digest.size(); i += 3) {
        const std::uint32_t v = (std::uint32_t{digest[i]} << 16) | (i + 1 < digest.size() ? std::uint32_t{digest[i + 1]} << 8 : 0) |
                                (i + 2 < digest.size() ? std::uint32_t{digest[i + 2]} : 0);
        out.push_back(base64_alphabet[(v >> 18) & 63]);
        out.push_back(base64_alphabet[(v >> 12) & 63]);
        out.push_back(i + 1 < digest.size() ? base64_alphabet[(v >> 6) & 63] : '=');
        out.push_back(i + 2 < digest.size() ? base64_alphabet[v & 63] : '=');
    }
    return out;
}

bool ws_key_valid(std::string_view key) noexcept {
    if (key.size() != 24 || key.substr(22) != "==") return false;
    return std::all_of(key.begin(), key.begin() + 22, [](char c) { return std::strchr(base64_alphabet, c) != nullptr && c != '\0'; });
}

} // namespace heartwheel::net
