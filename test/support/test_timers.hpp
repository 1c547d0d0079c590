// test_timers.hpp — helpers shared by the wheel tests: a manual time base and recording timers.
#ifndef HEARTWHEEL_TEST_TIMERS_HPP
#define HEARTWHEEL_TEST_TIMERS_HPP

#include <heartwheel/timing_wheel.hpp>

#include <functional>
#include <vector>

namespace hwtest {

using namespace std::chrono_literals;
using heartwheel::duration;
using heartwheel::time_point;

/// A fixed origin for manual time: t0 + 5ms is "5 ms after the wheel started".
inline const time_point t0 = time_point{} + std::chrono::hours(1);

/// A timer that appends its id to a log and then runs an optional action.
struct recording_timer final : heartwheel::timer_node {
    recording_timer(std::vector<int>& log, int id) : log(&log), id(id) {}
    std::vector<int>* log;
    int id;
    std::function<void()> action;
    void on_expire() override {
        log->push_back(id);
        if (action) action();
    }
};

struct recording_periodic final : heartwheel::periodic_timer {
    std::vector<std::uint64_t> fired_at;
    heartwheel::timing_wheel* w = nullptr;
    void on_expire() override { fired_at.push_back(w->elapsed_tick()); }
};

} // namespace hwtest

#endif
