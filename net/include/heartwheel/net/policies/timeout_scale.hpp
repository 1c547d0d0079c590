// heartwheel/net/policies/timeout_scale.hpp — timeouts that shrink under overload (Envoy's reduce_timeouts).
//
// Idea: a scalable timeout has a max (its configured value) and a min; the current scale s in [0, 1]
// gives it min + s * (max - min). A pressure p in [0, 1] sets s: 1 at or below the threshold, falling
// linearly to 0 at p = 1 — so a server filling up with idle connections sheds them early instead of
// refusing healthy new ones.
//
// A scale change must not cost in proportion to the timers it does not affect (Envoy's
// ScaledRangeTimerManager; the same shape here, on the wheel):
//  - a scaled timer first waits its min on the wheel like any timer: no scale can make it due sooner;
//  - once its min has passed with no activity it joins the FIFO queue of its range (max - min), keyed
//    by the time its min ran out. Entries join as their mins run out, so keys within a queue are in
//    order (to within the tick in which they fired), and so are their scaled deadlines
//    key + s * range: only a queue's head needs a wheel timer;
//  - a scale change re-arms one head per queue. A head whose new deadline has passed fires at the
//    next tick and the queue pops every entry that is due: the cost is the queues plus the entries
//    really affected, never the timers still in their min or further back in a queue;
//  - activity on a queued timer unlinks it (two stores) and sends it back to wait its min.
// Invariants: an entry never fires before key + s * range >= its last activity + min; with the
// pressure back at or below the threshold every timeout is its max again. One timeout_scale per
// wheel (per thread), destroyed before its wheel; timers it still holds when destroyed are let go
// of (they never fire again), so teardown order between it and its timers does not matter.
#ifndef HEARTWHEEL_NET_TIMEOUT_SCALE_HPP
#define HEARTWHEEL_NET_TIMEOUT_SCALE_HPP

#include <heartwheel/clock.hpp>
#include <heartwheel/net/detail/list_hook.hpp>
#include <heartwheel/timer_node.hpp>
#include <heartwheel/timer_scheduler.hpp>

#include <cstdint>
#include <memory>
#include <vector>

namespace heartwheel::net {

class timeout_scale {
public:
    /// `threshold`: the pressure at and below which nothing scales (Envoy's scaled trigger shape).
    explicit timeout_scale(timer_scheduler& svc, double threshold = 0.8);
    ~timeout_scale();
    timeout_scale(const timeout_scale&) = delete;
    timeout_scale& operator=(const timeout_scale&) = delete;

    /// Sets the pressure (clamped to [0, 1]) and from it the scale. Applications feed their own
    /// sources here (memory, queue depth): pass the highest.
    void set_pressure(double p);
    /// Sets the scale directly: 1 = every timeout at its max, 0 = at its min.
    void set_scale(double s);
    double pressure() const noexcept { return pressure_; }
    double scale() const noexcept { return scale_; }
    double threshold() const noexcept { return threshold_; }
    bool scaled() const noexcept { return scale_ < 1.0; }

    /// min + scale * (max - min), rounded down to the nanosecond (never below min).
    duration scaled(duration min, duration max) const noexcept;

    /// How many range queues exist and how many timers wait in them (for metrics and tests).
    std::size_t queues() const noexcept { return queues_.size(); }
    std::size_t queued() const noexcept;
    /// Times a scaled timer fired while the scale was below 1.
    std::uint64_t fired_while_scaled() const noexcept { return fired_while_scaled_; }

    /// What waits in a range queue: a scaled timer whose min has run out (activity_timer's). The
    /// queue calls expired() when its scaled deadline comes; activity brings it back with dequeue().
    struct entry : detail::list_hook {
        virtual void expired(time_point now) = 0;
        time_point key{};        ///< when its min ran out
        std::uint32_t queue = 0; ///< which range queue

    protected:
        ~entry() = default;
    };

    /// Files `e` (its min has run out at `key`) in the queue of `range`.
    void enqueue(entry& e, duration range, time_point key);
    /// Takes `e` out of its queue (activity, or its timer stopped). Idempotent.
    void dequeue(entry& e) noexcept;
    /// A scaled timer expired without waiting in a queue (it was due already): counted as a close
    /// while scaled when the scale is below 1.
    void count_unqueued_expiry() noexcept {
        if (scaled()) ++fired_while_scaled_;
    }

private:
    struct range_queue final : timer_node {
        range_queue(timeout_scale& o, duration r) : owner(&o), range(r) {}
        timeout_scale* owner;
        duration range;
        detail::list_head entries;
        std::size_t size = 0;
        void on_expire() override { owner->drain(*this); }
    };

    void drain(range_queue& q);
    void arm(range_queue& q);

    timer_scheduler& svc_;
    double threshold_;
    double pressure_ = 0.0;
    double scale_ = 1.0;
    std::uint64_t fired_while_scaled_ = 0;
    std::vector<std::unique_ptr<range_queue>> queues_; // few: one per distinct (max - min)
};

/// The scale for pressure `p` under `threshold`: 1 at or below it, linear to 0 at p = 1.
double scale_for_pressure(double p, double threshold) noexcept;

} // namespace heartwheel::net

#endif
