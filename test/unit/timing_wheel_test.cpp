// timing_wheel_test.cpp — behaviour of the plain wheel, driven by hand: firing ticks, cancel,
// reschedule, touch, zero delays, stop, caps, and what callbacks may do.
#define BOOST_TEST_MODULE timing_wheel
#include <boost/test/unit_test.hpp>

#include <heartwheel/error.hpp>
#include <heartwheel/timer_handle.hpp>
#include <heartwheel/timing_wheel.hpp>

#include "test_timers.hpp"

#include <memory>

using namespace hwtest;
using heartwheel::timing_wheel;

BOOST_AUTO_TEST_CASE(fires_at_its_tick_never_before) {
    timing_wheel w(t0);
    std::vector<int> log;
    recording_timer a(log, 1);
    w.schedule(a, t0 + 10ms);
    BOOST_TEST(w.size() == 1u);
    BOOST_TEST(w.advance(t0 + 9ms) == 0u);
    BOOST_TEST(w.advance(t0 + 9ms + 999us) == 0u);
    BOOST_TEST(log.empty());
    BOOST_TEST(w.advance(t0 + 10ms) == 1u);
    BOOST_TEST(log == std::vector<int>{1});
    BOOST_TEST(a.expired());
    BOOST_TEST(w.empty());
    w.check_invariants();
}

BOOST_AUTO_TEST_CASE(sub_tick_deadline_rounds_up) {
    timing_wheel w(t0);
    std::vector<int> log;
    recording_timer a(log, 1);
    w.schedule(a, t0 + 10ms + 1ns); // must not fire at 10 ms
    w.advance(t0 + 10ms + 500us);
    BOOST_TEST(log.empty());
    w.advance(t0 + 11ms);
    BOOST_TEST(log.size() == 1u);
}

BOOST_AUTO_TEST_CASE(fires_in_deadline_order_after_a_jump) {
    timing_wheel w(t0);
    std::vector<int> log;
    std::vector<std::unique_ptr<recording_timer>> ts;
    const int delays_ms[] = {500, 3, 70, 4096, 64, 65, 1, 262144, 4097};
    for (int i = 0; i < 9; ++i) {
        ts.push_back(std::make_unique<recording_timer>(log, delays_ms[i]));
        w.schedule(*ts.back(), t0 + std::chrono::milliseconds(delays_ms[i]));
    }
    w.check_invariants();
    BOOST_TEST(w.advance(t0 + 1h) == 9u);
    BOOST_TEST(log == (std::vector<int>{1, 3, 64, 65, 70, 500, 4096, 4097, 262144}));
    w.check_invariants();
}

BOOST_AUTO_TEST_CASE(cancel_prevents_firing) {
    timing_wheel w(t0);
    std::vector<int> log;
    recording_timer a(log, 1), b(log, 2);
    w.schedule(a, t0 + 5ms);
    w.schedule(b, t0 + 5ms);
    BOOST_TEST(w.cancel(a));
    BOOST_TEST(!w.cancel(a));
    BOOST_TEST(a.cancelled());
    BOOST_TEST(w.size() == 1u);
    w.advance(t0 + 1s);
    BOOST_TEST(log == std::vector<int>{2});
    BOOST_TEST(!w.cancel(b)); // already fired
}

BOOST_AUTO_TEST_CASE(reschedule_earlier_and_later) {
    timing_wheel w(t0);
    std::vector<int> log;
    recording_timer a(log, 1);
    w.schedule(a, t0 + 100ms);
    w.schedule(a, t0 + 20ms); // earlier
    BOOST_TEST(w.size() == 1u);
    w.advance(t0 + 20ms);
    BOOST_TEST(log.size() == 1u);
    w.schedule(a, t0 + 30ms);
    w.schedule(a, t0 + 5000ms); // later
    w.advance(t0 + 4999ms);
    BOOST_TEST(log.size() == 1u);
    w.advance(t0 + 5000ms);
    BOOST_TEST(log.size() == 2u);
}

