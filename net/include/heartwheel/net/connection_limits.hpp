// heartwheel/net/connection_limits.hpp — server-side limits on one connection: the TLS handshake
// must finish in time, and a connection is retired after a maximum age (± jitter, so a fleet of
// clients does not reconnect in lockstep) with a grace period to drain before it is forced closed.
#ifndef HEARTWHEEL_NET_CONNECTION_LIMITS_HPP
#define HEARTWHEEL_NET_CONNECTION_LIMITS_HPP

#include <heartwheel/net/activity_timer.hpp>
#include <heartwheel/net/policies.hpp>
#include <heartwheel/timer_node.hpp>
#include <heartwheel/timer_service.hpp>

#include <functional>

namespace heartwheel::net {

class connection_limits {
public:
    struct callbacks {
        std::function<void()> on_handshake_timeout; ///< close: the handshake took too long
        std::function<void()> on_max_age;           ///< start draining (say goodbye, stop reading)
        std::function<void()> on_drain_expired;     ///< drain grace is over: close now
    };
    using random_source = std::function<double()>;

    /// Arms the max-age timer (if enabled) from now. With `scale`, the handshake timeout and the max
    /// age that `overload` gives a min shrink under pressure.
    connection_limits(timer_service& svc, const server_limits& limits, callbacks cbs, random_source rnd = {},
                      const overload_policy* overload = nullptr, timeout_scale* scale = nullptr);

    void handshake_started(); ///< arms the handshake timeout (if enabled)
    void handshake_done() noexcept { handshake_.stop(); }
    void stop() noexcept;
    /// The age this connection was given (max_age with its jitter applied), zero when disabled.
    duration age_limit() const noexcept { return age_limit_; }

private:
    struct hook final : timer_node {
        explicit hook(std::function<void()> f) : fn(std::move(f)) {}
        std::function<void()> fn;
        void on_expire() override {
            if (fn) fn();
        }
    };

    timer_service& svc_;
    server_limits limits_;
    callbacks cbs_;
    scaled_min handshake_min_;
    timeout_scale* scale_;
    duration age_limit_{};
    // One-shot deadlines that are never touched: activity timers so that they can scale.
    activity_timer handshake_, age_;
    hook drain_;
};

} // namespace heartwheel::net

#endif
