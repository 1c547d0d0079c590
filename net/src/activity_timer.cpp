// activity_timer.cpp — the lazy re-arm check; see activity_timer.hpp.
#include <heartwheel/net/activity_timer.hpp>

namespace heartwheel::net {

void activity_timer::start(duration timeout, time_point since) {
    timeout_ = timeout;
    last_ = since;
    last_fired_for_ = time_point::min();
    if (timeout_ <= duration::zero()) {
        cancel();
        return;
    }
    svc_->schedule(*this, saturating_add(svc_->latest_possible(last_), timeout_));
}

void activity_timer::on_expire() {
    const time_point due = saturating_add(svc_->latest_possible(last_), timeout_);
    const time_point now = svc_->now();
    if (due > now) { // activity since it was armed: re-file for the real deadline
        svc_->schedule(*this, due);
        return;
    }
    const bool first = last_ != last_fired_for_;
    last_fired_for_ = last_;
    svc_->schedule(*this, saturating_add(now, timeout_)); // repeat every period while idle
    cb_(first);                            // last: the callback may destroy this timer
}

} // namespace heartwheel::net
