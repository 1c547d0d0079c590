// timing_wheel_edge_test.cpp — level boundaries, far deadlines, periodic policies, throwing callbacks.
#include <boost/test/unit_test.hpp>

#include <heartwheel/timing_wheel.hpp>

#include "test_timers.hpp"

#include <deque>
#include <memory>
#include <stdexcept>

using namespace hwtest;
using heartwheel::timing_wheel;

BOOST_AUTO_TEST_SUITE(edges)

// The extremes of time_point and duration saturate instead of overflowing: a far-past deadline is due
// now (it was once wrapped to ~146 years away), an earlier `now` is a no-op (advance(min) once jumped
// the wheel to the end of its range and fired everything early), a far-future deadline never fires.
BOOST_AUTO_TEST_CASE(extreme_times_saturate) {
    timing_wheel w(t0);
    std::vector<int> log;
    recording_timer past(log, 1), future(log, 2), late(log, 3);
    w.advance(t0 + 10ms);
    w.schedule(past, time_point::min());
    w.schedule(future, time_point::max());
    w.schedule(late, heartwheel::saturating_add(w.now(), duration::max()));
    BOOST_TEST(w.has_due());
    BOOST_TEST((w.deadline(past) <= w.now()));
    BOOST_TEST(w.advance(time_point::min()) == 1u); // only the overdue one; time does not move
    BOOST_TEST((w.now() == t0 + 10ms));
    BOOST_TEST(log == std::vector<int>{1});
    BOOST_TEST(future.pending());
    BOOST_TEST((w.deadline(future) > t0 + std::chrono::hours(24 * 365 * 100)));
    BOOST_TEST((w.remaining(future, time_point::min()) == duration::max())); // no overflow either
    BOOST_TEST((w.remaining(past, time_point::max()) == duration::zero()));
    w.advance(t0 + std::chrono::hours(24 * 365));
    BOOST_TEST(log == std::vector<int>{1});
    BOOST_TEST(future.pending());
    BOOST_TEST(late.pending());
    w.check_invariants();
}

// Timers scheduled with deadlines already passed fire in deadline order, not in the order they were
// scheduled — also when a fire budget spreads them over several advances.
BOOST_AUTO_TEST_CASE(overdue_timers_fire_in_deadline_order) {
    for (std::size_t budget : {std::size_t{100}, std::size_t{1}, std::size_t{2}}) {
        heartwheel::wheel_config c;
        c.max_fires_per_advance = budget;
        timing_wheel w(t0, c);
        w.advance(t0 + 1000ms);
        std::vector<int> log;
        // Scheduled 900, 995, 990, 10 and 500 ms overdue; ids are how many ms overdue.
        std::vector<std::unique_ptr<recording_timer>> ts;
        for (int overdue : {900, 995, 990, 10, 500}) {
            ts.push_back(std::make_unique<recording_timer>(log, overdue));
            w.schedule(*ts.back(), w.now() - std::chrono::milliseconds(overdue));
        }
        // One scheduled by a callback with an older deadline still joins in order when the budget
        // leaves some behind.
        recording_timer oldest(log, 999);
        ts[0]->action = [&] { w.schedule(oldest, t0 + 1ms); };
        for (int i = 0; i < 10 && w.size() > 0; ++i) w.advance(w.now());
        // 999 joins the due timers when 900 fires: after the batch that was running, in deadline
        // order among whatever that batch's budget left behind.
        const std::vector<int> expected = budget == 100 ? std::vector<int>{995, 990, 900, 500, 10, 999}
                                          : budget == 2 ? std::vector<int>{995, 990, 900, 500, 999, 10}
                                                        : std::vector<int>{995, 990, 900, 999, 500, 10};
        BOOST_TEST(log == expected, "budget " << budget);
        w.check_invariants();
    }
}

