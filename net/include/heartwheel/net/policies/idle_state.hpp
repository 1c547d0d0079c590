// heartwheel/net/policies/idle_state.hpp — reader, writer and all idle detection (Netty's IdleStateHandler).
//
// A read stamps the reader and all kinds, a completed write (and, by default, partial write progress)
// the writer and all kinds: a stamp is a store, nothing is re-armed. A kind whose period is zero is
// off. Events carry the kind and whether it is the first since the last activity, and repeat every
// period while idleness lasts: the n-th event of an idle spell falls due n periods after the
// spell's last activity (never early against real time: the stamp's bound counts), so a late
// wake-up does not push the next repeat later, and a wake-up later than several periods (a stall)
// gives one event, not a burst.
//
// The kinds that do not scale hold no timer of their own: idle_state is their data — the stamps and
// the events taken since the last activity (the periods it reads from its policy) — and its owner's
// one timer node waits for due() and collects the events with take() (connection_liveness: one node per connection for
// the idle kinds and the max age, not one per policy; it also puts an event off while the peer's
// bytes wait unread). A kind given a min under overload (`reader_idle_min`, ...: timeout_scale.hpp)
// waits in the timeout_scale's queue on an activity_timer of its own, allocated only then, and its
// events go straight to the listener (never after stop() or destruction; an event is put off while
// the listener says the peer's bytes wait unread, and judged again once they are read).
#ifndef HEARTWHEEL_NET_IDLE_STATE_HPP
#define HEARTWHEEL_NET_IDLE_STATE_HPP

#include <heartwheel/net/policies/activity_timer.hpp>
#include <heartwheel/net/policies/policies.hpp>
#include <heartwheel/net/policies/policy_runtime.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>

namespace heartwheel::net {

enum class idle_kind { reader, writer, all };

struct idle_event {
    idle_kind kind;
    bool first; ///< the first event of this kind since the last activity
};

class idle_state {
public:
    /// Names the scheduler (its stamps come from it) and hears the events of the kinds that scale
    /// (on_idle; input_waiting(): bytes from the peer wait unread, the event waits); must outlive
    /// the idle_state. The policies' one interface (policy_runtime.hpp).
    using listener = policy_host;

    /// Validates the policy (config_error) and starts the enabled kinds from now. With `scale`, the
    /// kinds given a min (`reader_idle_min`, ...) shrink under pressure (timeout_scale.hpp). The
    /// policy is read, not kept: due() and take() are given it again (a connection's is in the
    /// settings its connections share: detail/liveness_settings.hpp).
    idle_state(const idle_policy& policy, listener& l, timeout_scale* scale = nullptr);
    idle_state(const idle_policy&&, listener&, timeout_scale* = nullptr) = delete;
    ~idle_state();
    idle_state(const idle_state&) = delete;
    idle_state& operator=(const idle_state&) = delete;

    void on_read(time_point stamp) {
        if (stamp > last_read_) {
            last_read_ = stamp;
            taken_[reader] = taken_[all] = 0;
        }
        if (scaled_) scaled_on_read(stamp);
    }
    void on_write_complete(time_point stamp) {
        if (stamp > last_write_) {
            last_write_ = stamp;
            taken_[writer] = taken_[all] = 0;
        }
        if (scaled_) scaled_on_write(stamp);
    }
    /// Some bytes of a write went out; counts only if the policy's write_progress_is_activity.
    void on_write_progress(time_point stamp) {
        if (progress_is_activity_) on_write_complete(stamp);
    }

    /// When the next event of the kinds without a timer of their own falls due; time_point::max()
    /// when none is on. Moves later with activity (never earlier): a node filed for it may wake
    /// early and file itself again.
    time_point due(const idle_policy& policy, timer_scheduler& svc) const;
    /// Takes the events of those kinds due at `now` into `out` (reader, writer, all: at most one
    /// each) and returns how many; each kind's next event falls due a period later.
    std::size_t take(const idle_policy& policy, timer_scheduler& svc, time_point now, idle_event (&out)[3]);

    /// No more events (the kinds that scale stop their timers; the others are the owner's to stop).
    void stop() noexcept;
    bool stopped() const noexcept { return stopped_; }

private:
    enum : std::uint8_t { reader, writer, all };
    class scaled_kinds;
    time_point last(int k) const noexcept; ///< the kind's last activity
    /// The kind's period when the owner's node waits for it; zero when it is off, scales or stopped.
    duration period(const idle_policy& policy, int k) const noexcept;
    time_point due(timer_scheduler& svc, int k, duration period) const;
    void scaled_on_read(time_point stamp);
    void scaled_on_write(time_point stamp);

    // 40 bytes, no timer: the two stamps and each kind's events taken since its last activity (the
    // policy is the owner's, shared by its connections).
    time_point last_read_{}, last_write_{};
    std::uint32_t taken_[3]{};
    std::uint8_t scaling_ = 0; ///< bit per kind that scales (it has a timer of its own)
    bool stopped_ = false;
    bool progress_is_activity_; ///< the policy's, read per write progress (a byte of padding otherwise)
    std::unique_ptr<scaled_kinds> scaled_; ///< only when a kind scales
};

} // namespace heartwheel::net

#endif
