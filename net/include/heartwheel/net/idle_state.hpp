// heartwheel/net/idle_state.hpp — reader, writer and all idle detection (Netty's IdleStateHandler).
//
// One activity_timer per enabled kind shares the connection's activity stamps: a read stamps the
// reader and all timers, a completed write (and, by default, partial write progress) the writer and
// all timers. A kind whose period is zero has no timer at all (an idle_state with only reader idle
// holds one timer). Events carry the kind and whether it is the first since the last activity, and
// repeat every period while idleness lasts. They go to a listener (an interface the owner
// implements: one pointer, not a std::function per connection), on the wheel's thread, never after
// stop() or destruction. An event is put off while the listener says the peer's bytes wait unread
// (input_waiting(): after a process stall, before the reactor has read them), and judged again
// once they are read (activity_timer.hpp): a stall never makes a talking peer look idle.
#ifndef HEARTWHEEL_NET_IDLE_STATE_HPP
#define HEARTWHEEL_NET_IDLE_STATE_HPP

#include <heartwheel/net/activity_timer.hpp>
#include <heartwheel/net/policies.hpp>

#include <memory>

namespace heartwheel::net {

enum class idle_kind { reader, writer, all };

struct idle_event {
    idle_kind kind;
    bool first; ///< the first event of this kind since the last activity
};

class idle_state final : activity_timer::listener {
public:
    /// Hears every idle event and names the scheduler; must outlive the idle_state.
    class listener {
    public:
        /// The scheduler the idle timers are filed in (the same one for the idle_state's life).
        virtual timer_scheduler& scheduler() const noexcept = 0;
        virtual void on_idle(idle_event e) = 0;
        /// Whether bytes from the peer wait unread for a read already pending: the event waits.
        virtual bool input_waiting() { return false; }

    protected:
        ~listener() = default;
    };

    /// Validates the policy (config_error) and starts the enabled timers from now. With `scale`,
    /// the kinds given a min (`reader_idle_min`, ...) shrink under pressure (timeout_scale.hpp).
    idle_state(const idle_policy& policy, listener& l, timeout_scale* scale = nullptr);
    idle_state(const idle_state&) = delete;
    idle_state& operator=(const idle_state&) = delete;

    void on_read(time_point stamp) {
        touch(idle_kind::reader, stamp);
        touch(idle_kind::all, stamp);
    }
    void on_read() { on_read(scheduler().stamp()); }
    void on_write_complete(time_point stamp) {
        touch(idle_kind::writer, stamp);
        touch(idle_kind::all, stamp);
    }
    void on_write_complete() { on_write_complete(scheduler().stamp()); }
    /// Some bytes of a write went out; counts only if the policy's write_progress_is_activity.
    void on_write_progress(time_point stamp) {
        if (progress_is_activity_) on_write_complete(stamp);
    }
    void on_write_progress() { on_write_progress(scheduler().stamp()); }

    void stop() noexcept;

private:
    void touch(idle_kind k, time_point stamp) {
        if (auto& t = timers_[static_cast<int>(k)]) t->touch(stamp);
    }
    void on_expired(activity_timer& t, bool first) override;
    timer_scheduler& scheduler() const noexcept override { return listener_->scheduler(); }
    bool put_off(const activity_timer&) override { return listener_->input_waiting(); }

    listener* listener_;
    std::unique_ptr<activity_timer> timers_[3]; ///< by idle_kind; null when that kind is disabled
    bool progress_is_activity_;
};

} // namespace heartwheel::net

#endif