// Deadlines right at and around every level boundary fire exactly at their tick.
BOOST_AUTO_TEST_CASE(level_boundaries_are_exact) {
    for (std::uint64_t offset : {0ull, 1ull, 63ull, 64ull, 65ull, 4095ull}) {
        timing_wheel w(t0);
        w.advance(t0 + std::chrono::milliseconds(offset)); // start off-aligned
        std::vector<int> log;
        std::vector<std::unique_ptr<recording_timer>> ts;
        std::vector<std::uint64_t> deadlines;
        for (unsigned level = 1; level <= 5; ++level) {
            const std::uint64_t b = std::uint64_t{1} << (6 * level);
            for (std::uint64_t d : {b - 1, b, b + 1, 2 * b - 1, 2 * b, 63 * b + 1}) {
                deadlines.push_back(d);
                ts.push_back(std::make_unique<recording_timer>(log, static_cast<int>(ts.size())));
                w.schedule(*ts.back(), t0 + std::chrono::milliseconds(d));
            }
        }
        w.check_invariants();
        // Step to one tick before and at each deadline.
        for (std::size_t i = 0; i < ts.size(); ++i) {
            const auto d = deadlines[i];
            if (d <= offset) continue;
            w.advance(t0 + std::chrono::milliseconds(d - 1));
            BOOST_TEST_REQUIRE(ts[i]->pending(), "fired early at level boundary d=" << d << " offset=" << offset);
            w.advance(t0 + std::chrono::milliseconds(d));
            BOOST_TEST_REQUIRE(ts[i]->expired(), "late at d=" << d << " offset=" << offset);
            w.check_invariants();
        }
    }
}

BOOST_AUTO_TEST_CASE(years_ahead_and_max_tick) {
    timing_wheel w(t0);
    std::vector<int> log;
    recording_timer a(log, 1), b(log, 2);
    const auto three_years = std::chrono::hours(24 * 365 * 3);
    w.schedule(a, t0 + three_years);
    w.schedule(b, time_point::max()); // clamped, never overflows
    BOOST_TEST(b.deadline_tick() == w.max_tick());
    w.advance(t0 + three_years - 1ms);
    BOOST_TEST(a.pending());
    w.advance(t0 + three_years);
    BOOST_TEST(a.expired());
    BOOST_TEST(b.pending());
    w.check_invariants();
}

// A long idle jump is cheap: the wheel hops from occupied slot to occupied slot.
BOOST_AUTO_TEST_CASE(jump_visits_only_occupied_slots) {
    timing_wheel w(t0);
    std::vector<int> log;
    recording_timer a(log, 1);
    w.schedule(a, t0 + std::chrono::hours(24 * 365));
    w.advance(t0 + std::chrono::hours(24 * 300)); // returns at once: no per-tick loop
    BOOST_TEST(a.pending());
    BOOST_TEST(w.elapsed_tick() == w.tick_floor(t0 + std::chrono::hours(24 * 300)));
    w.check_invariants();
}

BOOST_AUTO_TEST_CASE(periodic_burst_delay_skip) {
    using heartwheel::missed_tick;
    for (auto policy : {missed_tick::burst, missed_tick::delay, missed_tick::skip}) {
        timing_wheel w(t0);
        recording_periodic p;
        p.w = &w;
        w.schedule_periodic(p, t0 + 10ms, 10ms, policy);
        w.advance(t0 + 10ms);
        w.advance(t0 + 20ms);
        BOOST_TEST(p.fired_at == (std::vector<std::uint64_t>{10, 20}));
        w.advance(t0 + 55ms); // stalled: missed 30, 40, 50
        if (policy == missed_tick::burst) {
            w.advance(t0 + 55ms);
            w.advance(t0 + 55ms);
            w.advance(t0 + 55ms); // nothing more due: 60 is in the future
            BOOST_TEST(p.fired_at.size() == 5u); // 30, 40, 50 one per advance
            BOOST_TEST(p.deadline_tick() == 60u);
        } else if (policy == missed_tick::delay) {
            BOOST_TEST(p.deadline_tick() == 65u); // fired at 55, next = 55 + 10
        } else {
            BOOST_TEST(p.deadline_tick() == 60u); // next multiple of the period
        }
        BOOST_TEST(p.pending());
        p.cancel();
        BOOST_TEST(w.empty());
    }
}

