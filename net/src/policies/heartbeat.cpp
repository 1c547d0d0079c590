// heartbeat.cpp — ping scheduling, miss judgement and RTT; see heartbeat.hpp.
#include <heartwheel/net/detail/unit_random.hpp>
#include <heartwheel/net/policies/heartbeat.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace heartwheel::net {

heartbeat::heartbeat(const heartbeat_policy& policy, listener& l)
    : policy_(&detail::validated(policy)), listener_(&l), misses_(0),
      inbound_(policy.trigger == heartbeat_trigger::inbound), awaiting_pong_(0), judging_(0),
      stopped_(!policy.enabled()), pinger_exact_(0), read_since_ping_(0), read_since_judgement_(0), seen_rtt_(0),
      arrival_read_(0) {
    if (!stopped_) start_schedule(); // off: never armed
}

void heartbeat::start_schedule() {
    timer_scheduler& svc = scheduler();
    pinger_last_ = svc.stamp();
    pinger_interval_ = jittered_interval();
    svc.schedule(*this, svc.tick_start(ping_due()));
}

time_point heartbeat::ping_due() const {
    const time_point bound = pinger_exact_ ? pinger_last_ : scheduler().latest_possible(pinger_last_);
    return saturating_add(bound, pinger_interval_);
}

void heartbeat::on_expire() {
    if (judging_) return judge_ping();
    await_ping(); // woken early by activity since it was filed: re-filed for the real due time
}

// A ping goes at the wake-up of the tick it falls due in, up to a tick before its due time (the
// tick's start): it asks, it judges nothing, and its judgement counts from the due time itself
// (send_ping). Waiting for the tick's end instead would send it up to a tick late — and the fatal
// judgement, which gives the peer its whole timeout after the ping really left, that much later.
void heartbeat::await_ping(time_point after) {
    timer_scheduler& svc = scheduler();
    const time_point at = svc.tick_start(ping_due());
    if (at > svc.now()) svc.schedule(*this, at);
    else send_ping(after);
}

duration heartbeat::jittered_interval() {
    const duration interval = std::chrono::duration_cast<duration>(policy_->interval);
    if (policy_->jitter <= 0.0) return interval;
    const double factor = 1.0 + policy_->jitter * (2.0 * listener_->uniform() - 1.0);
    return duration(static_cast<duration::rep>(std::llround(static_cast<double>(interval.count()) * factor)));
}

void heartbeat::send_ping(time_point after) {
    // When this ping fell due (an exact base itself, a stamp's bound).
    const time_point due = ping_due();
    // A fresh clock: pings falling due together go out one after another, and each one's round trip
    // (and its streak's fatal floor) counts from when it really left, not from the start of the batch.
    timer_scheduler& svc = scheduler();
    ping_sent_ = svc.fresh_now();
    // Judged from when it fell due — or when the previous one was judged, if it had to wait for that
    // — not from when it left: waiting for a wake-up (a tick, a busy batch) would otherwise add up
    // judgement after judgement, and the death come later than the formula says. A ping that left
    // much later (a stall) counts from when it left, less what is forgiven, so it is not judged
    // missed the moment it leaves.
    // A ping that left before it fell due (at its tick's start) counts from when it fell due.
    const time_point forgiven = ping_sent_ - (svc.tick() + heartbeat_lag_forgiven);
    const time_point ping_base = std::max(due, std::min(ping_sent_, std::max({due, after, forgiven})));
    read_since_ping_ = 0; // every read so far was handled, so arrived, before the ping leaves
    awaiting_pong_ = true;
    judge_at_ = saturating_add(ping_base, effective_timeout());
    if (misses_ + 1u >= policy_->misses) { // unanswered, this one is fatal: not before the formula
        const time_point first = misses_ > 0 ? streak_start_ : ping_sent_; // the streak's first ping
        const auto interval = std::chrono::duration_cast<duration>(policy_->interval);
        const auto timeout = std::chrono::duration_cast<duration>(policy_->timeout);
        const auto shortest = duration(static_cast<duration::rep>(static_cast<double>(interval.count()) * (1.0 - policy_->jitter)));
        const time_point not_before =
            saturating_add(first, (policy_->misses - 1) * std::max(shortest, timeout) + timeout);
        if (not_before > judge_at_) judge_at_ = not_before;
    }
    // The next ping: an interval after this one fell due, not after the tick that sent it ran, so
    // rounding to ticks (and a late wake-up, or an early one) does not add up ping after ping.
    const time_point base = due;
    pinger_interval_ = jittered_interval();
    // base is an exact time: the next ping is due at base + interval itself, not after the span of
    // the batches since (the activity clock's bound for stamps, which would push each ping later by
    // the batch that sent the last one).
    touch(base);
    if (pinger_last_ == base) pinger_exact_ = 1; // else a later read's stays, exact (an arrival) or not
    // Judged at the first wake-up at or after the deadline: the tick holding it, when that tick's
    // wake-up comes after it (a ping leaves a little after its tick; the tick that judges it wakes
    // about as late), else judge_ping() waits for the deadline itself (schedule_exact). The next ping
    // waits for the judgement (or the pong).
    judging_ = true;
    svc.schedule(*this, svc.tick_start(judgement_deadline()));
    listener_->send_ping();
}

