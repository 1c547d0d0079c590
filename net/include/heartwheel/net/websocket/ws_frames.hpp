// heartwheel/net/websocket/ws_frames.hpp — RFC 6455's framing as a plain data structure, for the server's
// side: a reader of the client's frames and the headers of the server's own. No Asio, no buffers of
// its own while a peer is idle: the bytes are the caller's (a read_chunk lent by the thread's pool).
//
// The reader is pulled one event at a time: next(data, size) looks at the bytes it is given and says
// what they hold — a run of a data message's payload (unmasked in place: the bytes stay where they
// were read, no copy), the end of a message, a whole control frame (ping, pong, close: its payload at
// most 125 bytes, kept by the reader only while the frame is cut by a read's end), a protocol error
// with the close code it calls for, or that it needs more bytes — and how many of the bytes it took.
// The caller advances by that many and asks again; what it does not hand back stays with it (a
// pipelined next message).
//
// What the reader refuses (each an error event; the connection then says the code in its close frame
// and reads no more): reserved bits set (no extension is negotiated), an undefined opcode, an unmasked
// frame (a client must mask), a control frame fragmented or over 125 bytes, a continuation with no
// message begun or a new message inside one, a length not in its shortest form or with the top bit
// set (1002); text that is not UTF-8 — checked as it arrives, across frames and reads, and at the
// message's end — and a close reason that is not (1007); a message over max_message (1009, judged
// from the frame's header, before its payload arrives); a close frame of one byte or with a code RFC
// 6455 7.4 does not allow on the wire (1002).
// Invariants (fuzzed in fuzz/ws_frames_fuzz.cpp): every event's `consumed` is at most the size given;
// data events deliver exactly the payload bytes of data frames, in order; after an error every call
// returns the same error and consumes nothing; the reader holds at most 125 bytes of its own.
#ifndef HEARTWHEEL_NET_WS_FRAMES_HPP
#define HEARTWHEEL_NET_WS_FRAMES_HPP

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace heartwheel::net {

/// RFC 6455 5.2's opcodes.
enum class ws_opcode : std::uint8_t { continuation = 0, text = 1, binary = 2, close = 8, ping = 9, pong = 10 };

/// Why a peer's frames were refused; ws_close_code() says what the close frame answers.
enum class ws_error : std::uint8_t {
    none,
    bad_reserved_bits,   ///< RSV1..3 set without an extension
    bad_opcode,          ///< an opcode RFC 6455 does not define
    bad_unmasked_frame,  ///< a client's frame without its mask
    bad_control_fragment,///< a control frame without FIN
    bad_control_size,    ///< a control frame over 125 bytes
    bad_continuation,    ///< a continuation with no message begun
    bad_data_frame,      ///< a text or binary frame inside an unfinished message
    bad_size,            ///< a length not in its shortest form, or over 2^63
    bad_utf8,            ///< text (a message or a close reason) that is not UTF-8
    bad_close_size,      ///< a close frame's payload of one byte
    bad_close_code,      ///< a close code not allowed on the wire
    message_too_big,     ///< a message over the reader's max_message
};
/// The close code an error calls for: 1007 for bad_utf8, 1009 for message_too_big, else 1002.
std::uint16_t ws_close_code(ws_error e) noexcept;
/// A short name for logs and tests ("bad-opcode", ...).
std::string_view to_string(ws_error e) noexcept;
/// Whether a peer may send `code` in its close frame (RFC 6455 7.4.1 and IANA's registry: 1000..1003,
/// 1007..1014, 3000..4999).
bool ws_close_code_allowed(std::uint16_t code) noexcept;

/// What the bytes given to ws_frame_reader::next hold.
struct ws_event {
    enum kind_type : std::uint8_t { need_more, data, message_end, ping, pong, close, error };
    kind_type kind = need_more;
    std::size_t consumed = 0;  ///< bytes of the input taken
    /// data: payload bytes (unmasked, in the input); ping/pong/close: the frame's payload (in the
    /// input, or the reader's own copy of a frame cut by a read's end) — valid until the next call.
    std::string_view payload;
    std::uint16_t close_code = 0; ///< close: the peer's code (1005: none given); its reason follows in payload
    ws_error why = ws_error::none; ///< error
};

/// The UTF-8 check of a text message, fed in pieces (RFC 3629: no overlong forms, no surrogates,
/// nothing past U+10FFFF). Three bytes of state.
class ws_utf8_check {
public:
    /// False when `s` cannot continue what was fed before.
    bool feed(std::string_view s) noexcept;
    /// Whether what was fed ends on a whole character.
    bool complete() const noexcept { return need_ == 0; }
    void reset() noexcept { need_ = 0; }

private:
    std::uint8_t need_ = 0, lo_ = 0x80, hi_ = 0xBF; // continuation bytes still due, and the next one's range
};

class ws_frame_reader {
public:
    /// A message (its frames' payloads together) over `max_message` bytes is refused (1009).
    explicit ws_frame_reader(std::uint64_t max_message) noexcept : max_message_(max_message) {}

    /// The next event in `data` (size bytes; a data frame's payload is unmasked in place).
    ws_event next(char* data, std::size_t size);

    /// A message is begun and not yet ended.
    bool in_message() const noexcept { return message_ != 0; }
    /// The message being read is binary (false: text).
    bool binary() const noexcept { return message_ == static_cast<std::uint8_t>(ws_opcode::binary); }
    ws_error failed() const noexcept { return failed_; }
    std::uint64_t max_message() const noexcept { return max_message_; }

private:
    ws_event fail(ws_error e) noexcept;
    ws_event header(const char* data, std::size_t size);
    ws_event control_end(std::string_view payload);
    void unmask(char* p, std::size_t n) noexcept;

    std::uint64_t max_message_;
    std::uint64_t message_size_ = 0; ///< the message's bytes so far, its frames' announced lengths
    std::uint64_t remaining_ = 0;    ///< the current frame's payload still due
    std::unique_ptr<std::string> cut_control_; ///< a control frame's payload cut by a read's end (≤ 125 bytes)
    unsigned char head_[14] = {};    ///< a header cut by a read's end
    unsigned char mask_[4] = {};
    std::uint8_t head_size_ = 0;
    std::uint8_t mask_at_ = 0;       ///< the mask's byte for the next payload byte
    std::uint8_t opcode_ = 0;        ///< the current frame's
    std::uint8_t message_ = 0;       ///< the message's opcode (text or binary); 0: none begun
    bool in_frame_ = false, fin_ = false, end_due_ = false;
    ws_error failed_ = ws_error::none;
    ws_utf8_check utf8_;
};

/// Writes the header of a server's (unmasked) final frame of `payload_size` bytes into `out`;
/// returns its size (2, 4 or 10).
std::size_t ws_frame_header(unsigned char (&out)[10], ws_opcode op, std::uint64_t payload_size) noexcept;

/// Sec-WebSocket-Accept for a client's Sec-WebSocket-Key (RFC 6455 4.2.2: base64 of the SHA-1 of the
/// key and the protocol's GUID).
std::string ws_accept_key(std::string_view client_key);
/// Whether a Sec-WebSocket-Key is what RFC 6455 4.1 asks: base64 of 16 bytes (24 characters).
bool ws_key_valid(std::string_view client_key) noexcept;

} // namespace heartwheel::net

#endif