BOOST_AUTO_TEST_CASE(throwing_callback_leaves_the_wheel_consistent) {
    timing_wheel w(t0);
    std::vector<int> log;
    recording_timer a(log, 1), b(log, 2), c(log, 3);
    b.action = [] { throw std::runtime_error("boom"); };
    w.schedule(a, t0 + 5ms);
    w.schedule(b, t0 + 5ms);
    w.schedule(c, t0 + 5ms);
    BOOST_CHECK_THROW(w.advance(t0 + 5ms), std::runtime_error);
    w.check_invariants();
    BOOST_TEST(c.pending());
    w.advance(t0 + 5ms);
    BOOST_TEST(log == (std::vector<int>{1, 2, 3}));
    BOOST_TEST(w.empty());
}

BOOST_AUTO_TEST_CASE(time_never_goes_backwards) {
    timing_wheel w(t0);
    std::vector<int> log;
    recording_timer a(log, 1);
    w.advance(t0 + 100ms);
    w.advance(t0 + 50ms);
    BOOST_TEST(w.elapsed_tick() == 100u);
    w.schedule(a, t0 + 101ms);
    w.advance(t0 + 101ms);
    BOOST_TEST(a.expired());
}

BOOST_AUTO_TEST_CASE(coarse_tick_rounds_deadlines_up) {
    timing_wheel w(t0, {.tick = 10ms});
    std::vector<int> log;
    recording_timer a(log, 1);
    w.schedule(a, t0 + 15ms);
    w.advance(t0 + 19ms);
    BOOST_TEST(a.pending());
    w.advance(t0 + 20ms);
    BOOST_TEST(a.expired());
}

// schedule_exact: a deadline inside the next tick fires at the first advance at or past it, not at
// the tick's end; the wheel asks to be woken at it; cancel, re-arm, a later touch, destruction and
// stop() treat it as any pending timer. Any other deadline is filed at its tick, as schedule() does.
BOOST_AUTO_TEST_CASE(exact_deadlines_inside_the_next_tick) {
    timing_wheel w(t0, {.tick = 10ms});
    std::vector<int> log;
    recording_timer a(log, 1), b(log, 2), far(log, 3), touched(log, 4), gone(log, 5);
    w.advance(t0 + 12ms); // the current tick is 1 (10 ms)
    w.schedule(b, t0 + 40ms);
    w.schedule_exact(a, t0 + 15ms);
    w.schedule_exact(far, t0 + 35ms); // not inside the next tick: filed at its tick, 40
    w.schedule_exact(touched, t0 + 16ms);
    w.touch(touched, t0 + 30ms); // later: re-filed by the new deadline when released
    auto doomed = std::make_unique<recording_timer>(log, 6);
    w.schedule_exact(*doomed, t0 + 13ms);
    w.schedule_exact(gone, t0 + 14ms);
    BOOST_TEST(w.size() == 6u);
    w.check_invariants();
    BOOST_TEST((w.next_wakeup() == t0 + 13ms));
    BOOST_TEST((w.filed_wakeup(a) == t0 + 15ms));
    doomed.reset(); // destroying a pending exact timer unlinks it
    BOOST_TEST(w.cancel(gone));
    BOOST_TEST((w.next_wakeup() == t0 + 15ms));
    w.check_invariants();
    BOOST_TEST(w.advance(t0 + 15ms - 1ns) == 0u); // never early
    BOOST_TEST(w.advance(t0 + 15ms) == 1u);       // not at 20 ms: at the deadline itself
    BOOST_TEST(log == std::vector<int>{1});
    BOOST_TEST(a.expired());
    w.check_invariants();
    BOOST_TEST(w.advance(t0 + 19ms) == 0u); // `touched` is due at 30 now, at its tick
    BOOST_TEST(touched.pending());
    BOOST_TEST((w.filed_wakeup(touched) == t0 + 30ms));
    w.schedule_exact(a, t0 + 18ms); // exact again, then re-armed to an ordinary deadline
    w.schedule(a, t0 + 50ms);
    BOOST_TEST((w.next_wakeup() == t0 + 30ms));
    w.check_invariants();
    BOOST_TEST(w.advance(t0 + 40ms) == 3u);
    BOOST_TEST(log == (std::vector<int>{1, 4, 2, 3}));
    w.schedule_exact(b, t0 + 45ms);
    auto unfired = w.stop();
    BOOST_TEST(unfired.size() == 2u); // a (50 ms) and the exact b
    BOOST_TEST(b.cancelled());
    BOOST_TEST(w.empty());
}