void heartbeat::judge_ping() {
    timer_scheduler& svc = scheduler();
    const time_point deadline = judgement_deadline();
    if (svc.fresh_now() < deadline) { // the deadline's own tick woke before it: not yet
        svc.schedule_exact(*this, deadline); // at the deadline itself, inside the next tick
        return;
    }
    if (read_since_judgement_) misses_ = 0; // something arrived: liveness
    read_since_judgement_ = 0;
    if (!read_since_ping_) { // nothing read since the ping left
        if (listener_->input_waiting()) { // ... that the reactor has read: look again once it has
            svc.schedule(*this, saturating_add(svc.now(), unread_input_recheck));
            return;
        }
        if (misses_ == 0) streak_start_ = ping_sent_;
        ++misses_;
        listener_->on_miss();
        if (misses_ >= policy_->misses) {
            stop(); // dead: no more pings
            listener_->on_dead(); // last: may destroy *this
            return;
        }
    }
    judging_ = false;
    // The next ping: sent now if it fell due meanwhile — counted from this judgement if it fell due
    // before it — or awaited. Last: send_ping may write, and a write may close.
    await_ping(deadline);
}

std::optional<duration> heartbeat::on_pong(time_point at) {
    // An exact time: the pinger counts from it without the batch bound (see heartbeat.hpp) — or from
    // the pong's own arrival, earlier and exact, which on_read has given it already.
    if (inbound_ && arrival_read_ && pinger_last_ <= at) at = pinger_last_;
    else if (inbound_) touch(at, true);
    if (!awaiting_pong_) return std::nullopt;
    awaiting_pong_ = false;
    const duration rtt = at > ping_sent_ ? at - ping_sent_ : duration::zero();
    // RFC 6298 (2.2, 2.3): alpha = 1/8, beta = 1/4; in whole microseconds, at most 2^32 - 1 (no sum
    // below exceeds that either).
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(rtt).count();
    const auto r = static_cast<std::uint32_t>(std::min<std::int64_t>(us, std::numeric_limits<std::uint32_t>::max()));
    if (!seen_rtt_) {
        srtt_us_ = r;
        rttvar_us_ = r / 2;
        seen_rtt_ = 1;
    } else {
        const std::uint32_t delta = srtt_us_ > r ? srtt_us_ - r : r - srtt_us_;
        rttvar_us_ = rttvar_us_ - rttvar_us_ / 4 + delta / 4;
        srtt_us_ = srtt_us_ - srtt_us_ / 8 + r / 8;
    }
    // Answered: nothing left to judge, and a ping that fell due meanwhile goes out now.
    judging_ = false;
    misses_ = 0;
    read_since_judgement_ = 0;
    if (!stopped_) await_ping(); // may write, and a write may close: rtt is a copy
    return rtt;
}

duration heartbeat::effective_timeout() const noexcept {
    const duration configured = std::chrono::duration_cast<duration>(policy_->timeout);
    if (!seen_rtt_ || policy_->rtt_factor <= 0.0) return configured;
    const double floor_ns = policy_->rtt_factor * (static_cast<double>(srtt_us_) + 4.0 * rttvar_us_) * 1000.0;
    const auto cap = static_cast<double>(std::chrono::duration_cast<duration>(std::chrono::hours(24 * 365)).count());
    const duration floor(static_cast<duration::rep>(floor_ns < cap ? floor_ns : cap));
    return floor > configured ? floor : configured;
}

void heartbeat::stop() noexcept {
    stopped_ = true;
    judging_ = false;
    cancel();
}

void heartbeat::restart() {
    if (!policy_->enabled()) return;
    cancel();
    misses_ = 0;
    awaiting_pong_ = judging_ = stopped_ = pinger_exact_ = 0;
    read_since_ping_ = read_since_judgement_ = seen_rtt_ = arrival_read_ = 0;
    srtt_us_ = rttvar_us_ = 0;
    start_schedule();
}

} // namespace heartwheel::net
