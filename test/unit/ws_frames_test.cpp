// ws_frames_test.cpp — net::ws_frame_reader byte by byte: RFC 6455's examples, the same messages and
// control frames however the bytes arrive, each refusal with its close code, UTF-8 checked across
// frames and reads, the server's headers and the handshake's key.
#define BOOST_TEST_MODULE ws_frames
#include <boost/test/unit_test.hpp>

#include <heartwheel/net/websocket/ws_frames.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace heartwheel::net;

// A client's frame: masked (unless told not to), its length in the shortest form unless `len_form`
// forces 126 or 127.
std::string frame(unsigned op, std::string_view payload, bool fin = true, bool masked = true, unsigned rsv = 0,
                  unsigned len_form = 0) {
    std::string out;
    out.push_back(static_cast<char>((fin ? 0x80 : 0) | (rsv << 4) | op));
    const unsigned char m = masked ? 0x80 : 0;
    const std::uint64_t n = payload.size();
    const unsigned form = len_form != 0 ? len_form : n < 126 ? 0 : n <= 0xFFFF ? 126 : 127;
    if (form == 0) out.push_back(static_cast<char>(m | n));
    else if (form == 126) {
        out.push_back(static_cast<char>(m | 126));
        out.push_back(static_cast<char>(n >> 8));
        out.push_back(static_cast<char>(n));
    } else {
        out.push_back(static_cast<char>(m | 127));
        for (int k = 7; k >= 0; --k) out.push_back(static_cast<char>(n >> (8 * k)));
    }
    const unsigned char key[4] = {0x37, 0xFA, 0x21, 0x3D};
    if (masked) out.append(reinterpret_cast<const char*>(key), 4);
    for (std::size_t i = 0; i < payload.size(); ++i)
        out.push_back(masked ? static_cast<char>(static_cast<unsigned char>(payload[i]) ^ key[i % 4]) : payload[i]);
    return out;
}

// What the reader made of `input` fed in pieces of `piece` bytes: each event as a line
// ("msg:<text>", "ping:<payload>", "pong:...", "close:<code>:<reason>", "error:<name>").
std::vector<std::string> read_all(std::string input, std::size_t piece, std::uint64_t max_message = 1 << 20) {
    ws_frame_reader r(max_message);
    std::vector<std::string> out;
    std::string message;
    bool failed = false;
    for (std::size_t at = 0; at < input.size() && !failed; at += piece) {
        std::string scratch = input.substr(at, piece); // a read's chunk
        std::size_t used = 0;
        for (;;) {
            const ws_event ev = r.next(scratch.data() + used, scratch.size() - used);
            BOOST_REQUIRE_LE(ev.consumed, scratch.size() - used);
            used += ev.consumed;
            if (ev.kind == ws_event::need_more) {
                BOOST_REQUIRE_EQUAL(used, scratch.size());
                break;
            }
            if (ev.kind == ws_event::data) message.append(ev.payload);
            else if (ev.kind == ws_event::message_end) out.push_back("msg:" + std::exchange(message, {}));
            else if (ev.kind == ws_event::ping) out.push_back("ping:" + std::string(ev.payload));
            else if (ev.kind == ws_event::pong) out.push_back("pong:" + std::string(ev.payload));
            else if (ev.kind == ws_event::close)
                out.push_back("close:" + std::to_string(ev.close_code) + ":" + std::string(ev.payload));
            else {
                out.push_back("error:" + std::string(to_string(ev.why)));
                const ws_event again = r.next(scratch.data(), scratch.size()); // sticky, takes nothing
                BOOST_CHECK(again.kind == ws_event::error && again.why == ev.why && again.consumed == 0);
                failed = true;
                break;
            }
        }
    }
    // A message cut at the input's end is not reported: the reader waits for more.
    return out;
}

// The same events for every way of cutting the input.
std::vector<std::string> read_every_way(const std::string& input, std::uint64_t max_message = 1 << 20) {
    const auto whole = read_all(input, input.size() == 0 ? 1 : input.size(), max_message);
    for (std::size_t piece : {1, 2, 3, 5, 7, 13, 64})
        BOOST_CHECK_MESSAGE(read_all(input, piece, max_message) == whole, "pieces of " << piece);
    return whole;
}

using events = std::vector<std::string>;

} // namespace

