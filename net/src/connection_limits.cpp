// connection_limits.cpp — handshake deadline, jittered max age, drain grace.
#include <heartwheel/net/connection_limits.hpp>
#include <heartwheel/net/detail/unit_random.hpp>

#include <cmath>
#include <random>

namespace heartwheel::net {

connection_limits::connection_limits(timer_service& svc, const server_limits& limits, callbacks cbs,
                                     random_source rnd)
    : svc_(svc), limits_(limits), cbs_(std::move(cbs)),
      handshake_([this] { if (cbs_.on_handshake_timeout) cbs_.on_handshake_timeout(); }),
      age_([this] {
          if (limits_.drain_grace.count() > 0)
              svc_.schedule(drain_, svc_.deadline_after(std::chrono::duration_cast<duration>(limits_.drain_grace)));
          if (cbs_.on_max_age) cbs_.on_max_age();
      }),
      drain_([this] { if (cbs_.on_drain_expired) cbs_.on_drain_expired(); }) {
    limits_.validate();
    if (limits_.max_age.count() <= 0) return;
    const double r = rnd ? rnd() : detail::unit_random();
    const double factor = 1.0 + limits_.max_age_jitter * (2.0 * r - 1.0);
    const auto base = std::chrono::duration_cast<duration>(limits_.max_age);
    age_limit_ = duration(static_cast<duration::rep>(std::llround(static_cast<double>(base.count()) * factor)));
    svc_.schedule(age_, svc_.deadline_after(age_limit_));
}

void connection_limits::handshake_started() {
    if (limits_.handshake_timeout.count() <= 0) return;
    svc_.schedule(handshake_, svc_.deadline_after(std::chrono::duration_cast<duration>(limits_.handshake_timeout)));
}

void connection_limits::stop() noexcept {
    handshake_.cancel();
    age_.cancel();
    drain_.cancel();
}

} // namespace heartwheel::net
