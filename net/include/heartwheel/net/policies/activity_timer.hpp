// heartwheel/net/policies/activity_timer.hpp — "fire when nothing happened for `timeout`", the primitive under
// the read/write timeouts, the handshake deadline and every timeout that scales under overload (the
// idle kinds and the max age that do not scale are data in connection_liveness's one node instead).
//
// Recording activity stores a stamp (no clock call, no re-arm). The timer is armed at
// latest_possible(last) + timeout; when it fires it compares again: if activity moved `last`, it
// re-arms lazily for the new deadline; otherwise the period really elapsed (never early against real
// time) and the callback runs with `first` telling whether activity happened since the previous
// firing. After firing it re-arms for another full period (events repeat while idleness lasts).
//
// Scaled (start_scaled): the period shrinks under overload between a min and a max (timeout_scale.hpp).
// The timer waits its min here; when min passes with no activity it moves to its range's queue in the
// timeout_scale, which fires it at the scaled deadline. Activity while queued (touch) takes it out
// of the queue and back to its min: touch is then not a single store, once per idle period.
//
// Putting an expiry off: just before it would run, the timer asks its listener put_off(). A listener
// that knows the peer's bytes are waiting unread (a process stall: the reactor has not read them yet)
// answers true, and the timer looks again unread_input_recheck later instead of expiring; the read,
// once it runs, moves `last` and the look finds the timer no longer due. Only ever later, never early.
//
// Layout (56 bytes, a heap block of 64; a connection has several): the wheel node, the listener
// pointer with two flags in its low bits (an expiry since the last activity: the next one is not
// `first`; the timer scales), the last activity, and one word that is the period of a plain timer or
// the state of a scaled one (its min, its range, its place in the scale's queue).
#ifndef HEARTWHEEL_NET_ACTIVITY_TIMER_HPP
#define HEARTWHEEL_NET_ACTIVITY_TIMER_HPP

#include <heartwheel/clock.hpp>
#include <heartwheel/timer_node.hpp>
#include <heartwheel/timer_scheduler.hpp>
#include <heartwheel/net/policies/policies.hpp>
#include <heartwheel/net/policies/timeout_scale.hpp>

#include <cstdint>
#include <functional>
#include <memory>

namespace heartwheel::net {

/// How long a put-off expiry waits before it asks again (activity_timer::listener::put_off; the
/// heartbeat's miss judgement uses the same).
inline constexpr duration unread_input_recheck = std::chrono::milliseconds(10);

class activity_timer final : public timer_node {
public:
    /// Hears the timer's expiries and names its scheduler (an interface its owner implements: one
    /// pointer per timer, not a std::function and a scheduler — a connection has several of these
    /// timers, and their owner knows the scheduler already). Must outlive the timer.
    class listener {
    public:
        /// The scheduler the timer is filed in (the same one for the timer's life).
        virtual timer_scheduler& scheduler() const noexcept = 0;
        /// The timeout elapsed with no activity; `first`: activity happened since the previous
        /// expiry. Runs last in the timer's call: it may stop or destroy the timer.
        virtual void on_expired(activity_timer& t, bool first) = 0;
        /// Asked just before an expiry: true puts it off by unread_input_recheck (see the top of
        /// this file). Must not stop or destroy the timer.
        virtual bool put_off(const activity_timer&) { return false; }

    protected:
        ~listener() = default;
    };

    explicit activity_timer(listener& l) noexcept : listener_bits_(reinterpret_cast<std::uintptr_t>(&l)) {}
    ~activity_timer() override {
        stop();
        drop_scaled();
    }

    /// Starts watching with `timeout` (zero or negative: stays disabled), counting from `since`.
    void start(duration timeout, time_point since);
    /// Starts watching with a timeout that `scale` moves between `min` and `max` (min >= max, or a
    /// zero max: like start(max, since)).
    void start_scaled(timeout_scale& scale, duration min, duration max, time_point since);
    /// Scaled between an already resolved `min` and `max` when `scale` is given and `min` is not
    /// negative (none), plain otherwise.
    void start(duration max, duration min, timeout_scale* scale, time_point since);
    /// A configured timeout: scaled when `scale` is given and `min` is set, plain otherwise.
    void start(milliseconds max, const scaled_min& min, timeout_scale* scale, time_point since);
    void stop() noexcept;
    bool running() const noexcept { return pending() || queued(); }
    /// Waiting in its timeout_scale's queue (its min has passed with no activity).
    bool queued() const noexcept { return scaled() && scaled()->entry.linked(); }

    /// Records activity: a store of a stamp taken by the caller (shared by several timers); for a
    /// queued scaled timer also its way back to waiting its min.
    void touch(time_point stamp) {
        if (stamp > last_) {
            last_ = stamp;
            listener_bits_ &= ~fired_bit;
            if (listener_bits_ & scaled_bit && period_.scaled->entry.linked()) requeue();
        }
    }

private:
    /// Its place in a range queue of the timeout_scale: the queue calls back the timer.
    struct queue_place final : timeout_scale::entry {
        explicit queue_place(activity_timer& t) : timer(&t) {}
        void expired(time_point now) override { timer->expired(now); }
        activity_timer* timer;
    };
    struct scaled_state {
        scaled_state(activity_timer& t, timeout_scale& s, duration mn, duration r) : scale(&s), min(mn), range(r), entry(t) {}
        timeout_scale* scale;
        duration min;   ///< the period waited on the wheel
        duration range; ///< max - min
        queue_place entry;
        time_point fired_at = time_point::min(); ///< a repeat counts its min from here
    };
    void on_expire() override;
    /// When the current period ends: the bound of the last activity's stamp + the period (a scaled
    /// timer's: its min). What an expiry is judged against.
    time_point due() const;
    /// Files the timer at the bound of its last activity + its period.
    void arm_for_last();
    void requeue();
    void expired(time_point now);

    static constexpr std::uintptr_t fired_bit = 1;  ///< it expired since the last activity
    static constexpr std::uintptr_t scaled_bit = 2; ///< period_ holds a scaled_state
    static_assert(alignof(listener) > (fired_bit | scaled_bit), "the flags live in the listener pointer's low bits");

    listener* listener_() const noexcept { return reinterpret_cast<listener*>(listener_bits_ & ~(fired_bit | scaled_bit)); }
    timer_scheduler& svc() const noexcept { return listener_()->scheduler(); }
    scaled_state* scaled() const noexcept { return listener_bits_ & scaled_bit ? period_.scaled : nullptr; }
    /// What the wheel waits after the last activity: the period, or a scaled timer's min.
    duration wheel_period() const noexcept { return listener_bits_ & scaled_bit ? period_.scaled->min : period_.plain; }
    void drop_scaled() noexcept;

    std::uintptr_t listener_bits_; ///< the listener, | fired_bit, | scaled_bit
    time_point last_{};
    union {
        duration plain{}; ///< a plain timer's period
        scaled_state* scaled; ///< a scaled timer's state (owned): only scaled timers pay for it
    } period_;
};

} // namespace heartwheel::net

#endif
