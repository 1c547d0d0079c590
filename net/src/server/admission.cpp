// admission.cpp — the counts, the handshakes in progress and their stall checks; see admission.hpp.
#include <heartwheel/net/server/admission.hpp>
#include <heartwheel/net/policies/policies.hpp>

#include <string>

namespace heartwheel::net {

std::size_t admission_limits::effective_max_handshakes() const noexcept {
    if (max_handshakes == 0 || max_connections == 0) return max_handshakes;
    const std::size_t half = max_connections / 2 > 0 ? max_connections / 2 : 1;
    return max_handshakes < half ? max_handshakes : half;
}

void admission_limits::validate() const {
    if (handshake_stall.count() < 1 || handshake_stall.count() > 60'000)
        throw config_error("handshake_stall", std::to_string(handshake_stall.count()) + "ms", "1ms to 60s");
}

close_reason handshake_shed_reason() {
    static const close_reason r = define_close_reason("handshake-shed");
    return r;
}

admission::handshake_place::handshake_place(admission& a, std::function<void()> check)
    : a_(a), check_(std::move(check)) {
    const std::lock_guard<std::mutex> lock(a_.mutex_);
    next_check_ = clock::now() + a_.limits_.handshake_stall;
    a_.pending_.push_back(*this);
}

bool admission::handshake_place::take_locked(clock::time_point now) {
    if (state_ != state::silent) return state_ == state::granted;
    if (a_.max_handshakes_ != 0 && a_.handshakes_.load(std::memory_order_relaxed) >= a_.max_handshakes_) return false;
    state_ = state::granted;
    a_.handshakes_.fetch_add(1, std::memory_order_relaxed);
    next_check_ = now + a_.limits_.handshake_stall; // a stall is timed from the place's start
    return true;
}

bool admission::handshake_place::try_take(clock::time_point now) {
    const std::lock_guard<std::mutex> lock(a_.mutex_);
    return take_locked(now);
}

bool admission::handshake_place::request(std::function<void()> granted, clock::time_point now) {
    const std::lock_guard<std::mutex> lock(a_.mutex_);
    if (state_ != state::silent || take_locked(now)) return state_ == state::granted;
    unlink();
    state_ = state::queued;
    granted_ = std::move(granted);
    a_.queue_.push_back(*this);
    a_.queued_count_.fetch_add(1, std::memory_order_relaxed);
    // Handshakes wait: a place held by a peer that stopped mid-hello is looked at (at most once per
    // tenth of a stall: the walk is over every handshake in progress).
    if (now - a_.last_queue_check_ >= a_.limits_.handshake_stall / 10) {
        a_.last_queue_check_ = now;
        a_.check_locked(now, true);
    }
    return false;
}

admission::handshake_place::~handshake_place() {
    const std::lock_guard<std::mutex> lock(a_.mutex_);
    unlink();
    if (state_ == state::queued) saturating_decrement(a_.queued_count_);
    if (state_ != state::granted) return;
    // The place goes to the queue's first, if any; the count stays.
    if (a_.queue_.empty()) {
        saturating_decrement(a_.handshakes_);
        return;
    }
    auto& next = static_cast<handshake_place&>(*a_.queue_.next);
    next.unlink();
    saturating_decrement(a_.queued_count_);
    next.state_ = state::granted;
    next.next_check_ = clock::now() + a_.limits_.handshake_stall;
    a_.pending_.push_back(next);
    next.granted_();
}

admission::admission(const admission_limits& limits) : limits_(limits), max_handshakes_(limits.effective_max_handshakes()) {
    limits_.validate();
}

bool admission::room_for_connection() const noexcept {
    if (limits_.max_connections == 0) return true;
    return open_.load(std::memory_order_relaxed) + reserved_.load(std::memory_order_relaxed) < limits_.max_connections;
}

void admission::reserve() noexcept { reserved_.fetch_add(1, std::memory_order_relaxed); }

void admission::unreserve() noexcept { saturating_decrement(reserved_); }

void admission::arrived() noexcept {
    saturating_decrement(reserved_);
    open_.fetch_add(1, std::memory_order_relaxed);
}

void admission::left() noexcept { saturating_decrement(open_); }

void admission::saturating_decrement(std::atomic<std::size_t>& n) noexcept {
    std::size_t v = n.load(std::memory_order_relaxed);
    while (v != 0 && !n.compare_exchange_weak(v, v - 1, std::memory_order_relaxed)) {
    }
}

std::size_t admission::check(clock::time_point now, bool holders_only) {
    const std::lock_guard<std::mutex> lock(mutex_);
    return check_locked(now, holders_only);
}

std::size_t admission::check_locked(clock::time_point now, bool holders_only) {
    std::size_t asked = 0;
    // Oldest first; a handshake asked is asked again only a stall later (one whose hello arrived stays,
    // and is looked at once per period, not once per poll).
    for (detail::list_hook* h = pending_.next; h != &pending_; h = h->next) {
        auto& p = static_cast<handshake_place&>(*h);
        if (p.next_check_ > now || (holders_only && p.state_ != handshake_place::state::granted)) continue;
        p.next_check_ = now + limits_.handshake_stall;
        p.check_();
        ++asked;
    }
    return asked;
}

} // namespace heartwheel::net
