// heartwheel/net/policies/backoff.hpp — reconnect delays: gRPC's connection backoff and AWS's jitter family.
//
// next() returns the delay before the next attempt and grows the backoff:
//  grpc:         min(min(initial * multiplier^k, max) * (1 ± jitter), max)   (gRPC connection-backoff.md,
//                but `max` is a hard cap here: at the cap the jitter only shortens, never lengthens)
//  full:         uniform(0, min(initial * multiplier^k, max))
//  equal:        b/2 + uniform(0, b/2), b = min(initial * multiplier^k, max)
//  decorrelated: min(max, uniform(initial, 3 * previous delay))
// connect_timeout() is max(min_connect_timeout, current backoff), as gRPC's rule. The random source is
// injectable: a function returning uniform doubles in [0, 1).
#ifndef HEARTWHEEL_NET_BACKOFF_HPP
#define HEARTWHEEL_NET_BACKOFF_HPP

#include <heartwheel/net/policies/policies.hpp>

#include <functional>

namespace heartwheel::net {

class backoff {
public:
    using random_source = std::function<double()>;

    explicit backoff(const backoff_policy& policy, random_source rnd = {});

    /// The delay before the next attempt; each call counts one more failure.
    milliseconds next();
    /// How long the next connection attempt may take.
    milliseconds connect_timeout() const;
    /// Back to the initial delay (after a stable connection).
    void reset() noexcept;
    unsigned failures() const noexcept { return failures_; }
    const backoff_policy& policy() const noexcept { return policy_; }

private:
    double uniform(double lo, double hi) { return lo + (hi - lo) * rnd_(); }

    backoff_policy policy_;
    random_source rnd_;
    double current_ms_;   ///< the un-jittered backoff for the next attempt
    double previous_ms_;  ///< the last delay returned (decorrelated)
    unsigned failures_ = 0;
};

} // namespace heartwheel::net

#endif
