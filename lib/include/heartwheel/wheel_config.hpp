// heartwheel/wheel_config.hpp — the knobs of a timing wheel, with their defaults.
#ifndef HEARTWHEEL_WHEEL_CONFIG_HPP
#define HEARTWHEEL_WHEEL_CONFIG_HPP

#include <heartwheel/clock.hpp>

#include <cstddef>
#include <limits>

namespace heartwheel {

struct wheel_config {
    /// Resolution: a timer fires never before its deadline and at most one tick after it.
    duration tick = std::chrono::milliseconds(1);
    /// Cap on pending timers; scheduling one more fails with errc::wheel_full.
    std::size_t max_pending = std::numeric_limits<std::size_t>::max();
    /// Cap on callbacks run by one advance(), so a stalled loop that wakes up to a million overdue
    /// timers still gets back to its I/O. The rest fire on the following advances, in deadline order.
    std::size_t max_fires_per_advance = std::numeric_limits<std::size_t>::max();

    /// Throws std::invalid_argument naming the field and its accepted range if a value is invalid.
    void validate() const;
};

} // namespace heartwheel

#endif
