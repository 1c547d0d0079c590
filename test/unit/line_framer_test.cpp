// line_framer_test.cpp — net::line_framer byte by byte: the same lines however the bytes arrive, the
// max_line bound, memory only while a partial line or stashed bytes are held.
#define BOOST_TEST_MODULE line_framer
#include <boost/test/unit_test.hpp>

#include <heartwheel/net/connection/line_framer.hpp>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace {

using heartwheel::net::line_framer;

struct framed {
    std::vector<std::string> lines;
    bool too_long = false;
};

// Feeds `input` in pieces of `piece` bytes, each from a scratch buffer that is overwritten after
// use (as the thread's read chunk is), and collects what the framer returns; with `stash_every`,
// the reader stops after that many lines of a piece and stashes the rest (backpressure).
framed feed(std::string_view input, std::size_t max_line, std::size_t piece, std::size_t stash_every = 0) {
    line_framer f(max_line);
    framed out;
    std::string_view line;
    std::string scratch;
    for (std::size_t at = 0; at < input.size() && !out.too_long; at += piece) {
        scratch.assign(input.substr(at, piece));
        f.feed(scratch);
        for (std::size_t taken = 0;; ++taken) {
            if (stash_every != 0 && taken == stash_every) {
                f.stash();
                break;
            }
            const auto s = f.next(line);
            if (s == line_framer::status::need_more) break;
            if (s == line_framer::status::too_long) {
                out.too_long = true;
                break;
            }
            out.lines.emplace_back(line);
        }
        std::fill(scratch.begin(), scratch.end(), '#'); // the chunk goes back to the pool
    }
    for (;;) { // what was stashed
        const auto s = out.too_long ? line_framer::status::need_more : f.next(line);
        if (s == line_framer::status::need_more) break;
        if (s == line_framer::status::too_long) {
            out.too_long = true;
            break;
        }
        out.lines.emplace_back(line);
    }
    return out;
}

} // namespace

BOOST_AUTO_TEST_CASE(lines_are_the_same_however_the_bytes_arrive) {
    const std::string input = "hello\nPING 1\n\n\r\nlast without newline";
    const std::vector<std::string> expected{"hello", "PING 1", "", "\r"};
    for (std::size_t piece : {1u, 2u, 3u, 7u, 1000u}) {
        for (std::size_t stash : {0u, 1u, 2u}) {
            const framed got = feed(input, 64, piece, stash);
            BOOST_TEST(got.lines == expected, "piece " << piece << " stash " << stash);
            BOOST_TEST(!got.too_long);
        }
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
    f.feed({"abcd", 4});
    BOOST_TEST((f.next(line) == line_framer::status::need_more));
    f.feed({"e", 1});
    BOOST_TEST((f.next(line) == line_framer::status::too_long));
}

BOOST_AUTO_TEST_CASE(whole_lines_hold_no_memory_and_a_partial_line_is_released_once_handed_out) {
    line_framer f(100);
    std::string_view line;
    for (int i = 0; i < 1000; ++i) {
        f.feed({"qqqqqqqqq\n", 10});
        BOOST_TEST((f.next(line) == line_framer::status::line));
        BOOST_TEST(line == "qqqqqqqqq");
        BOOST_TEST((f.next(line) == line_framer::status::need_more));
        BOOST_TEST(f.buffered() == 0u);
        BOOST_TEST(f.memory() == 0u); // returned in place: never copied
    }
    const std::string head(40, 'h'); // a partial line is kept on the heap...
    f.feed({head.data(), head.size()});
    BOOST_TEST((f.next(line) == line_framer::status::need_more));
    BOOST_TEST(f.buffered() == 40u);
    BOOST_TEST(f.memory() >= 40u);
    f.feed({"t\n", 2});
    BOOST_TEST((f.next(line) == line_framer::status::line));
    BOOST_TEST(line == head + "t");
    BOOST_TEST((f.next(line) == line_framer::status::need_more));
    BOOST_TEST(f.memory() == 0u); // ...and released once the line is complete and handed out
}

BOOST_AUTO_TEST_CASE(stashed_lines_survive_the_chunk_and_come_out_first) {
    line_framer f(100);
    std::string_view line;
    std::string chunk = "one\ntwo\nthr";
    f.feed({chunk.data(), chunk.size()});
    BOOST_TEST((f.next(line) == line_framer::status::line));
    BOOST_TEST(line == "one");
    f.stash();
    std::fill(chunk.begin(), chunk.end(), '#');
    BOOST_TEST(f.buffered() == 7u);
    BOOST_TEST((f.next(line) == line_framer::status::line));
    BOOST_TEST(line == "two");
    BOOST_TEST((f.next(line) == line_framer::status::need_more));
    f.feed({"ee\nfour\n", 8});
    BOOST_TEST((f.next(line) == line_framer::status::line));
    BOOST_TEST(line == "three");
    BOOST_TEST((f.next(line) == line_framer::status::line));
    BOOST_TEST(line == "four");
    BOOST_TEST((f.next(line) == line_framer::status::need_more));
    BOOST_TEST(f.memory() == 0u);
}

BOOST_AUTO_TEST_CASE(binary_bytes_and_nul_are_data) {
    const std::string input("a\0b\xff\xfe\n", 6);
    const framed got = feed(input, 64, 2);
    BOOST_REQUIRE_EQUAL(got.lines.size(), 1u);
    BOOST_TEST(got.lines[0] == std::string("a\0b\xff\xfe", 5));
}

// Every idle connection of a line protocol holds a framer: its sizes are 32-bit and what it keeps is
// a heap array of its own (40 bytes, where a std::string took 56, and size_t sizes and a string_view
// 72). So a feed is at most 2 GiB - 1 bytes (a clear error
// above, before anything is kept), and a max_line above that is taken as that.
BOOST_AUTO_TEST_CASE(a_framer_is_small_and_its_limits_are_clear) {
    BOOST_TEST(sizeof(line_framer) <= 40u);
    line_framer f(line_framer::max_size);
    static const char bytes[] = "x";
    // Never read: feed refuses the size before it keeps the view.
    BOOST_CHECK_THROW(f.feed(std::string_view(bytes, line_framer::max_size + 1)), std::length_error);
    BOOST_TEST(f.buffered() == 0u);

    line_framer unbounded(static_cast<std::size_t>(-1)); // taken as max_size: lines pass as before
    std::string_view line;
    unbounded.feed("abc\ndef");
    BOOST_TEST((unbounded.next(line) == line_framer::status::line));
    BOOST_TEST(line == "abc");
    BOOST_TEST((unbounded.next(line) == line_framer::status::need_more));
    unbounded.feed("g\n");
    BOOST_TEST((unbounded.next(line) == line_framer::status::line));
    BOOST_TEST(line == "defg");
}
