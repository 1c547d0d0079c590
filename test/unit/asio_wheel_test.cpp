// asio_wheel_test.cpp — the driver on a real io_context: ordering, arming only when needed, no
// wake-ups while idle, completion tokens (callback, future, awaitable), per-operation cancellation,
// cross-thread scheduling, shutdown. Durations are only checked against generous bounds.
#define BOOST_TEST_MODULE asio_wheel
#include <boost/test/unit_test.hpp>

#include <heartwheel/asio_wheel.hpp>
#include <heartwheel/error.hpp>

#include "test_asio.hpp"

#include <future>
#include <optional>
#include <thread>
#include <variant>

using namespace std::chrono_literals;
using heartwheel::asio_wheel;

namespace {
// Runs the context for at most `limit`, so a broken test fails instead of hanging.
void run_bounded(asio::io_context& io, std::chrono::seconds limit = std::chrono::seconds(10)) {
    io.run_for(limit);
    BOOST_TEST_REQUIRE(io.stopped(), "io_context still had work after the time limit");
}
} // namespace

BOOST_AUTO_TEST_CASE(handles_fire_in_order_never_early) {
    asio::io_context io;
    asio_wheel w(io.get_executor());
    std::vector<int> order;
    const auto start = heartwheel::clock::now();
    std::vector<heartwheel::duration> late;
    auto mk = [&](int id, auto delay) {
        return w.schedule_after(delay, [&, id, delay] {
            order.push_back(id);
            late.push_back(heartwheel::clock::now() - start - delay);
        });
    };
    auto a = mk(3, 30ms), b = mk(1, 10ms), c = mk(2, 20ms);
    run_bounded(io);
    BOOST_TEST(order == (std::vector<int>{1, 2, 3}));
    for (auto l : late) BOOST_TEST(l >= heartwheel::duration::zero());
    BOOST_TEST(w.size() == 0u);
}

// An exact timer wakes the driver at its own deadline, inside the tick, not at the tick's end: with a
// 1 s tick, one due 50 ms after the wheel's start fires after those 50 ms and well before the tick
// ends (the margin is most of a second, for loaded and sanitized runs).
BOOST_AUTO_TEST_CASE(an_exact_timer_wakes_the_driver_inside_its_tick) {
    asio::io_context io;
    asio_wheel w(io.get_executor(), {.tick = 1s});
    heartwheel::timer_handle h([] {});
    std::optional<heartwheel::time_point> fired_at;
    heartwheel::timer_handle probe([&] { fired_at = heartwheel::clock::now(); });
    const auto deadline = w.wheel().start() + 50ms;
    w.schedule_exact(probe.node(), deadline);
    w.schedule_at(h.node(), w.wheel().start() + 3s); // an ordinary timer further on keeps the wheel busy
    BOOST_TEST((w.wheel().next_wakeup() == deadline));
    while (!fired_at && io.run_one_for(2s) > 0) {}
    BOOST_TEST_REQUIRE(fired_at.has_value());
    BOOST_TEST((*fired_at >= deadline));
    BOOST_TEST((*fired_at < w.wheel().start() + 1s));
    BOOST_TEST(w.stats().wakeups == 1u);
    BOOST_TEST(h.node().pending());
}

BOOST_AUTO_TEST_CASE(arms_only_for_earlier_timers_and_not_when_empty) {
    asio::io_context io;
    asio_wheel w(io.get_executor());
    int fired = 0;
    auto a = w.schedule_after(50ms, [&] { ++fired; });
    BOOST_TEST(w.stats().rearms == 1u);
    auto b = w.schedule_after(80ms, [&] { ++fired; }); // later: no re-arm
    BOOST_TEST(w.stats().rearms == 1u);
    auto c = w.schedule_after(5ms, [&] { ++fired; }); // earlier: re-arm
    BOOST_TEST(w.stats().rearms == 2u);
    a.cancel();
    b.cancel();
    c.cancel(); // empty: the steady_timer is cancelled, io_context runs out of work at once
    const auto t = heartwheel::clock::now();
    run_bounded(io);
    BOOST_TEST(fired == 0);
    BOOST_TEST(w.stats().wakeups == 0u);
    BOOST_TEST((heartwheel::clock::now() - t) < 5s);
}

