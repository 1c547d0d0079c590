// connection_limits.cpp — handshake deadline, jittered max age.
#include <heartwheel/net/connection_limits.hpp>
#include <heartwheel/net/detail/unit_random.hpp>

#include <algorithm>
#include <cmath>

namespace heartwheel::net {

connection_limits::connection_limits(const server_limits& limits, listener& l, const random_source& rnd,
                                     timeout_scale* scale)
    : listener_(&l), handshake_timeout_(limits.handshake_timeout), handshake_min_(limits.handshake_timeout_min),
      scale_(scale) {
    limits.validate();
    if (limits.max_age.count() <= 0) return;
    const double r = rnd ? rnd() : detail::unit_random();
    const double factor = 1.0 + limits.max_age_jitter * (2.0 * r - 1.0);
    const auto base = std::chrono::duration_cast<duration>(limits.max_age);
    age_limit_ = duration(static_cast<duration::rep>(std::llround(static_cast<double>(base.count()) * factor)));
    const scaled_min& age_min = limits.max_age_min;
    const auto since = l.scheduler().stamp();
    age_ = std::make_unique<activity_timer>(static_cast<activity_timer::listener&>(*this));
    if (scale_ && age_min.enabled()) {
        // The jittered age is the max; the min follows the configured max_age.
        const auto mn = std::chrono::duration_cast<duration>(age_min.of(limits.max_age));
        age_->start_scaled(*scale_, std::min(mn, age_limit_), age_limit_, since);
    } else {
        age_->start(age_limit_, since);
    }
}

void connection_limits::on_expired(activity_timer& t, bool) {
    t.stop(); // one-shot deadlines
    if (&t == handshake_.get()) return listener_->on_handshake_timeout();
    listener_->on_max_age();
}

void connection_limits::handshake_started() {
    if (handshake_timeout_.count() <= 0) return;
    if (!handshake_) handshake_ = std::make_unique<activity_timer>(static_cast<activity_timer::listener&>(*this));
    handshake_->start(handshake_timeout_, handshake_min_, scale_, scheduler().stamp());
}

void connection_limits::stop() noexcept {
    if (handshake_) handshake_->stop();
    if (age_) age_->stop();
}

} // namespace heartwheel::net
