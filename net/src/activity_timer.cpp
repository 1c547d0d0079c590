// activity_timer.cpp — the lazy re-arm check, and the scaled timer's min phase; see activity_timer.hpp.
#include <heartwheel/net/activity_timer.hpp>

namespace heartwheel::net {

void activity_timer::start(duration timeout, time_point since) {
    stop();
    scaled_.reset();
    timeout_ = timeout;
    last_ = since;
    last_fired_for_ = time_point::min();
    if (timeout_ <= duration::zero()) return;
    arm_for_last();
}

void activity_timer::start_scaled(timeout_scale& scale, duration min, duration max, time_point since) {
    if (max <= duration::zero() || min >= max) return start(max, since);
    if (min < duration::zero()) min = duration::zero();
    start(duration::zero(), since); // resets, arms nothing
    scaled_ = std::make_unique<scaled_state>(*this, scale, max - min);
    timeout_ = min;
    arm_for_last();
}

void activity_timer::arm_for_last() {
    timer_scheduler& svc = this->svc();
    svc.schedule(*this, saturating_add(svc.latest_possible(last_), timeout_));
}

void activity_timer::start(milliseconds max, const scaled_min& min, timeout_scale* scale, time_point since) {
    const auto mx = std::chrono::duration_cast<duration>(max);
    if (scale == nullptr || !min.enabled()) return start(mx, since);
    start_scaled(*scale, std::chrono::duration_cast<duration>(min.of(max)), mx, since);
}

void activity_timer::stop() noexcept {
    cancel();
    // Checked here: a timeout_scale destroyed first has already let go of its entries.
    if (scaled_ && scaled_->entry.linked()) scaled_->scale->dequeue(scaled_->entry);
}

duration activity_timer::timeout() const noexcept {
    return scaled_ ? scaled_->scale->scaled(timeout_, timeout_ + scaled_->range) : timeout_;
}

void activity_timer::requeue() {
    scaled_->scale->dequeue(scaled_->entry);
    arm_for_last();
}

time_point activity_timer::due() const {
    const time_point bound = listener_->exact_activity(*this) ? last_ : svc().latest_possible(last_);
    return saturating_add(bound, timeout_);
}

void activity_timer::on_expire() {
    timer_scheduler& svc = this->svc();
    const time_point due = this->due();
    const time_point now = svc.now();
    if (due > now) { // activity since it was armed: re-file for the real deadline
        svc.schedule(*this, due);
        return;
    }
    if (scaled_) { // min has passed with no activity: the scaled part waits in the range's queue
        const time_point repeat = saturating_add(scaled_->fired_at, timeout_);
        const time_point key = repeat > due ? repeat : due;
        timeout_scale& scale = *scaled_->scale;
        if (saturating_add(key, scale.scaled(duration::zero(), scaled_->range)) > now) {
            scale.enqueue(scaled_->entry, scaled_->range, key);
            return;
        }
        scale.count_unqueued_expiry(); // due already (scale 0, or a late wheel)
    }
    expired(now);
}

void activity_timer::expired(time_point now) {
    if (listener_->put_off(*this)) { // the peer's bytes wait unread: look again once they are read
        svc().schedule(*this, saturating_add(now, unread_input_recheck));
        return;
    }
    const bool first = last_ != last_fired_for_;
    last_fired_for_ = last_;
    if (scaled_) scaled_->fired_at = now;
    svc().schedule(*this, saturating_add(now, timeout_)); // repeat every period while idle (a scaled
                                                          // timer: its min, then its queue again)
    listener_->on_expired(*this, first);                  // last: it may destroy this timer
}

} // namespace heartwheel::net
