// heartwheel/periodic_timer.hpp — a timer that re-arms itself every period.
//
// The wheel re-files a periodic timer before its callback runs, so the callback sees it pending and may
// cancel or reschedule it. What happens after a stall (the loop did not advance for several periods) is
// chosen per timer, as tokio's MissedTickBehavior does.
#ifndef HEARTWHEEL_PERIODIC_TIMER_HPP
#define HEARTWHEEL_PERIODIC_TIMER_HPP

#include <heartwheel/timer_node.hpp>

#include <cstdint>

namespace heartwheel {

enum class missed_tick : std::uint8_t {
    burst, ///< fire once for every missed period, one per advance, until caught up
    delay, ///< next deadline = the time it actually fired + period
    skip,  ///< next deadline = the next multiple of period (from the first deadline) after now
};

class periodic_timer : public timer_node {
public:
    std::uint64_t period_ticks() const noexcept { return period_; }
    missed_tick policy() const noexcept { return policy_; }

private:
    friend class timing_wheel;
    std::uint64_t period_ = 1;
    missed_tick policy_ = missed_tick::burst;
};

} // namespace heartwheel

#endif
