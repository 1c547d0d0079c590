// drain_test.cpp — net::async_drain: its schedule as a plain function (drain_due, drain_reserve), and
// a drain of in-memory connections on a real io_context: every connection asked in time to say
// goodbye before the window's end (none left to be closed `shutdown`), newcomers included.
#include <boost/test/unit_test.hpp>

#include <heartwheel/net/connection/connection.hpp>
#include <heartwheel/net/server/drain.hpp>
#include <heartwheel/testing/manual_scheduler.hpp>
#include <heartwheel/testing/memory_stream.hpp>

#include "test_asio.hpp"

#include <array>
#include <chrono>
#include <memory>
#include <optional>
#include <vector>

using namespace std::chrono_literals;
namespace net = heartwheel::net;
using heartwheel::testing::make_memory_pair;
using heartwheel::testing::manual_scheduler;
using heartwheel::testing::memory_stream;
using net::detail::drain_due;
using net::detail::drain_reserve;

namespace {

using memory_connection = net::connection<memory_stream>;

// A session over memory: the connection lives while its read is pending; its peer reads until the
// end of stream and then closes its end, as a client told goodbye does.
struct drained_population {
    asio::io_context io;
    manual_scheduler clock; // the connections' liveness; the drain runs on the io_context's clock
    net::liveness_counters counters;
    std::vector<std::shared_ptr<memory_stream>> peers;
    std::vector<std::chrono::steady_clock::time_point> closed_at;

    void add() {
        auto [ours, theirs] = make_memory_pair(io.get_executor());
        auto c = std::make_shared<memory_connection>(std::move(ours), net::connection_context(clock, net::liveness_config{}, &counters));
        net::connection_hooks hooks;
        hooks.on_close = [this](net::close_reason) { closed_at.push_back(std::chrono::steady_clock::now()); };
        c->set_hooks(std::move(hooks));
        read(c);
        auto peer = std::make_shared<memory_stream>(std::move(theirs));
        peers.push_back(peer);
        peer_reads(peer);
    }
    static void read(std::shared_ptr<memory_connection> c) {
        auto buf = std::make_shared<std::array<char, 64>>();
        c->stream().async_read_some(asio::buffer(*buf), [c, buf](error_code ec, std::size_t) {
            if (ec) return c->read_failed(ec);
            read(c);
        });
    }
    static void peer_reads(std::shared_ptr<memory_stream> p) {
        auto buf = std::make_shared<std::array<char, 64>>();
        p->async_read_some(asio::buffer(*buf), [p, buf](error_code ec, std::size_t) {
            if (!ec) return peer_reads(p);
            error_code ignored;
            p->close(ignored);
        });
    }
    std::uint64_t closes(net::close_reason r) const { return counters.snapshot().closes[static_cast<std::size_t>(r)]; }
    std::uint64_t drained() const { return closes(net::draining_reason()); }
};

} // namespace

BOOST_AUTO_TEST_SUITE(drain)

// The asks are spread over the window less its reserve, rounded up, all of them once it has passed;
// a newcomer is due at once.
BOOST_AUTO_TEST_CASE(the_schedule_spreads_the_asks_and_keeps_a_reserve) {
    BOOST_TEST(drain_reserve(1000ms, 10ms).count() == 100);  // a tenth
    BOOST_TEST(drain_reserve(30000ms, 10ms).count() == 1000); // at most a second
    BOOST_TEST(drain_reserve(50ms, 10ms).count() == 10);      // at least a step
    BOOST_TEST(drain_reserve(5ms, 10ms).count() == 5);        // never more than the window
    const auto spread = 900ms;
    BOOST_TEST(drain_due(100, 0, 0ms, spread) == 0u);
    BOOST_TEST(drain_due(100, 0, 9ms, spread) == 1u);  // 1.0 exactly
    BOOST_TEST(drain_due(100, 0, 10ms, spread) == 2u); // 1.1: rounded up
    BOOST_TEST(drain_due(100, 0, 450ms, spread) == 50u);
    BOOST_TEST(drain_due(100, 0, 899ms, spread) == 100u); // 99.9: rounded up, all asked before the spread ends
    BOOST_TEST(drain_due(100, 0, 900ms, spread) == 100u);
    BOOST_TEST(drain_due(100, 0, 5000ms, spread) == 100u);
    BOOST_TEST(drain_due(100, 3, 0ms, spread) == 3u); // arrived during the drain: due at once
    BOOST_TEST(drain_due(100, 3, 450ms, spread) == 53u);
    BOOST_TEST(drain_due(0, 0, 10ms, spread) == 0u);
    BOOST_TEST(drain_due(7, 0, 10ms, 0ms) == 7u); // no spread: all at once
    // a million over an hour, a microsecond in: no overflow, one asked
    BOOST_TEST(drain_due(1'000'000, 0, std::chrono::microseconds(1), std::chrono::hours(1)) == 1u);
}

