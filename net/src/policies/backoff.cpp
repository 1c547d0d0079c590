// backoff.cpp — the four strategies; see backoff.hpp.
#include <heartwheel/net/policies/backoff.hpp>

#include <algorithm>
#include <cmath>
#include <random>

namespace heartwheel::net {

backoff::backoff(const backoff_policy& policy, random_source rnd)
    : policy_(policy), rnd_(std::move(rnd)), current_ms_(static_cast<double>(policy.initial.count())),
      previous_ms_(static_cast<double>(policy.initial.count())) {
    policy_.validate();
    if (!rnd_) {
        rnd_ = [engine = std::mt19937_64(std::random_device{}())]() mutable {
            return std::uniform_real_distribution<double>(0.0, 1.0)(engine);
        };
    }
}

milliseconds backoff::next() {
    const double cap = static_cast<double>(policy_.max.count());
    const double base = std::min(current_ms_, cap);
    double delay = base;
    switch (policy_.strategy) {
    case backoff_strategy::grpc: delay = std::min(cap, base * (1.0 + policy_.jitter * (2.0 * rnd_() - 1.0))); break;
    case backoff_strategy::full: delay = uniform(0.0, base); break;
    case backoff_strategy::equal: delay = base / 2.0 + uniform(0.0, base / 2.0); break;
    case backoff_strategy::decorrelated:
        delay = std::min(cap, uniform(static_cast<double>(policy_.initial.count()), previous_ms_ * 3.0));
        break;
    }
    previous_ms_ = std::max(delay, static_cast<double>(policy_.initial.count()));
    current_ms_ = std::min(current_ms_ * policy_.multiplier, cap);
    ++failures_;
    return milliseconds(std::llround(std::max(delay, 0.0)));
}

milliseconds backoff::connect_timeout() const {
    return std::max(policy_.min_connect_timeout, milliseconds(std::llround(std::min(current_ms_, static_cast<double>(policy_.max.count())))));
}

void backoff::reset() noexcept {
    current_ms_ = previous_ms_ = static_cast<double>(policy_.initial.count());
    failures_ = 0;
}

} // namespace heartwheel::net
