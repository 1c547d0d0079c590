// heartwheel/timer_service.hpp — what liveness code needs from a wheel and its clock.
//
// asio_wheel implements it on a real io_context; tests implement it over a timing_wheel driven by
// hand. Contract: now() is never ahead of real time and is fresh inside timer callbacks (the driver
// reads the clock before each advance; fresh_now() reads it again, for a callback late in a long
// advance); stamp() is a cheap time for an activity happening now, with
// stamp() <= real time <= latest_possible(stamp()); schedule() files a node and makes sure the
// driver wakes for it. All calls happen on the service's own thread.
#ifndef HEARTWHEEL_TIMER_SERVICE_HPP
#define HEARTWHEEL_TIMER_SERVICE_HPP

#include <heartwheel/clock.hpp>
#include <heartwheel/timing_wheel.hpp>

namespace heartwheel {

class timer_service {
public:
    virtual ~timer_service() = default;
    virtual timing_wheel& wheel() noexcept = 0;
    virtual time_point now() noexcept = 0;
    /// A fresh reading of the service's clock, for measuring (how late a judgement ran, say): now()
    /// is shared by every callback of one advance, however long the advance takes.
    virtual time_point fresh_now() noexcept { return now(); }
    virtual time_point stamp() = 0;
    virtual time_point latest_possible(time_point stamp) = 0;
    virtual void schedule(timer_node& t, time_point deadline) = 0;
    /// Fires `t` at the first wake-up at or past `deadline` itself, not at the end of its tick, when
    /// the deadline is inside the next tick (timing_wheel::schedule_exact); a service whose driver
    /// cannot wake between ticks files it at its tick, as schedule() does (never early either way).
    virtual void schedule_exact(timer_node& t, time_point deadline) { schedule(t, deadline); }
    /// The deadline `d` after something happening now. Never early against real time: now() may lag
    /// behind it (it is refreshed once per wheel advance), so this counts from latest_possible().
    time_point deadline_after(duration d) { return saturating_add(latest_possible(stamp()), d); }
    bool cancel(timer_node& t) noexcept { return wheel().cancel(t); }
};

} // namespace heartwheel

#endif