// A touch of an exact timer to a later deadline inside the same tick must not leave it firing at the
// old deadline (before the new one): any touch files it by its new deadline's tick, as any timer.
BOOST_AUTO_TEST_CASE(a_touched_exact_timer_is_never_early_for_its_new_deadline) {
    timing_wheel w(t0, {.tick = 10ms});
    std::vector<int> log;
    recording_timer a(log, 1), b(log, 2), c(log, 3);
    w.advance(t0 + 12ms);
    w.schedule_exact(a, t0 + 14ms);
    w.schedule_exact(b, t0 + 15ms);
    w.schedule_exact(c, t0 + 16ms);
    BOOST_TEST((w.deadline(a) == t0 + 14ms)); // an exact timer reports its own deadline
    BOOST_TEST((w.remaining(a, t0 + 12ms) == 2ms));
    BOOST_TEST(w.touch(a, t0 + 14ms)); // even to the same deadline: re-filed, by its tick
    w.touch(b, t0 + 18ms);             // later, same tick: by the tick, 20
    w.touch_tick(c, 2);                // the tick API: the end of tick 2 (20 ms)
    BOOST_TEST((w.deadline(b) == t0 + 20ms));
    BOOST_TEST((w.next_wakeup() == t0 + 20ms)); // no exact wake-up left
    w.check_invariants();
    BOOST_TEST(w.advance(t0 + 19ms) == 0u); // at 16 (or 19) b would be early for 18
    BOOST_TEST(w.advance(t0 + 20ms) == 3u);
    BOOST_TEST(log == (std::vector<int>{1, 2, 3}));
    // Cancelled while exact, it keeps its deadline's tick (30 ms), not the mark of the exact list.
    w.schedule_exact(a, t0 + 25ms);
    BOOST_TEST(w.cancel(a));
    BOOST_TEST((w.deadline(a) == t0 + 30ms));
    BOOST_TEST(a.deadline_tick() == 3u);
    w.check_invariants();
}