BOOST_AUTO_TEST_CASE(touch_later_is_lazy_and_exact) {
    timing_wheel w(t0);
    std::vector<int> log;
    recording_timer a(log, 1);
    w.schedule(a, t0 + 10ms);
    w.touch(a, t0 + 25ms);
    BOOST_TEST((w.deadline(a) == t0 + 25ms));
    BOOST_TEST((w.remaining(a, t0) == 25ms));
    // Still filed at its old slot: the wheel wakes at 10 ms, re-files, fires at 25 ms.
    BOOST_TEST((*w.next_wakeup() == t0 + 10ms));
    BOOST_TEST(w.advance(t0 + 10ms) == 0u);
    BOOST_TEST(a.pending());
    BOOST_TEST((*w.next_wakeup() == t0 + 25ms));
    BOOST_TEST(w.advance(t0 + 24ms) == 0u);
    BOOST_TEST(w.advance(t0 + 25ms) == 1u);
    w.check_invariants();
}

// Level 0 is 512 ticks wide so that level 1 reaches 32.7 s at a 1 ms tick: the timeouts of a
// connection server (seconds to tens of seconds) pass through one cascade on their way to firing,
// not two. A 30 s timer is filed in a level-1 slot (of 512 ticks), moves to level 0 when that slot
// comes due, and fires at its tick.
BOOST_AUTO_TEST_CASE(a_timeout_of_thirty_seconds_cascades_once) {
    timing_wheel w(t0);
    std::vector<int> log;
    recording_timer a(log, 1);
    w.schedule(a, t0 + 30s);
    BOOST_TEST(w.filed_wakeup_tick(a) == 58u * 512u); // level 1's slot 58: ticks 29,696..30,207
    BOOST_TEST(w.advance(t0 + 29696ms) == 0u);
    BOOST_TEST(w.filed_wakeup_tick(a) == 30000u); // level 0, its own tick
    w.check_invariants();
    BOOST_TEST(w.advance(t0 + 30s - 1ms) == 0u);
    BOOST_TEST(w.advance(t0 + 30s) == 1u);
}

// A level-1 slot's timers go to level 0 by their low digit, except one touched past the slot: it is
// re-filed by its whole deadline (filed at level 0 by its low digit, it would break the invariants and
// cost a visit per lap).
BOOST_AUTO_TEST_CASE(touch_past_a_level_one_slot_refiles_by_the_whole_deadline) {
    timing_wheel w(t0);
    std::vector<int> log;
    recording_timer a(log, 1), b(log, 2);
    w.schedule(a, t0 + 600ms); // level 1, the slot of ticks 512..1023
    w.schedule(b, t0 + 601ms);
    w.touch(a, t0 + 1200ms);
    BOOST_TEST(w.advance(t0 + 512ms) == 0u); // the slot cascades: b to level 0, a to its own slot
    w.check_invariants();
    BOOST_TEST((*w.next_wakeup() == t0 + 601ms));
    BOOST_TEST(w.filed_wakeup_tick(a) == 1024u);
    BOOST_TEST(w.advance(t0 + 1199ms) == 1u);
    BOOST_TEST(log == std::vector<int>{2});
    w.check_invariants();
    BOOST_TEST(w.advance(t0 + 1200ms) == 1u);
    BOOST_TEST(log == (std::vector<int>{2, 1}));
}

// A re-arm within a slot only stores the deadline, unless the new deadline is the slot's start: that
// one moves to the start store and fires before the slot cascades.
BOOST_AUTO_TEST_CASE(rearm_to_a_slot_start_moves_to_the_start_store) {
    timing_wheel w(t0);
    std::vector<int> log;
    recording_timer a(log, 1), b(log, 2);
    w.schedule(a, t0 + 600ms); // level 1, the slot of ticks 512..1023
    w.schedule(b, t0 + 590ms);
    w.schedule(a, t0 + 520ms);  // the same slot: stays
    w.check_invariants();
    w.schedule(a, t0 + 512ms);  // the slot's start
    w.check_invariants();
    BOOST_TEST(w.advance(t0 + 512ms) == 1u);
    BOOST_TEST(log == std::vector<int>{1});
    w.schedule(b, t0 + 1100ms); // another slot (1024..1535): moves
    w.check_invariants();
    BOOST_TEST((*w.next_wakeup() == t0 + 1024ms));
    BOOST_TEST(w.advance(t0 + 1099ms) == 0u);
    BOOST_TEST(w.advance(t0 + 1100ms) == 1u);
}