BOOST_AUTO_TEST_CASE(rfc_6455_examples_read_in_any_pieces) {
    // 5.7: a single-frame masked text message "Hello".
    const std::string hello = "\x81\x85\x37\xfa\x21\x3d\x7f\x9f\x4d\x51\x58";
    BOOST_TEST(read_every_way(hello) == events{"msg:Hello"});
    // A fragmented message with a ping between its fragments (5.4: control frames may interleave).
    const std::string input = frame(1, "Hel", false) + frame(9, "are you there") + frame(0, "lo") + frame(10, "x");
    BOOST_TEST(read_every_way(input) == (events{"ping:are you there", "msg:Hello", "pong:x"}));
}

BOOST_AUTO_TEST_CASE(lengths_in_each_form_and_empty_frames) {
    const std::string mid(300, 'm'), big(70000, 'b');
    const std::string input = frame(2, mid) + frame(2, big) + frame(1, "") + frame(1, "", false) + frame(0, "") +
                              frame(9, "");
    BOOST_TEST(read_every_way(input) == (events{"msg:" + mid, "msg:" + big, "msg:", "msg:", "ping:"}),
               boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(each_refusal_with_its_close_code) {
    struct refusal {
        std::string input;
        ws_error why;
        std::uint16_t code;
    };
    const refusal cases[] = {
        {frame(1, "x", true, true, 4), ws_error::bad_reserved_bits, 1002},
        {frame(0xB, ""), ws_error::bad_opcode, 1002},
        {frame(3, "x"), ws_error::bad_opcode, 1002},
        {frame(1, "x", true, false), ws_error::bad_unmasked_frame, 1002},
        {frame(9, "x", false), ws_error::bad_control_fragment, 1002},
        {frame(9, std::string(126, 'p')), ws_error::bad_control_size, 1002},
        {frame(0, "x"), ws_error::bad_continuation, 1002},
        {frame(1, "a", false) + frame(1, "b"), ws_error::bad_data_frame, 1002},
        {frame(1, "short", true, true, 0, 126), ws_error::bad_size, 1002},
        {frame(1, std::string(200, 's'), true, true, 0, 127), ws_error::bad_size, 1002},
        {frame(1, "\xC0\x80"), ws_error::bad_utf8, 1007},           // an overlong NUL
        {frame(1, "\xED\xA0\x80"), ws_error::bad_utf8, 1007},       // a surrogate
        {frame(1, "\xF4\x90\x80\x80"), ws_error::bad_utf8, 1007},   // past U+10FFFF
        {frame(1, "ends in \xE2\x82"), ws_error::bad_utf8, 1007},    // a character cut by the message's end
        {frame(8, "\x03"), ws_error::bad_close_size, 1002},
        {frame(8, "\x13\x88"), ws_error::bad_close_code, 1002},     // 5000
        {frame(8, "\x03\xED"), ws_error::bad_close_code, 1002},     // 1005: never on the wire
        {frame(8, "\x03\xE8\xFF"), ws_error::bad_utf8, 1007},       // 1000 with a reason that is not UTF-8
        {frame(2, std::string(600, 'z')), ws_error::message_too_big, 1009},
        {frame(2, std::string(300, 'z'), false) + frame(0, std::string(300, 'z')), ws_error::message_too_big, 1009},
    };
    for (const auto& c : cases) {
        const auto got = read_every_way(c.input, 512);
        BOOST_REQUIRE(!got.empty());
        BOOST_CHECK_EQUAL(got.back(), "error:" + std::string(to_string(c.why)));
        BOOST_CHECK_EQUAL(ws_close_code(c.why), c.code);
    }
}

BOOST_AUTO_TEST_CASE(a_message_too_big_is_refused_from_its_header_before_its_payload) {
    ws_frame_reader r(1000);
    std::string head = frame(2, std::string(1001, 'z')).substr(0, 8); // the header alone
    const ws_event ev = r.next(head.data(), head.size());
    BOOST_CHECK(ev.kind == ws_event::error && ev.why == ws_error::message_too_big);
}

BOOST_AUTO_TEST_CASE(utf8_is_checked_across_frames_and_reads) {
    // "€" (E2 82 AC) cut between two frames, and 4-byte "𝄞" (F0 9D 84 9E) cut between reads.
    const std::string input = frame(1, "price \xE2\x82", false) + frame(0, "\xAC and \xF0\x9D\x84\x9E");
    BOOST_TEST(read_every_way(input) == events{"msg:price \xE2\x82\xAC and \xF0\x9D\x84\x9E"});
    // Binary is not checked.
    BOOST_TEST(read_every_way(frame(2, "\xC0\x80")) == events{"msg:\xC0\x80"});
    ws_utf8_check u;
    BOOST_CHECK(u.feed("\xEF\xBB\xBF") && u.complete()); // U+FEFF
    BOOST_CHECK(!ws_utf8_check{}.feed("\xF5\x80\x80\x80"));
    BOOST_CHECK(!ws_utf8_check{}.feed("\x80"));
}

// ASCII is taken eight bytes at a time: a bad byte, or a sequence cut short, is still found at any
// place in a long text, and a good sequence anywhere is still accepted.
BOOST_AUTO_TEST_CASE(utf8_in_long_text_is_checked_at_every_place) {
    const auto valid = [](const std::string& text) {
        ws_utf8_check u;
        return u.feed(text) && u.complete();
    };
    const std::string ascii(40, 'a');
    for (std::size_t at = 0; at <= ascii.size(); ++at) {
        const std::string head = ascii.substr(0, at), tail = ascii.substr(at);
        BOOST_TEST(valid(head + "\xE2\x82\xAC" + tail), "euro at " << at);
        BOOST_TEST(!valid(head + "\xFF" + tail), "0xFF at " << at);
        BOOST_TEST(!valid(head + "\xE2\x82" + tail), "a cut sequence at " << at);
        BOOST_TEST(!valid(head + "\xED\xA0\x80" + tail), "a surrogate at " << at);
    }
}

BOOST_AUTO_TEST_CASE(close_frames_say_their_code_and_reason) {
    BOOST_TEST(read_every_way(frame(8, "")) == events{"close:1005:"});
    BOOST_TEST(read_every_way(frame(8, std::string("\x03\xE9", 2) + "going")) == events{"close:1001:going"});
    BOOST_TEST(read_every_way(frame(8, std::string("\x03\xF4", 2))) == events{"close:1012:"}); // service restart
    BOOST_TEST(read_every_way(frame(8, std::string("\x0F\xA0", 2))) == events{"close:4000:"}); // private use
}

BOOST_AUTO_TEST_CASE(pipelined_frames_are_left_to_the_caller_after_a_message) {
    std::string input = frame(1, "one") + frame(1, "two");
    ws_frame_reader r(100);
    std::size_t used = 0;
    ws_event ev;
    std::string got;
    while ((ev = r.next(input.data() + used, input.size() - used)).kind != ws_event::message_end) {
        used += ev.consumed;
        if (ev.kind == ws_event::data) got.append(ev.payload);
    }
    used += ev.consumed;
    BOOST_CHECK_EQUAL(got, "one");
    BOOST_CHECK_EQUAL(used, frame(1, "one").size()); // the second message's bytes untouched
    BOOST_CHECK(!r.in_message());
}

BOOST_AUTO_TEST_CASE(server_headers_in_the_shortest_form) {
    unsigned char h[10];
    BOOST_CHECK_EQUAL(ws_frame_header(h, ws_opcode::text, 5), 2u);
    BOOST_CHECK(h[0] == 0x81 && h[1] == 5);
    BOOST_CHECK_EQUAL(ws_frame_header(h, ws_opcode::binary, 125), 2u);
    BOOST_CHECK_EQUAL(ws_frame_header(h, ws_opcode::binary, 126), 4u);
    BOOST_CHECK(h[0] == 0x82 && h[1] == 126 && h[2] == 0 && h[3] == 126);
    BOOST_CHECK_EQUAL(ws_frame_header(h, ws_opcode::ping, 0), 2u);
    BOOST_CHECK(h[0] == 0x89 && h[1] == 0);
    BOOST_CHECK_EQUAL(ws_frame_header(h, ws_opcode::text, 65536), 10u);
    BOOST_CHECK(h[1] == 127 && h[7] == 1 && h[8] == 0 && h[9] == 0);
}

BOOST_AUTO_TEST_CASE(the_handshake_key) {
    // RFC 6455 1.3's example.
    BOOST_CHECK_EQUAL(ws_accept_key("dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    BOOST_CHECK(ws_key_valid("dGhlIHNhbXBsZSBub25jZQ=="));
    BOOST_CHECK(!ws_key_valid("dGhlIHNhbXBsZSBub25jZQ="));
    BOOST_CHECK(!ws_key_valid("dGhlIHNhbXBsZSBub25j*Q=="));
    BOOST_CHECK(!ws_key_valid(""));
}
