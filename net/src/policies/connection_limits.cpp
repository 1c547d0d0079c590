// connection_limits.cpp — handshake deadline, jittered max age (its owner's node waits for it).
#include <heartwheel/net/policies/connection_limits.hpp>
#include <heartwheel/net/detail/unit_random.hpp>

#include <algorithm>
#include <cmath>

namespace heartwheel::net {

connection_limits::connection_limits(const server_limits& limits, activity_timer::listener& timers, timeout_scale* scale,
                                     const random_source& rnd)
{
    limits.validate();
    if (limits.max_age.count() <= 0) return;
    const double r = rnd ? rnd() : detail::unit_random();
    const double factor = 1.0 + limits.max_age_jitter * (2.0 * r - 1.0);
    const auto base = std::chrono::duration_cast<duration>(limits.max_age);
    const auto age_limit = duration(static_cast<duration::rep>(std::llround(static_cast<double>(base.count()) * factor)));
    const scaled_min& age_min = limits.max_age_min;
    timer_scheduler& svc = timers.scheduler();
    const auto since = svc.stamp();
    if (scale && age_min.enabled()) {
        // The jittered age is the max; the min follows the configured max_age.
        const auto mn = std::chrono::duration_cast<duration>(age_min.of(limits.max_age));
        age_ = std::make_unique<activity_timer>(timers);
        age_->start_scaled(*scale, std::min(mn, age_limit), age_limit, since);
    } else {
        age_due_ = saturating_add(svc.latest_possible(since), age_limit); // never early
    }
}

connection_limits::deadline connection_limits::expired(activity_timer& t) noexcept {
    t.stop(); // one-shot deadlines
    return &t == handshake_.get() ? deadline::handshake : deadline::age;
}

void connection_limits::handshake_started(const server_limits& limits, activity_timer::listener& timers,
                                          timeout_scale* scale) {
    if (limits.handshake_timeout.count() <= 0) return;
    if (!handshake_) handshake_ = std::make_unique<activity_timer>(timers);
    // handshake_timeout_min resolved against the timeout; negative: none
    const milliseconds min = limits.handshake_timeout_min.enabled()
                                 ? limits.handshake_timeout_min.of(limits.handshake_timeout)
                                 : milliseconds(-1);
    using std::chrono::duration_cast;
    handshake_->start(duration_cast<duration>(limits.handshake_timeout), duration_cast<duration>(min), scale,
                      timers.scheduler().stamp());
}

void connection_limits::stop() noexcept {
    if (handshake_) handshake_->stop();
    if (age_) age_->stop(); // its place in the scale's queue too
    age_due_ = time_point::max();
}

} // namespace heartwheel::net