BOOST_AUTO_TEST_CASE(touch_earlier_reschedules) {
    timing_wheel w(t0);
    std::vector<int> log;
    recording_timer a(log, 1);
    w.schedule(a, t0 + 100ms);
    w.touch(a, t0 + 7ms);
    BOOST_TEST((*w.next_wakeup() == t0 + 7ms));
    w.advance(t0 + 7ms);
    BOOST_TEST(log.size() == 1u);
    w.touch(a, t0 + 9ms); // not pending: schedules it
    BOOST_TEST(a.pending());
}

BOOST_AUTO_TEST_CASE(zero_and_negative_delays_fire_on_next_advance) {
    timing_wheel w(t0);
    std::vector<int> log;
    recording_timer a(log, 1), b(log, 2);
    w.advance(t0 + 50ms);
    w.schedule(a, t0 + 50ms);
    w.schedule(b, t0 - 1h);
    BOOST_TEST(w.has_due());
    BOOST_TEST((*w.next_wakeup() == t0 + 50ms));
    BOOST_TEST(w.advance(t0 + 50ms) == 2u); // same time: still fires
    BOOST_TEST(log == (std::vector<int>{2, 1})); // in deadline order: b is an hour overdue
}

BOOST_AUTO_TEST_CASE(self_rearm_with_zero_delay_waits_for_next_advance) {
    timing_wheel w(t0);
    std::vector<int> log;
    recording_timer a(log, 1);
    a.action = [&] { w.schedule(a, w.now()); };
    w.schedule(a, t0 + 1ms);
    BOOST_TEST(w.advance(t0 + 1ms) == 1u); // no busy loop
    BOOST_TEST(w.advance(t0 + 1ms) == 1u);
    BOOST_TEST(w.advance(t0 + 2ms) == 1u);
    BOOST_TEST(log.size() == 3u);
}

BOOST_AUTO_TEST_CASE(self_rearm_within_the_advance_waits_for_next_advance) {
    timing_wheel w(t0);
    std::vector<int> log;
    recording_timer a(log, 1);
    a.action = [&] {
        if (log.size() < 5) w.schedule(a, w.now() + 2ms);
    };
    w.schedule(a, t0 + 1ms);
    BOOST_TEST(w.advance(t0 + 100ms) == 1u);
    BOOST_TEST(w.advance(t0 + 100ms) == 1u);
    BOOST_TEST(log.size() == 2u);
}

BOOST_AUTO_TEST_CASE(callback_scheduling_another_later_in_the_same_advance_fires_it) {
    timing_wheel w(t0);
    std::vector<int> log;
    recording_timer a(log, 1), b(log, 2);
    a.action = [&] { w.schedule(b, t0 + 50ms); };
    w.schedule(a, t0 + 10ms);
    BOOST_TEST(w.advance(t0 + 60ms) == 2u);
    BOOST_TEST(log == (std::vector<int>{1, 2}));
}

BOOST_AUTO_TEST_CASE(callback_cancelling_a_timer_in_the_same_slot) {
    timing_wheel w(t0);
    std::vector<int> log;
    recording_timer a(log, 1), b(log, 2), c(log, 3);
    a.action = [&] { w.cancel(b); };
    w.schedule(a, t0 + 10ms);
    w.schedule(b, t0 + 10ms);
    w.schedule(c, t0 + 10ms);
    BOOST_TEST(w.advance(t0 + 10ms) == 2u);
    BOOST_TEST(log == (std::vector<int>{1, 3}));
    w.check_invariants();
}

BOOST_AUTO_TEST_CASE(destroying_a_pending_timer_unlinks_it) {
    timing_wheel w(t0);
    std::vector<int> log;
    {
        recording_timer a(log, 1);
        w.schedule(a, t0 + 10ms);
        BOOST_TEST(w.size() == 1u);
    }
    BOOST_TEST(w.empty());
    w.check_invariants();
    BOOST_TEST(w.advance(t0 + 1s) == 0u);
    BOOST_TEST(log.empty());
}

