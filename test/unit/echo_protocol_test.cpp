// echo_protocol_test.cpp — the echo server's line framer and control-line parser, byte by byte.
#define BOOST_TEST_MODULE echo_protocol
#include <boost/test/unit_test.hpp>

#include "echo/line_framer.hpp"
#include "echo/protocol.hpp"

#include <cstring>
#include <string>
#include <vector>

namespace {

using echo::line_framer;

struct framed {
    std::vector<std::string> lines;
    bool too_long = false;
};

// Feeds `input` in pieces of `piece` bytes and collects what the framer returns.
framed feed(std::string_view input, std::size_t max_line, std::size_t piece) {
    line_framer f(max_line);
    framed out;
    std::string_view line;
    for (std::size_t at = 0; at < input.size() && !out.too_long; at += piece) {
        const auto chunk = input.substr(at, piece);
        auto space = f.prepare();
        BOOST_REQUIRE_GE(space.size(), chunk.size());
        std::memcpy(space.data(), chunk.data(), chunk.size());
        f.commit(chunk.size());
        for (;;) {
            const auto s = f.next(line);
            if (s == line_framer::status::need_more) break;
            if (s == line_framer::status::too_long) {
                out.too_long = true;
                break;
            }
            out.lines.emplace_back(line);
        }
    }
    return out;
}

} // namespace

BOOST_AUTO_TEST_CASE(lines_are_the_same_however_the_bytes_arrive) {
    const std::string input = "hello\nPING 1\n\n\r\nlast without newline";
    const std::vector<std::string> expected{"hello", "PING 1", "", "\r"};
    for (std::size_t piece : {1u, 2u, 3u, 7u, 1000u}) {
        const framed got = feed(input, 64, piece);
        BOOST_TEST(got.lines == expected, "piece " << piece);
        BOOST_TEST(!got.too_long);
    }
}

BOOST_AUTO_TEST_CASE(a_line_of_exactly_max_line_bytes_passes_one_more_is_too_long) {
    const std::string ok(8, 'x'), bad(9, 'y');
    for (std::size_t piece : {1u, 4u, 100u}) {
        BOOST_TEST(feed(ok + "\nz\n", 8, piece).lines == (std::vector<std::string>{ok, "z"}));
        const framed got = feed("a\n" + bad + "\n", 8, piece);
        BOOST_TEST(got.too_long);
        BOOST_TEST(got.lines == std::vector<std::string>{"a"});
    }
}

BOOST_AUTO_TEST_CASE(too_long_is_reported_before_the_newline_arrives) {
    line_framer f(4);
    std::string_view line;
    auto space = f.prepare();
    std::memcpy(space.data(), "abcd", 4);
    f.commit(4);
    BOOST_TEST((f.next(line) == line_framer::status::need_more));
    space = f.prepare();
    space[0] = 'e';
    f.commit(1);
    BOOST_TEST((f.next(line) == line_framer::status::too_long));
}

BOOST_AUTO_TEST_CASE(buffered_bytes_stay_bounded) {
    line_framer f(100);
    std::string_view line;
    for (int i = 0; i < 1000; ++i) {
        auto space = f.prepare();
        std::memset(space.data(), 'q', 10);
        space[9] = '\n';
        f.commit(10);
        BOOST_TEST((f.next(line) == line_framer::status::line));
        BOOST_TEST(line == "qqqqqqqqq");
        BOOST_TEST((f.next(line) == line_framer::status::need_more));
        BOOST_TEST(f.buffered() == 0u);
    }
}

BOOST_AUTO_TEST_CASE(binary_bytes_and_nul_are_data) {
    const std::string input("a\0b\xff\xfe\n", 6);
    const framed got = feed(input, 64, 2);
    BOOST_REQUIRE_EQUAL(got.lines.size(), 1u);
    BOOST_TEST(got.lines[0] == std::string("a\0b\xff\xfe", 5));
    BOOST_TEST((echo::parse_line(got.lines[0]).kind == echo::line_kind::data));
}

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
