// timeout_scale.cpp — range queues re-judged at their heads; see timeout_scale.hpp for the idea.
#include <heartwheel/net/policies/activity_timer.hpp>
#include <heartwheel/net/policies/timeout_scale.hpp>

#include <cmath>

namespace heartwheel::net {

double scale_for_pressure(double p, double threshold) noexcept {
    if (!(p > threshold)) return 1.0; // also NaN
    if (p >= 1.0 || threshold >= 1.0) return 0.0;
    return 1.0 - (p - threshold) / (1.0 - threshold);
}

timeout_scale::timeout_scale(timer_scheduler& svc, double threshold) : svc_(svc), threshold_(threshold) {}

timeout_scale::~timeout_scale() {
    // Timers still queued (their owner outlived the scale, against the contract) are let go of.
    for (auto& q : queues_)
        while (!q->entries.empty()) q->entries.front()->unlink();
}

void timeout_scale::set_pressure(double p) {
    if (!(p >= 0.0)) p = 0.0;
    if (p > 1.0) p = 1.0;
    pressure_ = p;
    set_scale(scale_for_pressure(p, threshold_));
}

void timeout_scale::set_scale(double s) {
    if (!(s >= 0.0)) s = 0.0;
    if (s > 1.0) s = 1.0;
    if (s == scale_) return;
    scale_ = s;
    for (auto& q : queues_) arm(*q); // one head per range: the cost of a change
}

duration timeout_scale::scaled(duration min, duration max) const noexcept {
    if (max <= min) return min;
    const double part = std::floor(scale_ * static_cast<double>((max - min).count()));
    return min + duration(static_cast<duration::rep>(part));
}

std::size_t timeout_scale::queued() const noexcept {
    std::size_t n = 0;
    for (const auto& q : queues_) n += q->size;
    return n;
}

void timeout_scale::enqueue(entry& e, duration range, time_point key) {
    std::uint32_t i = 0;
    while (i < queues_.size() && queues_[i]->range != range) ++i;
    if (i == queues_.size()) queues_.push_back(std::make_unique<range_queue>(*this, range));
    range_queue& q = *queues_[i];
    e.key = key;
    e.queue = i;
    const bool was_empty = q.entries.empty();
    q.entries.push_back(e);
    ++q.size;
    if (was_empty || !q.pending()) arm(q);
}

void timeout_scale::dequeue(entry& e) noexcept {
    if (!e.linked()) return;
    e.unlink();
    --queues_[e.queue]->size;
    // The queue's timer may stay armed for this entry: when it fires it judges the new head.
}

void timeout_scale::arm(range_queue& q) {
    if (q.entries.empty()) {
        q.cancel();
        return;
    }
    const auto& head = static_cast<const entry&>(*q.entries.front());
    svc_.schedule(q, saturating_add(head.key, scaled(duration::zero(), q.range)));
}

void timeout_scale::drain(range_queue& q) {
    const time_point now = svc_.now();
    while (!q.entries.empty()) {
        auto& head = static_cast<entry&>(*q.entries.front());
        if (saturating_add(head.key, scaled(duration::zero(), q.range)) > now) break;
        head.unlink();
        --q.size;
        if (scaled()) ++fired_while_scaled_;
        // May close a connection and so destroy other queued timers (they unlink themselves) or
        // enqueue again: the loop re-reads the head each time.
        head.expired(now);
    }
    arm(q);
}

} // namespace heartwheel::net