BOOST_AUTO_TEST_CASE(callback_may_destroy_its_own_handle) {
    timing_wheel w(t0);
    int runs = 0;
    std::unique_ptr<heartwheel::timer_handle> h;
    h = std::make_unique<heartwheel::timer_handle>([&] {
        ++runs;
        h.reset();
    });
    w.schedule(h->node(), t0 + 1ms);
    w.advance(t0 + 1ms);
    BOOST_TEST(runs == 1);
    BOOST_TEST(!h);
    BOOST_TEST(w.empty());
}

BOOST_AUTO_TEST_CASE(handle_reschedules_itself_and_cancels_on_destruction) {
    timing_wheel w(t0);
    int runs = 0;
    heartwheel::timer_handle h([&] {
        if (++runs < 3) w.schedule(h.node(), w.now() + 1ms);
    });
    w.schedule(h.node(), t0 + 1ms);
    for (int i = 1; i <= 5; ++i) w.advance(t0 + std::chrono::milliseconds(i));
    BOOST_TEST(runs == 3);
    BOOST_TEST(h.expired());
    {
        heartwheel::timer_handle g([&] { ++runs; });
        w.schedule(g.node(), t0 + 10ms);
        BOOST_TEST(g.pending());
    }
    w.advance(t0 + 20ms);
    BOOST_TEST(runs == 3);
}

BOOST_AUTO_TEST_CASE(stop_hands_back_unfired_and_refuses_new) {
    timing_wheel w(t0);
    std::vector<int> log;
    recording_timer a(log, 1), b(log, 2), c(log, 3);
    w.schedule(a, t0 + 1ms);
    w.schedule(b, t0 + 1h);
    w.schedule(c, t0 - 1ms);
    auto unfired = w.stop();
    BOOST_TEST(unfired.size() == 3u);
    BOOST_TEST(a.cancelled());
    BOOST_TEST(w.empty());
    BOOST_TEST(w.advance(t0 + 2h) == 0u);
    BOOST_TEST(log.empty());
    BOOST_TEST((w.try_schedule(a, t0 + 1ms) == heartwheel::errc::wheel_stopped));
    BOOST_CHECK_THROW(w.schedule(a, t0), std::system_error);
}

BOOST_AUTO_TEST_CASE(max_pending_rejects_with_a_clear_error) {
    heartwheel::wheel_config cfg;
    cfg.max_pending = 2;
    timing_wheel w(t0, cfg);
    std::vector<int> log;
    recording_timer a(log, 1), b(log, 2), c(log, 3);
    w.schedule(a, t0 + 1ms);
    w.schedule(b, t0 + 1ms);
    try {
        w.schedule(c, t0 + 1ms);
        BOOST_FAIL("expected wheel_full");
    } catch (const std::system_error& e) {
        BOOST_TEST((e.code() == heartwheel::errc::wheel_full));
        BOOST_TEST(std::string(e.what()).find("max_pending") != std::string::npos);
    }
    BOOST_TEST(!c.pending());
    w.schedule(a, t0 + 5ms); // rescheduling a pending timer does not count twice
    BOOST_TEST(w.size() == 2u);
}

BOOST_AUTO_TEST_CASE(fire_budget_bounds_each_advance_and_keeps_order) {
    heartwheel::wheel_config cfg;
    cfg.max_fires_per_advance = 3;
    timing_wheel w(t0, cfg);
    std::vector<int> log;
    std::vector<std::unique_ptr<recording_timer>> ts;
    for (int i = 0; i < 8; ++i) {
        ts.push_back(std::make_unique<recording_timer>(log, i));
        w.schedule(*ts.back(), t0 + std::chrono::milliseconds(1 + i / 2)); // pairs share a tick
    }
    BOOST_TEST(w.advance(t0 + 1s) == 3u);
    w.check_invariants();
    BOOST_TEST(w.has_due());
    BOOST_TEST(w.advance(t0 + 1s) == 3u);
    BOOST_TEST(w.advance(t0 + 1s) == 2u);
    BOOST_TEST(log == (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
    w.check_invariants();
}

BOOST_AUTO_TEST_CASE(invalid_config_names_the_field) {
    heartwheel::wheel_config cfg;
    cfg.tick = duration::zero();
    try {
        timing_wheel w(t0, cfg);
        BOOST_FAIL("expected invalid_argument");
    } catch (const std::invalid_argument& e) {
        BOOST_TEST(std::string(e.what()).find("tick") != std::string::npos);
    }
}