BOOST_AUTO_TEST_CASE(async_wait_with_callback_future_and_cancellation) {
    asio::io_context io;
    asio_wheel w(io.get_executor());
    error_code got = asio::error::would_block;
    w.async_wait(5ms, [&](error_code ec) { got = ec; });
    auto fut = w.async_wait(1ms, asio::use_future);
    run_bounded(io);
    BOOST_TEST(!got);
    BOOST_CHECK_NO_THROW(fut.get()); // a future<void>: an error would throw
}

#if HWTEST_CO_AWAIT // (test_asio.hpp)
BOOST_AUTO_TEST_CASE(co_await_read_or_wheel_wait) {
    asio::io_context io;
    asio_wheel w(io.get_executor());
    using namespace asio::experimental::awaitable_operators;
    asio::ip::tcp::acceptor acc(io, {asio::ip::make_address("127.0.0.1"), 0});
    asio::ip::tcp::socket client(io), server(io);
    client.connect(acc.local_endpoint());
    acc.accept(server);
    int outcome = -1;
    std::size_t pending_after = 99;
    asio::co_spawn(io, [&]() -> asio::awaitable<void> {
        char buf[16];
        // The peer never writes: the wheel wait wins, and the read is cancelled.
        auto r = co_await (server.async_read_some(asio::buffer(buf), asio::use_awaitable) ||
                           w.async_wait(20ms, asio::use_awaitable));
        outcome = static_cast<int>(r.index());
        // Now data arrives first: the wheel wait is cancelled through its slot and unlinked.
        co_await asio::async_write(client, asio::buffer("x", 1), asio::use_awaitable);
        auto r2 = co_await (server.async_read_some(asio::buffer(buf), asio::use_awaitable) ||
                            w.async_wait(10s, asio::use_awaitable));
        if (r2.index() != 0) outcome = 100;
        pending_after = w.size();
    }, asio::detached);
    run_bounded(io);
    BOOST_TEST(outcome == 1);
    BOOST_TEST(pending_after == 0u);
}

#endif

BOOST_AUTO_TEST_CASE(cross_thread_async_wait_and_post) {
    asio::io_context io;
    asio_wheel w(io.get_executor());
    auto guard = asio::make_work_guard(io);
    std::thread runner([&] { io.run(); });
    std::promise<error_code> done;
    w.async_wait(2ms, [&](error_code ec) { done.set_value(ec); }); // from this thread
    auto fut = done.get_future();
    BOOST_TEST((fut.wait_for(10s) == std::future_status::ready));
    BOOST_TEST(!fut.get());
    std::promise<std::size_t> size;
    w.post([&](asio_wheel& self) { size.set_value(self.size()); });
    auto sf = size.get_future();
    BOOST_TEST((sf.wait_for(10s) == std::future_status::ready));
    BOOST_TEST(sf.get() == 0u);
    guard.reset();
    runner.join();
}

BOOST_AUTO_TEST_CASE(periodic_and_self_rearm_do_not_busy_loop) {
    asio::io_context io;
    asio_wheel w(io.get_executor());
    int ticks = 0;
    heartwheel::timer_handle h;
    h = w.schedule_every(2ms, [&] {
        if (++ticks == 5) h.cancel();
    });
    run_bounded(io);
    BOOST_TEST(ticks == 5);
    BOOST_TEST(w.stats().advances >= 5u); // a late wake-up catches up through posted advances
    BOOST_TEST(w.stats().wakeups < 100u);
}

