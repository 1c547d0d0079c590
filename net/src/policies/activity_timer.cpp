// activity_timer.cpp — the lazy re-arm check, and the scaled timer's min phase; see activity_timer.hpp.
#include <heartwheel/net/policies/activity_timer.hpp>

namespace heartwheel::net {

void activity_timer::drop_scaled() noexcept {
    if (!(listener_bits_ & scaled_bit)) return;
    delete period_.scaled;
    listener_bits_ &= ~scaled_bit;
    period_.plain = duration::zero();
}

void activity_timer::start(duration timeout, time_point since) {
    stop();
    drop_scaled();
    period_.plain = timeout;
    last_ = since;
    listener_bits_ &= ~fired_bit;
    if (timeout <= duration::zero()) return;
    arm_for_last();
}

void activity_timer::start_scaled(timeout_scale& scale, duration min, duration max, time_point since) {
    if (max <= duration::zero() || min >= max) return start(max, since);
    if (min < duration::zero()) min = duration::zero();
    start(duration::zero(), since); // resets, arms nothing
    period_.scaled = new scaled_state(*this, scale, min, max - min);
    listener_bits_ |= scaled_bit;
    arm_for_last();
}

void activity_timer::arm_for_last() {
    timer_scheduler& svc = this->svc();
    svc.schedule(*this, saturating_add(svc.latest_possible(last_), wheel_period()));
}

void activity_timer::start(duration max, duration min, timeout_scale* scale, time_point since) {
    if (scale == nullptr || min < duration::zero()) return start(max, since);
    start_scaled(*scale, min, max, since);
}

void activity_timer::start(milliseconds max, const scaled_min& min, timeout_scale* scale, time_point since) {
    using std::chrono::duration_cast;
    start(duration_cast<duration>(max), min.enabled() ? duration_cast<duration>(min.of(max)) : duration(-1), scale, since);
}

void activity_timer::stop() noexcept {
    cancel();
    // Checked here: a timeout_scale destroyed first has already let go of its entries.
    if (scaled_state* s = scaled(); s && s->entry.linked()) s->scale->dequeue(s->entry);
}

void activity_timer::requeue() {
    scaled()->scale->dequeue(scaled()->entry);
    arm_for_last();
}

time_point activity_timer::due() const {
    return saturating_add(svc().latest_possible(last_), wheel_period());
}

void activity_timer::on_expire() {
    timer_scheduler& svc = this->svc();
    const time_point due = this->due();
    const time_point now = svc.now();
    if (due > now) { // activity since it was armed: re-file for the real deadline
        svc.schedule(*this, due);
        return;
    }
    if (scaled_state* s = scaled()) { // min has passed with no activity: the scaled part waits in the range's queue
        const time_point repeat = saturating_add(s->fired_at, s->min);
        const time_point key = repeat > due ? repeat : due;
        timeout_scale& scale = *s->scale;
        if (saturating_add(key, scale.scaled(duration::zero(), s->range)) > now) {
            scale.enqueue(s->entry, s->range, key);
            return;
        }
        scale.count_unqueued_expiry(); // due already (scale 0, or a late wheel)
    }
    expired(now);
}

void activity_timer::expired(time_point now) {
    listener& l = *listener_();
    if (l.put_off(*this)) { // the peer's bytes wait unread: look again once they are read
        svc().schedule(*this, saturating_add(now, unread_input_recheck));
        return;
    }
    const bool first = !(listener_bits_ & fired_bit); // no expiry since the last activity moved
    listener_bits_ |= fired_bit;
    if (scaled_state* s = scaled()) s->fired_at = now;
    svc().schedule(*this, saturating_add(now, wheel_period())); // repeat every period while idle (a
                                                                // scaled timer: its min, then its queue again)
    l.on_expired(*this, first);                                 // last: it may destroy this timer
}

} // namespace heartwheel::net
