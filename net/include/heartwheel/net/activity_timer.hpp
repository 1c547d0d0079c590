// heartwheel/net/activity_timer.hpp — "fire when nothing happened for `timeout`", the primitive under
// idle detection, read/write timeouts and the heartbeat's ping schedule.
//
// Recording activity stores a stamp (no clock call, no re-arm). The timer is armed at
// latest_possible(last) + timeout; when it fires it compares again: if activity moved `last`, it
// re-arms lazily for the new deadline; otherwise the period really elapsed (never early against real
// time) and the callback runs with `first` telling whether activity happened since the previous
// firing. After firing it re-arms for another full period (events repeat while idleness lasts).
#ifndef HEARTWHEEL_NET_ACTIVITY_TIMER_HPP
#define HEARTWHEEL_NET_ACTIVITY_TIMER_HPP

#include <heartwheel/clock.hpp>
#include <heartwheel/timer_node.hpp>
#include <heartwheel/timer_service.hpp>

#include <functional>

namespace heartwheel::net {

class activity_timer final : public timer_node {
public:
    using callback = std::function<void(bool first)>;

    activity_timer(timer_service& svc, callback cb) : svc_(&svc), cb_(std::move(cb)) {}

    /// Starts watching with `timeout` (zero or negative: stays disabled), counting from `since`.
    void start(duration timeout, time_point since);
    void stop() noexcept { cancel(); }
    bool running() const noexcept { return pending(); }

    /// Records activity: a single store of a stamp taken by the caller (shared by several timers).
    void touch(time_point stamp) noexcept {
        if (stamp > last_) last_ = stamp;
    }
    time_point last() const noexcept { return last_; }
    duration timeout() const noexcept { return timeout_; }
    /// Changes the period of the next firing (the heartbeat's jittered interval).
    void set_timeout(duration t) noexcept { timeout_ = t; }

private:
    void on_expire() override;

    timer_service* svc_;
    callback cb_;
    duration timeout_{};
    time_point last_{};
    time_point last_fired_for_{time_point::min()};
};

} // namespace heartwheel::net

#endif
