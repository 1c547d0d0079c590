// heartwheel/clock.hpp — the clock and time types used throughout heartwheel, and saturating time
// arithmetic.
//
// Everything runs on std::chrono::steady_clock. The wheel itself never reads a clock: callers pass
// the time in, which is what lets tests drive time by hand. Every sum of a time and a caller's
// duration saturates instead of overflowing (signed overflow is undefined behaviour): a delay of
// duration::max() means "never" (the far end of the range), a deadline of time_point::min() means
// "already due".
#ifndef HEARTWHEEL_CLOCK_HPP
#define HEARTWHEEL_CLOCK_HPP

#include <chrono>
#include <cstdint>
#include <limits>

namespace heartwheel {

using clock = std::chrono::steady_clock;
using time_point = clock::time_point;
using duration = clock::duration;

/// t + d, clamped to [time_point::min(), time_point::max()].
constexpr time_point saturating_add(time_point t, duration d) noexcept {
    using rep = duration::rep;
    const rep a = t.time_since_epoch().count(), b = d.count();
    rep sum = 0;
    if (__builtin_add_overflow(a, b, &sum)) sum = b > 0 ? std::numeric_limits<rep>::max() : std::numeric_limits<rep>::min();
    return time_point(duration(sum));
}

/// a - b, clamped to [duration::min(), duration::max()].
constexpr duration saturating_sub(time_point a, time_point b) noexcept {
    using rep = duration::rep;
    const rep x = a.time_since_epoch().count(), y = b.time_since_epoch().count();
    rep diff = 0;
    if (__builtin_sub_overflow(x, y, &diff)) diff = y < 0 ? std::numeric_limits<rep>::max() : std::numeric_limits<rep>::min();
    return duration(diff);
}

} // namespace heartwheel

#endif
