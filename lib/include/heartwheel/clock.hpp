// heartwheel/clock.hpp — the clock and time types used throughout heartwheel.
//
// Everything runs on std::chrono::steady_clock. The wheel itself never reads a clock: callers pass
// the time in, which is what lets tests drive time by hand.
#ifndef HEARTWHEEL_CLOCK_HPP
#define HEARTWHEEL_CLOCK_HPP

#include <chrono>

namespace heartwheel {

using clock = std::chrono::steady_clock;
using time_point = clock::time_point;
using duration = clock::duration;

} // namespace heartwheel

#endif
