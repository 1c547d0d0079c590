// handshake_gate.cpp — the sources' counts and buckets; see handshake_gate.hpp.
#include <heartwheel/net/server/handshake_gate.hpp>

#include <algorithm>

namespace heartwheel::net {

handshake_gate::waiter::~waiter() {
    if (gate_ != nullptr) gate_->release(*this);
}

handshake_gate::~handshake_gate() {
    while (first_ != nullptr) unlink(*first_); // waiters outliving the gate hold no pointer to it
}

void handshake_gate::refill(source& s, clock::time_point now) const {
    if (limits_.per_source_rate == 0) return;
    const double rate = limits_.per_source_rate;
    const double elapsed = std::chrono::duration<double>(now - s.refilled).count();
    if (elapsed > 0) s.tokens = std::min(rate, s.tokens + elapsed * rate);
    s.refilled = std::max(s.refilled, now);
}

bool handshake_gate::forgettable(const source& s, clock::time_point now) const {
    if (s.pending != 0) return false;
    if (limits_.per_source_rate == 0) return true;
    source copy = s;
    refill(copy, now);
    return copy.tokens >= limits_.per_source_rate; // a full bucket is what a new entry starts with
}

// Drops the sources that hold nothing (no handshake in progress, a full bucket); if that is not
// enough, those with a bucket still refilling as well (a source forgotten early starts full again:
// the rate bound loosens for it, memory stays bounded).
void handshake_gate::forget_idle_sources(clock::time_point now) {
    for (auto it = sources_.begin(); it != sources_.end();)
        it = forgettable(it->second, now) ? sources_.erase(it) : std::next(it);
    if (limits_.max_sources == 0 || sources_.size() < limits_.max_sources) return;
    for (auto it = sources_.begin(); it != sources_.end() && sources_.size() >= limits_.max_sources;)
        it = it->second.pending == 0 ? sources_.erase(it) : std::next(it);
}

handshake_gate::verdict handshake_gate::admit(waiter& w, const asio::ip::address& addr, clock::time_point now) {
    release(w);
    const bool per_source = limits_.max_pending_per_source != 0 || limits_.per_source_rate != 0;
    source* src = nullptr;
    if (per_source) {
        auto it = sources_.find(addr);
        if (it == sources_.end()) {
            // Amortized: a sweep when the map has doubled since the last one, or is full.
            if (sources_.size() >= sweep_at_ || (limits_.max_sources != 0 && sources_.size() >= limits_.max_sources)) {
                forget_idle_sources(now);
                sweep_at_ = std::max<std::size_t>(64, 2 * sources_.size());
            }
            it = sources_.emplace(addr, source{0, static_cast<double>(limits_.per_source_rate), now}).first;
        }
        src = &it->second;
        refill(*src, now);
        if (limits_.max_pending_per_source != 0 && src->pending >= limits_.max_pending_per_source) {
            ++refusals_;
            return verdict::source_busy;
        }
        if (limits_.per_source_rate != 0) {
            if (src->tokens < 1.0) {
                ++refusals_;
                return verdict::source_too_fast;
            }
            src->tokens -= 1.0;
        }
    }
    w.gate_ = this;
    w.source_ = src;
    w.prev_ = nullptr;
    w.next_ = first_;
    if (first_) first_->prev_ = &w;
    first_ = &w;
    ++pending_;
    if (src) ++src->pending;
    return verdict::admitted;
}

void handshake_gate::release(waiter& w) noexcept {
    if (w.gate_ == this) unlink(w);
}

void handshake_gate::unlink(waiter& w) noexcept {
    (w.prev_ ? w.prev_->next_ : first_) = w.next_;
    if (w.next_) w.next_->prev_ = w.prev_;
    if (w.source_) --static_cast<source*>(w.source_)->pending;
    w.gate_ = nullptr;
    w.prev_ = w.next_ = nullptr;
    w.source_ = nullptr;
    --pending_;
}

} // namespace heartwheel::net
