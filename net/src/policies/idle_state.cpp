// idle_state.cpp — the idle kinds' due times and events; the kinds that scale on timers of their own.
#include <heartwheel/net/policies/idle_state.hpp>

#include <algorithm>

namespace heartwheel::net {

// The kinds given a min under overload: each an activity_timer waiting in the timeout_scale's queue,
// its events straight to the listener. Allocated only when a kind scales.
class idle_state::scaled_kinds final : activity_timer::listener {
public:
    explicit scaled_kinds(idle_state::listener& l) noexcept : listener_(&l) {}

    void start(int k, milliseconds period, const scaled_min& min, timeout_scale& scale, time_point now) {
        timers_[k] = std::make_unique<activity_timer>(static_cast<activity_timer::listener&>(*this));
        timers_[k]->start(period, min, &scale, now);
    }
    void touch(int k, time_point stamp) {
        if (timers_[k]) timers_[k]->touch(stamp);
    }
    void stop() noexcept {
        for (auto& t : timers_)
            if (t) t->stop();
    }

private:
    void on_expired(activity_timer& t, bool first) override {
        const auto k = &t == timers_[reader].get() ? idle_kind::reader
                       : &t == timers_[writer].get() ? idle_kind::writer
                                                     : idle_kind::all;
        listener_->on_idle({k, first}); // last: it may destroy the idle_state, and this with it
    }
    timer_scheduler& scheduler() const noexcept override { return listener_->scheduler(); }
    bool put_off(const activity_timer&) override { return listener_->input_waiting(); }

    idle_state::listener* listener_;
    std::unique_ptr<activity_timer> timers_[3]; ///< by kind; null for a kind that does not scale
};

idle_state::idle_state(const idle_policy& policy, listener& l, timeout_scale* scale)
    : progress_is_activity_(policy.write_progress_is_activity) {
    policy.validate();
    const time_point now = l.scheduler().stamp();
    last_read_ = last_write_ = now;
    const struct {
        milliseconds period;
        const scaled_min& min;
    } kinds[] = {{policy.reader_idle, policy.reader_idle_min}, {policy.writer_idle, policy.writer_idle_min},
                  {policy.all_idle, policy.all_idle_min}};
    for (int k = 0; k < 3; ++k) {
        if (kinds[k].period.count() <= 0) continue;
        if (scale && kinds[k].min.enabled()) {
            if (!scaled_) scaled_ = std::make_unique<scaled_kinds>(l);
            scaled_->start(k, kinds[k].period, kinds[k].min, *scale, now);
            scaling_ |= static_cast<std::uint8_t>(1u << k);
        }
    }
}

duration idle_state::period(const idle_policy& policy, int k) const noexcept {
    if (stopped_ || (scaling_ >> k & 1u) != 0) return duration::zero();
    const milliseconds p = k == reader ? policy.reader_idle : k == writer ? policy.writer_idle : policy.all_idle;
    return p.count() > 0 ? std::chrono::duration_cast<duration>(p) : duration::zero();
}

idle_state::~idle_state() = default;

void idle_state::scaled_on_read(time_point stamp) {
    scaled_->touch(reader, stamp);
    scaled_->touch(all, stamp);
}

void idle_state::scaled_on_write(time_point stamp) {
    scaled_->touch(writer, stamp);
    scaled_->touch(all, stamp);
}

time_point idle_state::last(int k) const noexcept {
    return k == reader ? last_read_ : k == writer ? last_write_ : std::max(last_read_, last_write_);
}

time_point idle_state::due(timer_scheduler& svc, int k, duration p) const {
    const time_point base = svc.latest_possible(last(k)); // never early against real time
    // The (taken + 1)-th period after the last activity, saturating. A kind that took 2^32 - 1
    // events in one idle spell (49 days of 1 ms periods) goes quiet until the next activity.
    if (taken_[k] == UINT32_MAX) return time_point::max();
    const auto n = static_cast<duration::rep>(taken_[k]) + 1;
    if (p.count() > duration::max().count() / n) return time_point::max();
    return saturating_add(base, p * n);
}

time_point idle_state::due(const idle_policy& policy, timer_scheduler& svc) const {
    time_point d = time_point::max();
    for (int k = 0; k < 3; ++k)
        if (const duration p = period(policy, k); p > duration::zero()) d = std::min(d, due(svc, k, p));
    return d;
}

std::size_t idle_state::take(const idle_policy& policy, timer_scheduler& svc, time_point now, idle_event (&out)[3]) {
    std::size_t n = 0;
    for (int k = 0; k < 3; ++k) {
        const duration p = period(policy, k);
        if (p <= duration::zero() || due(svc, k, p) > now) continue;
        out[n++] = {static_cast<idle_kind>(k), taken_[k] == 0};
        // The next falls due at the first whole period after the last activity that is still to
        // come: a late wake-up (a stall of many periods) gives one event, not a burst of them.
        const auto periods = static_cast<std::uint64_t>((now - svc.latest_possible(last(k))) / p);
        taken_[k] = periods < UINT32_MAX ? static_cast<std::uint32_t>(periods) : UINT32_MAX;
    }
    return n;
}

void idle_state::stop() noexcept {
    if (scaled_) scaled_->stop();
    stopped_ = true;
}

} // namespace heartwheel::net
