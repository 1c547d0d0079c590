// heartwheel/testing/manual_scheduler.hpp — a timer_scheduler whose time moves only when a test says.
//
// What tokio's time::pause is to a tokio program: liveness logic (a connection_liveness, a policy, a
// heartbeat, request deadlines, anything written against timer_scheduler) runs on a timing_wheel
// whose clock is a variable, so a test of "closed 30 s after the peer went silent" takes no time, and
// its outcome does not depend on how busy the machine is. advance_to() sets the clock and fires what
// is due, exactly as the Asio driver's wake-up does: deadlines round up to the tick, so a timer fires
// at the first advance at or past its deadline's tick end — never before its deadline.
//
// Invariants: now() only moves forward (an earlier time given to advance_to() is ignored);
// stamp() <= now() <= latest_possible(stamp()), with the gap set by set_stamp_lag() (a driver whose
// cached clock lags real time: code must never judge a peer early against the stale stamp); every
// call happens on the test's own thread, as every call to a real driver happens on its io_context's.
#ifndef HEARTWHEEL_TESTING_MANUAL_SCHEDULER_HPP
#define HEARTWHEEL_TESTING_MANUAL_SCHEDULER_HPP

#include <heartwheel/timer_scheduler.hpp>
#include <heartwheel/timing_wheel.hpp>

#include <algorithm>
#include <cstdint>

namespace heartwheel::testing {

class manual_scheduler final : public timer_scheduler {
public:
    /// Where a manual clock starts unless told otherwise: an hour after the steady clock's epoch, so
    /// that a test may step back from it without reaching the epoch.
    static constexpr time_point default_start = time_point{} + std::chrono::hours(1);

    explicit manual_scheduler(duration tick = std::chrono::milliseconds(1), time_point start = default_start)
        : wheel_(start, config_with(tick)), start_(start), now_(start) {}
    explicit manual_scheduler(const wheel_config& config, time_point start = default_start)
        : wheel_(start, config), start_(start), now_(start) {}

    // --- timer_scheduler ----------------------------------------------------------------------------
    time_point now() noexcept override { return now_; }
    time_point stamp() override { return now_ - lag_; }
    time_point latest_possible(time_point s) override { return s + lag_; }
    void schedule(timer_node& t, time_point deadline) override {
        ++schedules_;
        wheel_.schedule(t, deadline);
    }
    void schedule_exact(timer_node& t, time_point deadline) override {
        ++schedules_;
        wheel_.schedule_exact(t, deadline);
    }
    duration tick() const noexcept override { return wheel_.tick(); }
    time_point tick_start(time_point t) const noexcept override { return wheel_.time_of(wheel_.tick_floor(t)); }

    // --- moving time --------------------------------------------------------------------------------
    /// Sets the clock to `t` (if later) and fires every timer due by then, in deadline order (the
    /// callbacks see now() == t). Returns how many fired.
    std::size_t advance_to(time_point t) {
        now_ = std::max(now_, t);
        return wheel_.advance(now_);
    }
    std::size_t advance_by(duration d) { return advance_to(now_ + d); }
    /// Advances to `d` later in steps of `step` (one tick by default), so that each timer fires at
    /// the first step past its deadline: what a driver waking every tick would observe.
    std::size_t step_by(duration d, duration step = duration::zero()) {
        if (step <= duration::zero()) step = wheel_.tick();
        const time_point end = now_ + d;
        std::size_t fired = 0;
        while (now_ < end) fired += advance_to(std::min(end, now_ + step));
        return fired;
    }
    /// Advances straight to each next wake-up the wheel asks for, up to `limit` later: the fewest
    /// advances a driver would make. Returns how many fired. (A callback that re-arms its timer due
    /// at once keeps it at that time, as it would keep a driver busy.)
    std::size_t run_for(duration limit) {
        const time_point end = now_ + limit;
        std::size_t fired = 0;
        for (auto next = wheel_.next_wakeup(); next && *next <= end; next = wheel_.next_wakeup()) {
            if (*next <= now_) { // already due (past a budget of fires per advance, say): advance again
                const std::size_t n = wheel_.advance(now_);
                fired += n;
                if (n == 0 && wheel_.next_wakeup() == next) break; // nothing moves at this time
                continue;
            }
            fired += advance_to(*next);
        }
        now_ = std::max(now_, end);
        fired += wheel_.advance(now_);
        return fired;
    }

    // --- what a test looks at -----------------------------------------------------------------------
    /// How far the clock has moved since the start.
    duration since_start() const noexcept { return now_ - start_; }
    time_point start() const noexcept { return start_; }
    /// Pending timers.
    std::size_t pending() const noexcept { return wheel_.size(); }
    /// How many times code filed a timer through this scheduler (a touch that only stores a later
    /// deadline is not one): how a test checks that an activity costs no timer work.
    std::uint64_t schedule_count() const noexcept { return schedules_; }
    /// Makes stamp() lag now() by `lag`, as a driver's cached clock lags real time between its
    /// refreshes (latest_possible() adds it back).
    void set_stamp_lag(duration lag) noexcept { lag_ = lag; }
    /// The wheel underneath, for a test of the wheel's own state.
    timing_wheel& wheel() noexcept { return wheel_; }

private:
    static wheel_config config_with(duration tick) {
        wheel_config c;
        c.tick = tick;
        return c;
    }
    timing_wheel wheel_;
    time_point start_;
    time_point now_;
    duration lag_{};
    std::uint64_t schedules_ = 0;
};

} // namespace heartwheel::testing

#endif
