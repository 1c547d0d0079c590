// reconnector.cpp — the attempt / wait / stable state machine; see reconnector.hpp.
#include <heartwheel/net/policies/reconnector.hpp>
#include <heartwheel/net/detail/unit_random.hpp>

#include <algorithm>
#include <cmath>

namespace heartwheel::net {

reconnector::reconnector(timer_scheduler& svc, const backoff_policy& policy, attempt_fn attempt,
                         backoff::random_source rnd, liveness_counters* counters)
    : svc_(svc), backoff_(policy, rnd), rnd_(rnd ? std::move(rnd) : backoff::random_source(detail::unit_random)),
      attempt_(std::move(attempt)), counters_(counters) {}

void reconnector::start() { fire_attempt(); }

void reconnector::fire_attempt() {
    retry_timer_.cancel();
    phase_ = phase::connecting;
    ++attempts_;
    if (counters_ && attempts_ > 1) counters_->reconnect_attempt();
    attempt_();
}

void reconnector::connected() {
    stable_timer_.cancel();
    phase_ = phase::connected;
}

void reconnector::proven() {
    if (phase_ != phase::connected || stable_timer_.pending()) return; // not connected, or proven already
    svc_.schedule(stable_timer_, svc_.deadline_after(std::chrono::duration_cast<duration>(backoff_.policy().stable_after)));
}

void reconnector::became_stable() {
    phase_ = phase::stable;
    backoff_.reset();
}

void reconnector::failed() {
    if (counters_) counters_->reconnect_failure();
    wait_then_retry();
}

void reconnector::disconnected() {
    stable_timer_.cancel();
    if (leave_window_.count() >= 0) { // asked to leave: a moment within the window, no failure
        const double r = std::clamp(rnd_(), 0.0, 1.0);
        const auto delay = milliseconds(std::llround(r * static_cast<double>(leave_window_.count())));
        leave_window_ = milliseconds(-1);
        return wait(delay);
    }
    // A connect-then-drop before stable_after counts as a failure: the backoff keeps growing.
    wait_then_retry();
}

void reconnector::wait_then_retry() { wait(backoff_.next()); }

void reconnector::wait(milliseconds delay) {
    stable_timer_.cancel();
    phase_ = phase::waiting;
    last_delay_ = delay;
    svc_.schedule(retry_timer_, svc_.deadline_after(std::chrono::duration_cast<duration>(last_delay_)));
    if (on_wait_) on_wait_(last_delay_, backoff_.failures());
}

void reconnector::reconnect_now() {
    if (phase_ == phase::waiting) fire_attempt();
}

void reconnector::stop() noexcept {
    leave_window_ = milliseconds(-1);
    retry_timer_.cancel();
    stable_timer_.cancel();
    phase_ = phase::idle;
}

} // namespace heartwheel::net
