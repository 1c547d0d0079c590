// heartwheel/net/policies/connection_limits.hpp — server-side limits on one connection: the TLS handshake
// must finish in time, and a connection is retired after a maximum age (± jitter, so a fleet of
// clients does not reconnect in lockstep); its goodbye then lingers as any close does (the
// connection's linger: gRPC's MAX_CONNECTION_AGE_GRACE).
//
// The limits are data and, only while they can fire, timers whose expiries their owner hears: the
// handshake's deadline holds an activity_timer from handshake_started() to handshake_done(); the age
// is a deadline the owner's timer node waits for (age_due(): connection_liveness files one node per
// connection for the idle kinds and the age, not one per policy) — except an age that scales under
// overload, which waits in the timeout_scale's queue on an activity_timer of its own. The owner is
// those timers' listener (one interface it implements anyway, not a listener of the limits' own
// and a pointer back to it) and asks expired() which deadline one of them was; after stop() or
// destruction none fires.
#ifndef HEARTWHEEL_NET_CONNECTION_LIMITS_HPP
#define HEARTWHEEL_NET_CONNECTION_LIMITS_HPP

#include <heartwheel/net/policies/activity_timer.hpp>
#include <heartwheel/net/policies/policies.hpp>
#include <heartwheel/timer_scheduler.hpp>

#include <functional>
#include <memory>

namespace heartwheel::net {

class connection_limits {
public:
    using random_source = std::function<double()>;
    /// The deadline an expired timer of the limits stands for.
    enum class deadline { handshake, age };

    /// Computes the max age (if enabled) from now, its jitter drawn from `rnd` (uniform in [0, 1); a
    /// default source when empty). `timers` hears the limits' timers and names the scheduler; it
    /// must outlive the limits. With `scale`, the handshake timeout and the max age given a min
    /// (`handshake_timeout_min`, `max_age_min`) shrink under pressure.
    connection_limits(const server_limits& limits, activity_timer::listener& timers, timeout_scale* scale = nullptr,
                      const random_source& rnd = {});
    connection_limits(const connection_limits&) = delete;
    connection_limits& operator=(const connection_limits&) = delete;

    /// Arms the handshake timeout of `limits` (if enabled: the limits given to the constructor, or
    /// equal ones; not kept, so they are given again); `timers` and `scale` as for the constructor.
    void handshake_started(const server_limits& limits, activity_timer::listener& timers, timeout_scale* scale);
    void handshake_done() noexcept { handshake_.reset(); }
    /// When the age ends, for its owner's timer node to close at (time_point::max(): no max age, or
    /// one that scales and has a timer of its own). Never early against real time.
    time_point age_due() const noexcept { return age_due_; }
    /// Which deadline `t`, a timer of these limits that just expired, stands for; it is stopped
    /// (the deadlines are one-shot).
    deadline expired(activity_timer& t) noexcept;
    void stop() noexcept;

private:
    std::unique_ptr<activity_timer> handshake_; ///< a one-shot deadline: an activity timer so that it can scale
    std::unique_ptr<activity_timer> age_;       ///< only for an age that scales
    time_point age_due_ = time_point::max();   ///< an age that does not scale
};

} // namespace heartwheel::net

#endif
