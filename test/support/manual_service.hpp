// manual_service.hpp — a timer_scheduler over a timing_wheel whose time is moved by hand.
//
// `lag` simulates a stale cached clock: stamp() returns now - lag, and latest_possible() adds the lag
// back, which is exactly the contract asio_wheel's activity clock keeps.
#ifndef HEARTWHEEL_TEST_MANUAL_SERVICE_HPP
#define HEARTWHEEL_TEST_MANUAL_SERVICE_HPP

#include <heartwheel/timer_scheduler.hpp>

#include "test_timers.hpp"

namespace hwtest {

class manual_service final : public heartwheel::timer_scheduler {
public:
    explicit manual_service(duration tick = std::chrono::milliseconds(1))
        : wheel_(t0, config(tick)), now_(t0) {}

    heartwheel::timing_wheel& wheel() noexcept { return wheel_; }
    duration tick() const noexcept override { return wheel_.tick(); }
    time_point tick_start(time_point t) const noexcept override { return wheel_.time_of(wheel_.tick_floor(t)); }
    time_point now() noexcept override { return now_; }
    time_point stamp() override { return now_ - lag; }
    time_point latest_possible(time_point s) override { return s + lag; }
    void schedule(heartwheel::timer_node& t, time_point deadline) override {
        ++schedules;
        wheel_.schedule(t, deadline);
    }

    void schedule_exact(heartwheel::timer_node& t, time_point deadline) override {
        ++schedules;
        wheel_.schedule_exact(t, deadline);
    }

    void advance_to(time_point t) {
        now_ = t;
        wheel_.advance(t);
    }
    void advance_by(duration d) { advance_to(now_ + d); }
    /// Advances in steps of one tick up to `d` later, so firing times are observed exactly.
    void step_by(duration d, duration step = std::chrono::milliseconds(1)) {
        const time_point end = now_ + d;
        while (now_ < end) advance_to(std::min(end, now_ + step));
    }
    duration since_start() const { return now_ - t0; }

    duration lag{};
    std::uint64_t schedules = 0;

private:
    static heartwheel::wheel_config config(duration tick) {
        heartwheel::wheel_config c;
        c.tick = tick;
        return c;
    }
    heartwheel::timing_wheel wheel_;
    time_point now_;
};

} // namespace hwtest

#endif
