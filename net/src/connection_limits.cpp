// connection_limits.cpp — handshake deadline, jittered max age, drain grace.
#include <heartwheel/net/connection_limits.hpp>
#include <heartwheel/net/detail/unit_random.hpp>

#include <algorithm>
#include <cmath>
#include <random>

namespace heartwheel::net {

connection_limits::connection_limits(timer_service& svc, const server_limits& limits, callbacks cbs,
                                     random_source rnd, const overload_policy* overload, timeout_scale* scale)
    : svc_(svc), limits_(limits), cbs_(std::move(cbs)), handshake_min_(overload ? overload->handshake_timeout : scaled_min{}),
      scale_(scale),
      handshake_(svc, this, [](void* p, bool) {
          auto& self = *static_cast<connection_limits*>(p);
          self.handshake_.stop();
          if (self.cbs_.on_handshake_timeout) self.cbs_.on_handshake_timeout();
      }),
      age_(svc, this, [](void* p, bool) {
          auto& self = *static_cast<connection_limits*>(p);
          self.age_.stop();
          if (self.limits_.drain_grace.count() > 0)
              self.svc_.schedule(self.drain_, self.svc_.deadline_after(std::chrono::duration_cast<duration>(self.limits_.drain_grace)));
          if (self.cbs_.on_max_age) self.cbs_.on_max_age();
      }),
      drain_([this] { if (cbs_.on_drain_expired) cbs_.on_drain_expired(); }) {
    limits_.validate();
    if (limits_.max_age.count() <= 0) return;
    const double r = rnd ? rnd() : detail::unit_random();
    const double factor = 1.0 + limits_.max_age_jitter * (2.0 * r - 1.0);
    const auto base = std::chrono::duration_cast<duration>(limits_.max_age);
    age_limit_ = duration(static_cast<duration::rep>(std::llround(static_cast<double>(base.count()) * factor)));
    const scaled_min age_min = overload ? overload->max_age : scaled_min{};
    const auto since = svc_.stamp();
    if (scale_ && age_min.enabled()) {
        // The jittered age is the max; the min follows the configured max_age.
        const auto mn = std::chrono::duration_cast<duration>(age_min.of(limits_.max_age));
        age_.start_scaled(*scale_, std::min(mn, age_limit_), age_limit_, since);
    } else {
        age_.start(age_limit_, since);
    }
}

void connection_limits::handshake_started() {
    if (limits_.handshake_timeout.count() <= 0) return;
    handshake_.start(limits_.handshake_timeout, handshake_min_, scale_, svc_.stamp());
}

void connection_limits::stop() noexcept {
    handshake_.stop();
    age_.stop();
    drain_.cancel();
}

} // namespace heartwheel::net