BOOST_AUTO_TEST_CASE(shutdown_completes_waits_with_wheel_stopped) {
    asio::io_context io;
    asio_wheel w(io.get_executor());
    error_code got;
    int fired = 0;
    w.async_wait(1h, [&](error_code ec) { got = ec; });
    auto h = w.schedule_after(1h, [&] { ++fired; });
    io.poll(); // let the wait start
    auto rest = w.shutdown();
    BOOST_TEST(rest.size() == 1u);
    run_bounded(io);
    BOOST_TEST((got == heartwheel::errc::wheel_stopped));
    BOOST_TEST(fired == 0);
    BOOST_TEST(h.cancelled());
}

// duration::max() as a delay means "never" (it once overflowed to a past deadline and completed at
// once); time_point::min() as a deadline means "now".
BOOST_AUTO_TEST_CASE(extreme_delays_saturate) {
    asio::io_context io;
    asio_wheel wheel(io.get_executor());
    bool never_fired = false, handle_fired = false, past_fired = false;
    error_code never_ec;
    wheel.async_wait(heartwheel::duration::max(), [&](error_code ec) {
        never_fired = true;
        never_ec = ec;
    });
    auto h = wheel.schedule_after(heartwheel::duration::max(), [&] { handle_fired = true; });
    wheel.async_wait_until(heartwheel::time_point::min(), [&](error_code ec) { past_fired = !ec; });
    io.run_for(50ms);
    BOOST_TEST(past_fired);
    BOOST_TEST(!never_fired);
    BOOST_TEST(!handle_fired);
    BOOST_TEST(h.pending());
    BOOST_TEST(wheel.size() == 2u);
    wheel.shutdown(); // the pending wait completes, with wheel_stopped
    io.restart();
    io.run_for(1s);
    BOOST_TEST(never_fired);
    BOOST_TEST((never_ec == heartwheel::errc::wheel_stopped));
    BOOST_TEST(!handle_fired);
}

BOOST_AUTO_TEST_CASE(activity_clock_bounds_real_time) {
    asio::io_context io;
    asio_wheel w(io.get_executor());
    heartwheel::time_point s1, real_before, real_after, bound_open;
    asio::post(io, [&] {
        real_before = heartwheel::clock::now();
        s1 = w.activity().stamp();
        std::this_thread::sleep_for(2ms); // a long handler: stamps later in this batch are stale
        BOOST_TEST((w.activity().stamp() == s1));
        real_after = heartwheel::clock::now();
        bound_open = w.activity().latest_possible(s1);
    });
    run_bounded(io);
    BOOST_TEST((s1 >= real_before));
    BOOST_TEST((bound_open >= real_after));
    // Closed batch: the bound covers the whole batch.
    BOOST_TEST((w.activity().latest_possible(s1) >= real_after));
    BOOST_TEST((w.activity().max_span() >= 2ms));
}

// One long batch (a burst of 2,000 connects, say) bounds only the stamps taken before it ended: a
// later stamp's bound is its own batch's, not the longest ever (it used to be, for the process's
// life, and every later heartbeat ran that much late).
BOOST_AUTO_TEST_CASE(a_past_burst_does_not_delay_later_stamps) {
    asio::io_context io;
    asio_wheel w(io.get_executor());
    heartwheel::time_point burst, burst_end, later, later_end;
    asio::post(io, [&] {
        burst = w.activity().stamp();
        std::this_thread::sleep_for(30ms); // the burst's batch
        burst_end = heartwheel::clock::now();
    });
    run_bounded(io);
    for (int i = 0; i < 5; ++i) { // quick batches after it
        asio::post(io, [&] {
            later = w.activity().stamp();
            later_end = heartwheel::clock::now();
        });
        io.restart();
        run_bounded(io);
    }
    auto& a = w.activity();
    BOOST_TEST((a.max_span() >= 30ms));
    BOOST_TEST((a.latest_possible(burst) >= burst_end)); // never early, for the old stamp too
    BOOST_TEST((a.latest_possible(later) >= later_end));
    BOOST_TEST((a.latest_possible(later) - later < 30ms)); // not the burst's span
    const auto exact = heartwheel::clock::now();           // a time no batch opened after
    BOOST_TEST((a.latest_possible(exact) == exact));
}
