// protocol_test.cpp (echo_protocol_test) — the echo server's control-line parser: PING/PONG/BYE need one space and an
// argument; anything else, binary bytes included, is data. And the size of its TCP session object.
#define BOOST_TEST_MODULE echo_protocol
#include <boost/test/unit_test.hpp>

#include "echo/protocol.hpp"
#include "echo/session.hpp"
#include "echo/worker.hpp"

#include <string>

BOOST_AUTO_TEST_CASE(control_lines_need_one_space_and_an_argument) {
    using echo::line_kind;
    using echo::parse_line;
    BOOST_TEST((parse_line("PING 7").kind == line_kind::ping));
    BOOST_TEST(parse_line("PING 7").arg == "7");
    BOOST_TEST(parse_line("PONG a b").arg == "a b");
    BOOST_TEST((parse_line("BYE idle").kind == line_kind::bye));
    for (const char* data : {"PING", "PING ", "PINGX 1", "ping 1", " PING 1", "PON 1", "BYE", "BYE "})
        BOOST_TEST((parse_line(data).kind == line_kind::data), data);
}

BOOST_AUTO_TEST_CASE(binary_bytes_are_data) {
    BOOST_TEST((echo::parse_line(std::string("a\0b\xff\xfe", 5)).kind == echo::line_kind::data));
    BOOST_TEST((echo::parse_line(std::string("PING \0", 6)).kind == echo::line_kind::ping));
}

// Every idle TCP connection holds one session, inside its connection's heap block
// (net::make_connection_with): no member for a TLS handshake's place, a 32-bit ping count and
// held-bytes count, its connection by reference, and its place among its source's connections
// (net::source_share::member, three pointers: --source-share is on by default).
BOOST_AUTO_TEST_CASE(a_tcp_session_is_small) {
    // 112 bytes: 24 of them its source-share links (a heap block of 64 of its own while they were
    // allocated on demand); its line framer keeps its bytes in an array of its own with 32-bit sizes (40 bytes,
    // 56 with a std::string), its one vtable pointer is the connection handler's, its flag shares a
    // word; in its connection's block it needs no enable_shared_from_this and no shared_ptr to its
    // connection (120 bytes, a heap block of 144 of its own, with them; 136 took 160, 152 took 176).
    BOOST_TEST(sizeof(echo::session<echo::core_socket, heartwheel::net::connection_liveness>) <= 112u);
}
