// manual_service.hpp — the tests' name for the library's manual clock (heartwheel/testing/
// manual_scheduler.hpp): a timer_scheduler over a timing_wheel whose time is moved by hand, starting
// at t0 (test_timers.hpp).
#ifndef HEARTWHEEL_TEST_MANUAL_SERVICE_HPP
#define HEARTWHEEL_TEST_MANUAL_SERVICE_HPP

#include <heartwheel/testing/manual_scheduler.hpp>

#include "test_timers.hpp"

namespace hwtest {

using manual_service = heartwheel::testing::manual_scheduler;
static_assert(manual_service::default_start == time_point{} + std::chrono::hours(1), "t0 is where it starts");

} // namespace hwtest

#endif
