// idle_state.cpp — one activity timer per enabled idle kind, each wired to the listener.
#include <heartwheel/net/idle_state.hpp>

namespace heartwheel::net {

void idle_state::on_expired(activity_timer& t, bool first) {
    const auto k = &t == timers_[0].get() ? idle_kind::reader : &t == timers_[1].get() ? idle_kind::writer : idle_kind::all;
    listener_->on_idle({k, first});
}

idle_state::idle_state(const idle_policy& policy, listener& l, timeout_scale* scale)
    : listener_(&l), progress_is_activity_(policy.write_progress_is_activity) {
    policy.validate();
    const time_point now = l.scheduler().stamp();
    const struct {
        milliseconds period;
        const scaled_min& min;
    } kinds[] = {{policy.reader_idle, policy.reader_idle_min}, {policy.writer_idle, policy.writer_idle_min},
                  {policy.all_idle, policy.all_idle_min}};
    for (int k = 0; k < 3; ++k) {
        if (kinds[k].period.count() <= 0) continue;
        timers_[k] = std::make_unique<activity_timer>(static_cast<activity_timer::listener&>(*this));
        timers_[k]->start(kinds[k].period, kinds[k].min, scale, now);
    }
}

void idle_state::stop() noexcept {
    for (auto& t : timers_)
        if (t) t->stop();
}

} // namespace heartwheel::net
