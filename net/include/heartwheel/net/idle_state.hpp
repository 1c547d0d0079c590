// heartwheel/net/idle_state.hpp — reader, writer and all idle detection (Netty's IdleStateHandler).
//
// Three activity_timers share the connection's activity stamps: a read stamps the reader and all
// timers, a completed write (and, by default, partial write progress) the writer and all timers.
// Events carry the kind and whether it is the first since the last activity, and repeat every
// period while idleness lasts. Callbacks run on the wheel's thread and never after stop() or
// destruction.
#ifndef HEARTWHEEL_NET_IDLE_STATE_HPP
#define HEARTWHEEL_NET_IDLE_STATE_HPP

#include <heartwheel/net/activity_timer.hpp>
#include <heartwheel/net/policies.hpp>

#include <functional>

namespace heartwheel::net {

enum class idle_kind { reader, writer, all };

/// "reader-idle", "writer-idle", "all-idle": the names the echo server's BYE lines use.
const char* to_string(idle_kind k) noexcept;

struct idle_event {
    idle_kind kind;
    bool first; ///< the first event of this kind since the last activity
};

class idle_state {
public:
    using handler = std::function<void(idle_event)>;

    /// Validates the policy (config_error) and starts the enabled timers from now. With `scale`,
    /// the kinds that `overload` gives a min shrink under pressure (timeout_scale.hpp).
    idle_state(timer_service& svc, const idle_policy& policy, handler on_idle,
               const overload_policy* overload = nullptr, timeout_scale* scale = nullptr);
    idle_state(const idle_state&) = delete;
    idle_state& operator=(const idle_state&) = delete;

    void on_read(time_point stamp) {
        reader_.touch(stamp);
        all_.touch(stamp);
    }
    void on_read() { on_read(svc_.stamp()); }
    void on_write_complete(time_point stamp) {
        writer_.touch(stamp);
        all_.touch(stamp);
    }
    void on_write_complete() { on_write_complete(svc_.stamp()); }
    /// Some bytes of a write went out; counts only if write_progress_is_activity.
    void on_write_progress(time_point stamp) {
        if (policy_.write_progress_is_activity) on_write_complete(stamp);
    }
    void on_write_progress() { on_write_progress(svc_.stamp()); }

    void stop() noexcept;
    const idle_policy& policy() const noexcept { return policy_; }

private:
    timer_service& svc_;
    idle_policy policy_;
    handler on_idle_;
    activity_timer reader_, writer_, all_;
};

} // namespace heartwheel::net

#endif