// A walk holds the slot storage's address while it goes; a callback that grows the storage (it
// schedules many timers) moves it. The walk must go on over the new storage: every later timer of the
// slot still fires once, in order, and the tombstone of one cancelled after the growth is skipped.
BOOST_AUTO_TEST_CASE(a_callback_that_grows_the_storage_mid_walk_leaves_the_walk_whole) {
    timing_wheel w(t0, {.tick = 1ms});
    std::vector<int> log;
    std::deque<recording_timer> slot; // one level-0 slot: all due at 5 ms, fired in filing order
    for (int i = 0; i < 100; ++i) slot.emplace_back(log, i);
    std::deque<recording_timer> far;
    slot[10].action = [&] {
        for (int i = 0; i < 50'000; ++i) w.schedule(far.emplace_back(log, -1), t0 + 1h + std::chrono::milliseconds(i));
        slot[60].cancel();
    };
    for (auto& t : slot) w.schedule(t, t0 + 5ms);
    const auto before = w.storage_bytes();
    BOOST_TEST(w.advance(t0 + 5ms) == 99u);
    BOOST_TEST(w.storage_bytes() > before); // the storage did grow under the walk
    std::vector<int> expected;
    for (int i = 0; i < 100; ++i)
        if (i != 60) expected.push_back(i);
    BOOST_TEST(log == expected);
    BOOST_TEST(w.size() == 50'000u);
    w.check_invariants();
}

// schedule_tick() files by a tick the caller already has, exactly as schedule() files the time the
// tick ends at: never before it, at the same advance; re-armed in ticks; clamped to max_tick().
BOOST_AUTO_TEST_CASE(schedule_tick_files_as_schedule_does_for_the_ticks_time) {
    timing_wheel w(t0, {.tick = 10ms});
    std::vector<int> log;
    recording_timer a(log, 1), b(log, 2), c(log, 3);
    w.schedule_tick(a, 3);               // the end of tick 3: 30 ms
    w.schedule(b, t0 + 25ms);            // rounds up to the same tick
    BOOST_TEST(a.deadline_tick() == b.deadline_tick());
    BOOST_TEST((w.deadline(a) == t0 + 30ms));
    w.schedule_tick(c, 64 * 64);         // a slot's start two levels up
    w.check_invariants();
    BOOST_TEST(w.advance(t0 + 29ms) == 0u);
    BOOST_TEST(w.advance(t0 + 30ms) == 2u);
    BOOST_TEST(log == (std::vector<int>{1, 2}));
    w.schedule_tick(a, 5);
    w.schedule_tick(a, 7);               // re-armed later while pending
    BOOST_TEST(w.advance(t0 + 69ms) == 0u);
    BOOST_TEST(w.advance(t0 + 70ms) == 1u);
    BOOST_TEST(w.advance(t0 + 64 * 64 * 10ms - 1ms) == 0u);
    BOOST_TEST(w.advance(t0 + 64 * 64 * 10ms) == 1u);
    BOOST_TEST(log == (std::vector<int>{1, 2, 1, 3}));
    w.schedule_tick(a, ~std::uint64_t{0}); // beyond any time: clamped, pending, never fires here
    BOOST_TEST(a.deadline_tick() == w.max_tick());
    w.check_invariants();
}

// A timer due exactly at a higher slot's start fires before that slot's other timers cascade: with
// a million timers in the slot, it would otherwise wait for all of them to be re-filed.
BOOST_AUTO_TEST_CASE(a_timer_due_at_a_slot_start_fires_before_the_slot_cascades) {
    timing_wheel w(t0); // 1 ms tick: 32,768 ticks (512 * 64) is the start of level 2's slot 1
    std::vector<int> log;
    recording_timer later(log, 2), at_start(log, 1);
    w.schedule(later, t0 + 32773ms); // same level-2 slot, filed first
    w.schedule(at_start, t0 + 32768ms);
    std::uint64_t later_filed_at = 0;
    at_start.action = [&] { later_filed_at = w.filed_wakeup_tick(later); };
    BOOST_TEST(w.advance(t0 + 32768ms) == 1u);
    BOOST_TEST(log == std::vector<int>{1});
    BOOST_TEST(later_filed_at == 32768u); // still in the level-2 slot when the callback ran
    BOOST_TEST(w.filed_wakeup_tick(later) == 32773u);
    w.advance(t0 + 32773ms);
    BOOST_TEST(log == (std::vector<int>{1, 2}));
    w.check_invariants();
}

// Cancels from a callback while a slot of several storage chunks is being fired: the walk skips the
// cancelled ones and keeps the order the others were scheduled in.
BOOST_AUTO_TEST_CASE(cancels_during_a_slot_walk_skip_exactly_the_cancelled) {
    timing_wheel w(t0);
    std::vector<int> log;
    std::vector<std::unique_ptr<recording_timer>> ts;
    for (int i = 0; i < 200; ++i) ts.push_back(std::make_unique<recording_timer>(log, i));
    ts[0]->action = [&] {
        for (int i = 1; i < 200; i += 2) BOOST_TEST(w.cancel(*ts[static_cast<std::size_t>(i)]));
        ts[198].reset(); // destroyed while waiting in the walked slot
    };
    for (auto& t : ts) w.schedule(*t, t0 + 5ms);
    BOOST_TEST(w.advance(t0 + 5ms) == 99u);
    std::vector<int> want;
    for (int i = 0; i < 198; i += 2) want.push_back(i);
    BOOST_TEST(log == want);
    BOOST_TEST(w.empty());
    w.check_invariants();
}

BOOST_AUTO_TEST_CASE(advance_from_a_callback_does_nothing) {
    timing_wheel w(t0);
    std::vector<int> log;
    recording_timer a(log, 1), b(log, 2);
    std::size_t inner = 99;
    a.action = [&] { inner = w.advance(t0 + 1h); };
    w.schedule(a, t0 + 1ms);
    w.schedule(b, t0 + 1s);
    BOOST_TEST(w.advance(t0 + 1ms) == 1u);
    BOOST_TEST(inner == 0u);
    BOOST_TEST(b.pending());
    w.check_invariants();
}

// The memory target: at most 48 bytes per live timer, node and pooled slot storage together, and the
// storage is reused, not grown, when timers are cancelled and armed again.
BOOST_AUTO_TEST_CASE(a_live_timer_costs_at_most_48_bytes) {
    static_assert(sizeof(void*) != 8 || sizeof(heartwheel::timer_node) == 32);
    timing_wheel w(t0);
    std::vector<int> log;
    constexpr std::size_t n = 100'000;
    std::deque<recording_timer> ts;
    for (std::size_t i = 0; i < n; ++i) ts.emplace_back(log, 0);
    std::uint64_t x = 88172645463325252ull; // xorshift: deadlines over 1–30 s in no particular order
    auto next = [&] { return x ^= x << 13, x ^= x >> 7, x ^= x << 17; };
    for (auto& t : ts) w.schedule(t, t0 + 1s + std::chrono::milliseconds(next() % 29'000));
    const double per_timer = static_cast<double>(w.storage_bytes() + n * sizeof(heartwheel::timer_node)) / n;
    BOOST_TEST(per_timer <= 48.0);
    const auto held = w.storage_bytes();
    for (auto& t : ts) w.cancel(t);
    for (auto& t : ts) w.schedule(t, t0 + 1s + std::chrono::milliseconds(next() % 29'000));
    BOOST_TEST(w.storage_bytes() == held);
    BOOST_TEST(w.advance(t0 + 31s) == n);
    w.check_invariants();
}

// The slot storage reserves one partly filled chunk for each store a timer can be filed in, and
// with a 1 ms tick no deadline reaches past level 6, nor past its slot 8 (max_tick() < 2^43): 1,172
// stores, not 1,666, so the same timers hold less storage than on a 1 ns wheel, whose ticks reach
// level 9 (1,604 stores).
BOOST_AUTO_TEST_CASE(the_slot_storage_reserves_only_for_the_levels_its_ticks_reach) {
    heartwheel::wheel_config ns;
    ns.tick = std::chrono::nanoseconds(1);
    timing_wheel ms_wheel(t0), ns_wheel(t0, ns);
    BOOST_TEST(ms_wheel.top_level() == 6u);
    BOOST_TEST(ms_wheel.top_index() == 8u);
    BOOST_TEST(ns_wheel.top_level() == 9u);
    std::vector<int> log;
    constexpr std::size_t n = 10'000;
    std::deque<recording_timer> a, b;
    for (std::size_t i = 0; i < n; ++i) {
        a.emplace_back(log, 0);
        b.emplace_back(log, 0);
        const auto at = t0 + 1s + std::chrono::milliseconds(i % 5000);
        ms_wheel.schedule(a.back(), at);
        ns_wheel.schedule(b.back(), at);
    }
    // A chunk is 32 entries and its link. Reserving for every store would take at least n/32 full
    // chunks, one partial chunk per store and two more; the 1 ms wheel holds less than that, the
    // 1 ns wheel (which reaches 1,604 stores) more than the 1 ms wheel.
    constexpr std::size_t chunk = 32 * sizeof(void*) + 4;
    BOOST_TEST(ms_wheel.storage_bytes() < (n / 32 + 1666 + 2) * chunk);
    BOOST_TEST(ms_wheel.storage_bytes() + 300 * chunk < ns_wheel.storage_bytes());
    ms_wheel.check_invariants();
}

// That reservation is address space until used: the chunks are handed out in order once none is
// free, so timers filed in a few stores touch the chunks they fill and hardly more, while the pool
// holds (reserves) room for one partly filled chunk in each of its 1,172 stores; cancelled and armed
// again, they touch nothing new.
BOOST_AUTO_TEST_CASE(the_slot_storage_touches_only_the_chunks_it_uses) {
    timing_wheel w(t0);
    std::vector<int> log;
    constexpr std::size_t n = 10'000;
    std::deque<recording_timer> ts;
    for (std::size_t i = 0; i < n; ++i) {
        ts.emplace_back(log, 0);
        w.schedule(ts.back(), t0 + 10s + std::chrono::milliseconds(i % 3)); // three stores at level 1
    }
    constexpr std::size_t chunk = 32 * sizeof(void*);
    const std::size_t links = w.storage_bytes() / 64; // at most: 4 bytes per chunk of 256
    BOOST_TEST(w.storage_touched_bytes() >= n * sizeof(void*));
    BOOST_TEST(w.storage_touched_bytes() <= (n / 32 + 3 + 1) * chunk + links);
    BOOST_TEST(w.storage_bytes() >= w.storage_touched_bytes() + 1100 * chunk); // the 1,172 stores' partial chunks
    const auto touched = w.storage_touched_bytes();
    for (auto& t : ts) w.cancel(t);
    for (std::size_t i = 0; i < n; ++i) w.schedule(ts[i], t0 + 20s + std::chrono::milliseconds(i % 7));
    BOOST_TEST(w.storage_touched_bytes() <= touched + 7 * chunk);
    w.check_invariants();
    BOOST_TEST(w.advance(t0 + 21s) == n);
    w.check_invariants();
}

// The worst case for that reservation: a timer in every store of every level the ticks reach (the
// slots and their start stores, up to level 6), all cascading down as the wheel advances to the
// end of its range. Each cascade files them into stores that may be empty, without allocating.
BOOST_AUTO_TEST_CASE(timers_in_every_reachable_store_cascade_to_the_end_of_the_range) {
    timing_wheel w(t0);
    std::vector<int> log;
    std::deque<recording_timer> ts;
    const unsigned top = w.top_level();
    for (unsigned level = 0; level <= top; ++level)
        for (std::uint64_t index = 1; index < (level == 0 ? 512u : 64u); ++index) {
            const std::uint64_t start = index << (level == 0 ? 0 : 9 + 6 * (level - 1));
            if (start > w.max_tick()) continue;
            for (const std::uint64_t tick : {start, start + 1}) { // the slot's start store, and the slot
                if (tick > w.max_tick() || (level == 0 && tick != start)) continue;
                ts.emplace_back(log, 0);
                w.schedule(ts.back(), t0 + std::chrono::milliseconds(tick));
            }
        }
    w.check_invariants();
    const std::size_t armed = ts.size();
    BOOST_TEST(armed == 1157u); // 511 at level 0, 126 at each of levels 1-5, the 16 that fit at level 6
    std::size_t fired = 0;
    for (int i = 0; i < 100'000 && !w.empty(); ++i) {
        const auto next = w.next_wakeup();
        BOOST_TEST_REQUIRE(next.has_value());
        fired += w.advance(*next);
    }
    w.check_invariants();
    BOOST_TEST(fired == armed);
}

BOOST_AUTO_TEST_SUITE_END()
