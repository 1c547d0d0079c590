// heartwheel/net/connection/output_bound.hpp — the slow-consumer bound of one output queue, whatever it queues:
// net::connection's bytes, a framing layer's messages (heartwheel/beast/websocket.hpp).
//
// Idea: a peer that does not read must not make its server hold without bound what other connections
// produce for it (a fan-out server's broadcasts). The owner of a queue tells this bound what it holds
// after each growth (grew) and each write (drained); the bound applies output_policy:
//  - past hard_limit (or past a count limit of the owner's, e.g. messages): slow — the owner drops
//    what it queued and closes slow-consumer on its executor's next turn (never inside the producer's
//    send: a broadcast loop stays valid), and ignores later sends (slow());
//  - above soft_limit: one wheel timer, armed once, that calls the owner back after soft_limit_time;
//    still above then (soft_time_up), the owner closes slow-consumer; drained to it in time, the
//    timer goes and the bound starts over;
//  - the water marks: writable() while at most high_water is queued; a producer that was refused
//    (held, or a growth above high_water) is owed one on_writable once it drains to low_water.
// Invariants: the soft timer is armed only while above soft_limit (drained and stop() cancel it); the
// sizes are held in 32 bits (output_policy::validate caps them at 4 GiB - 1); nothing allocates
// but the soft timer's node, made the first time a queue stays above its soft limit.
#ifndef HEARTWHEEL_NET_OUTPUT_BOUND_HPP
#define HEARTWHEEL_NET_OUTPUT_BOUND_HPP

#include <heartwheel/net/policies/policies.hpp>
#include <heartwheel/timer_handle.hpp>
#include <heartwheel/timer_scheduler.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <utility>

namespace heartwheel::net {

class output_bound {
public:
    /// Validates `p` (config_error naming the field and its range).
    explicit output_bound(const output_policy& p) : output_bound(p, validated{}) { p.validate(); }
    /// A policy validated already (an output's shared settings).
    struct validated {};
    output_bound(const output_policy& p, validated) noexcept {
        high_water_ = static_cast<std::uint32_t>(p.high_water);
        low_water_ = static_cast<std::uint32_t>(p.low_water);
        hard_limit_ = static_cast<std::uint32_t>(p.hard_limit);
        soft_limit_ = static_cast<std::uint32_t>(p.soft_limit);
        soft_limit_ms_ = static_cast<std::uint32_t>(std::min<std::int64_t>(p.soft_limit_time.count(), 0xffffffff));
    }

    /// Whether a producer may queue more now (Netty's Channel.isWritable).
    bool writable(std::size_t queued) const noexcept { return queued <= high_water_; }
    /// A producer was told to hold (a read loop that stops reading): it is owed on_writable.
    void held() noexcept { was_above_ = true; }
    /// Past the hard limit: the owner ignores sends until its close.
    bool slow() const noexcept { return slow_; }

    /// The queue grew to `queued` (`over_count`: past a count limit of the owner's own). True when it
    /// is now slow: the owner drops its queue and posts its slow-consumer close. Above the soft limit,
    /// arms the soft timer, once, with the callback `make_on_soft_time()` returns (the owner's, holding
    /// it weakly) — made only then: below both limits a growth is a few compares (every send pays it).
    template <class MakeOnSoftTime>
    bool grew(std::size_t queued, timer_scheduler& timers, MakeOnSoftTime&& make_on_soft_time, bool over_count = false) {
        if (queued > high_water_) was_above_ = true;
        if (over_count || (hard_limit_ > 0 && queued > hard_limit_)) {
            slow_ = true;
            soft_timer_ = {};
            return true;
        }
        if (soft_limit_ > 0 && queued > soft_limit_ && !soft_timer_) {
            soft_timer_ = heartwheel::timer_handle(make_on_soft_time());
            timers.schedule(soft_timer_.node(),
                            timers.deadline_after(std::chrono::duration_cast<duration>(std::chrono::milliseconds(soft_limit_ms_))));
        }
        return false;
    }
    /// The soft limit's time is up (from the owner's callback): true when still above it (the owner
    /// closes slow-consumer); otherwise the bound starts over.
    bool soft_time_up(std::size_t queued) noexcept {
        if (queued > soft_limit_) return true;
        soft_timer_ = {};
        return false;
    }
    /// A write drained the queue to `queued`: true, once, when a held producer may go on (on_writable).
    bool drained(std::size_t queued) noexcept {
        if (soft_timer_ && queued <= soft_limit_) soft_timer_ = {};
        if (!was_above_ || queued > low_water_) return false;
        was_above_ = false;
        return true;
    }
    /// The owner is closing: no soft judgement any more.
    void stop() noexcept { soft_timer_ = {}; }
    /// Nothing owed, armed or latched: a bound made afresh would be the same (an owner may drop it).
    bool at_rest() const noexcept { return !soft_timer_ && !was_above_ && !slow_; }

private:
    heartwheel::timer_handle soft_timer_; ///< armed while above the soft limit
    // 0: that limit is off. With the two flags, 32 bytes: a connection keeps this for its life.
    std::uint32_t high_water_ = 0, low_water_ = 0, hard_limit_ = 0, soft_limit_ = 0, soft_limit_ms_ = 0;
    bool was_above_ = false; ///< a producer was refused: on_writable is owed
    bool slow_ = false;      ///< past the hard limit
};

} // namespace heartwheel::net

#endif