// 200 connections drained over 200 ms in 10 ms steps: each is asked early enough to leave before the
// window's end (the drain completes with none remaining, none is closed `shutdown`), and not all at
// once. Asked at the end itself, the last few would still be saying goodbye when the server closes
// what remains.
BOOST_FIXTURE_TEST_CASE(every_connection_leaves_within_the_window, drained_population) {
    for (int i = 0; i < 200; ++i) add();
    std::optional<std::size_t> remaining;
    const auto start = std::chrono::steady_clock::now();
    net::async_drain(io.get_executor(), 200ms, [&](error_code, std::size_t n) { remaining = n; });
    io.run_for(5s);
    BOOST_REQUIRE(remaining.has_value());
    BOOST_TEST(*remaining == 0u);
    BOOST_TEST(drained() == 200u);
    BOOST_TEST(counters.snapshot().closes_total() == 200u);
    BOOST_REQUIRE(closed_at.size() == 200u);
    // spread: the first close well before the last (a run that stalls the whole window asks all at once)
    BOOST_TEST((closed_at.front() - start < 100ms));
    BOOST_TEST((closed_at.back() - closed_at.front() > 50ms));
}

// A connection that arrives during a drain (accepted just before the listener closed) is asked at
// the next step, not at the window's end.
BOOST_FIXTURE_TEST_CASE(a_connection_that_arrives_during_a_drain_is_asked_too, drained_population) {
    for (int i = 0; i < 10; ++i) add();
    std::optional<std::size_t> remaining;
    net::async_drain(io.get_executor(), 300ms, [&](error_code, std::size_t n) { remaining = n; });
    asio::steady_timer later(io, 100ms);
    later.async_wait([&](error_code) { add(); });
    io.run_for(5s);
    BOOST_REQUIRE(remaining.has_value());
    BOOST_TEST(*remaining == 0u);
    BOOST_TEST(drained() == 11u);
}

// A server's stop: close_connections closes every connection of the context, those a drain asked
// and those it did not, each once with the reason given; connections_of counts them until they are
// gone — the server keeps no set of its own.
BOOST_FIXTURE_TEST_CASE(close_connections_closes_every_one_once, drained_population) {
    for (int i = 0; i < 6; ++i) add();
    BOOST_TEST(net::connections_of(io.get_executor()) == 6u);
    // two asked by a drain that is then cut short: asked ones are closed as well
    for (auto& [keep, e] : net::detail::teardown_registry::of(io.get_executor()).take_unasked(2)) (void)keep, (void)e;
    BOOST_TEST(net::close_connections(io.get_executor(), net::close_reason::shutdown) == 6u);
    BOOST_TEST(counters.snapshot().closes_total() == 0u); // posted: each on its own executor
    io.run_for(500ms);
    BOOST_TEST(closes(net::close_reason::shutdown) == 6u);
    BOOST_TEST(counters.snapshot().closes_total() == 6u);
    BOOST_TEST(net::connections_of(io.get_executor()) == 0u);
    BOOST_TEST(net::close_connections(io.get_executor(), net::close_reason::shutdown) == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
