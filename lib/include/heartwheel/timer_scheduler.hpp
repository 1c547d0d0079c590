// heartwheel/timer_scheduler.hpp — what liveness code needs from a wheel and its clock: times
// (now, a stamp for an activity, the latest real time a stamp may stand for), filing a timer node at
// a deadline, and the wheel's tick as a unit of time. Not the wheel itself: code above it never
// does tick arithmetic on a wheel it does not own, and a scheduler may be any wheel driver.
//
// asio_wheel implements it on a real io_context; tests implement it over a timing_wheel driven by
// hand. Cancelling needs no scheduler: timer_node::cancel(). Contract: now() is never ahead of real time and is fresh inside timer callbacks (the driver
// reads the clock before each advance; fresh_now() reads it again, for a callback late in a long
// advance); stamp() is a cheap time for an activity happening now, with
// stamp() <= real time <= latest_possible(stamp()); schedule() files a node and makes sure the
// driver wakes for it. All calls happen on the service's own thread.
#ifndef HEARTWHEEL_TIMER_SCHEDULER_HPP
#define HEARTWHEEL_TIMER_SCHEDULER_HPP

#include <heartwheel/clock.hpp>
#include <heartwheel/timer_node.hpp>

namespace heartwheel {

class timer_scheduler {
public:
    virtual ~timer_scheduler() = default;
    virtual time_point now() noexcept = 0;
    /// A fresh reading of the service's clock, for measuring (how late a judgement ran, say): now()
    /// is shared by every callback of one advance, however long the advance takes.
    virtual time_point fresh_now() noexcept { return now(); }
    virtual time_point stamp() = 0;
    virtual time_point latest_possible(time_point stamp) = 0;
    /// Whether its times are the process's steady clock (std::chrono::steady_clock): a time taken
    /// elsewhere — the kernel's receive stamp of a socket's bytes — is then comparable with its own.
    /// A clock moved by hand is not.
    virtual bool on_steady_clock() const noexcept { return false; }
    virtual void schedule(timer_node& t, time_point deadline) = 0;
    /// Fires `t` at the first wake-up at or past `deadline` itself, not at the end of its tick, when
    /// the deadline is inside the next tick (timing_wheel::schedule_exact); a service whose driver
    /// cannot wake between ticks files it at its tick, as schedule() does (never early either way).
    virtual void schedule_exact(timer_node& t, time_point deadline) { schedule(t, deadline); }
    /// The wheel's tick: how far past its deadline a timer may fire when its thread wakes on time.
    virtual duration tick() const noexcept = 0;
    /// The start of the tick that holds `t`: a timer filed for it fires at the first wake-up at or
    /// after the end of that tick.
    virtual time_point tick_start(time_point t) const noexcept = 0;
    /// The deadline `d` after something happening now. Never early against real time: now() may lag
    /// behind it (it is refreshed once per wheel advance), so this counts from latest_possible().
    time_point deadline_after(duration d) { return saturating_add(latest_possible(stamp()), d); }
};

} // namespace heartwheel

#endif
