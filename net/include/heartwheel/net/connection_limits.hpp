// heartwheel/net/connection_limits.hpp — server-side limits on one connection: the TLS handshake
// must finish in time, and a connection is retired after a maximum age (± jitter, so a fleet of
// clients does not reconnect in lockstep); its goodbye then lingers as any close does (the
// connection's linger: gRPC's MAX_CONNECTION_AGE_GRACE).
//
// The handshake's deadline holds a timer only from handshake_started() to handshake_done(). The age
// is a deadline its owner's timer node waits for (age_due(): connection_liveness files one node per
// connection for the idle kinds and the age, not one per policy) — except an age that scales under
// overload, which waits in the timeout_scale's queue on an activity_timer of its own. Expiries of
// those timers go to a listener the owner implements (one pointer), never after stop() or
// destruction.
#ifndef HEARTWHEEL_NET_CONNECTION_LIMITS_HPP
#define HEARTWHEEL_NET_CONNECTION_LIMITS_HPP

#include <heartwheel/net/activity_timer.hpp>
#include <heartwheel/net/policies.hpp>
#include <heartwheel/timer_node.hpp>
#include <heartwheel/timer_scheduler.hpp>

#include <functional>
#include <memory>

namespace heartwheel::net {

class connection_limits final : activity_timer::listener {
public:
    /// What the limits ask of their owner; must outlive the connection_limits.
    class listener {
    public:
        /// The scheduler the deadlines are filed in (the same one for the limits' life).
        virtual timer_scheduler& scheduler() const noexcept = 0;
        /// The overload's scale (timeout_scale.hpp), if the deadlines given a min shrink under it.
        virtual timeout_scale* scale() const noexcept { return nullptr; }
        virtual void on_handshake_timeout() = 0; ///< close: the handshake took too long
        virtual void on_max_age() = 0;           ///< retire it (say goodbye; the close lingers as any)

    protected:
        ~listener() = default;
    };
    using random_source = std::function<double()>;

    /// Arms the max-age timer (if enabled) from now, its jitter drawn from `rnd` (uniform in [0, 1);
    /// a default source when empty). With the listener's scale(), the handshake timeout and the max
    /// age given a min (`handshake_timeout_min`, `max_age_min`) shrink under pressure.
    connection_limits(const server_limits& limits, listener& l, const random_source& rnd = {});
    connection_limits(const connection_limits&) = delete;
    connection_limits& operator=(const connection_limits&) = delete;

    void handshake_started(); ///< arms the handshake timeout (if enabled)
    void handshake_done() noexcept { handshake_.reset(); }
    /// When the age ends, for its owner's timer node to close at (time_point::max(): no max age, or
    /// one that scales and fires on_max_age() itself). Never early against real time.
    time_point age_due() const noexcept { return age_due_; }
    void stop() noexcept;

private:
    void on_expired(activity_timer& t, bool) override;
    timer_scheduler& scheduler() const noexcept override { return listener_->scheduler(); }

    listener* listener_;
    milliseconds handshake_timeout_;
    milliseconds handshake_min_; ///< handshake_timeout_min resolved against the timeout; negative: none
    std::unique_ptr<activity_timer> handshake_; ///< a one-shot deadline: an activity timer so that it can scale
    std::unique_ptr<activity_timer> age_;       ///< only for an age that scales
    time_point age_due_ = time_point::max();   ///< an age that does not scale
};

} // namespace heartwheel::net

#endif
