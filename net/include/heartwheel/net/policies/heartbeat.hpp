// heartwheel/net/policies/heartbeat.hpp — ping after silence, close after consecutive missed answers.
//
// The ping schedule follows the policy's trigger: after `interval` (± jitter) with nothing received
// (inbound, the default: gRPC's keepalive, which finds a frozen peer even while we keep sending) or
// with nothing sent (outbound: Netty's writer-idle ping), send_ping() runs in the wheel tick that
// time falls in (the application writes its own bytes; the library is protocol-agnostic). A ping
// restarts the interval either way. Liveness follows reads
// (gRPC's rule): if nothing at all is read within `timeout` after a ping, that ping is missed; a
// read at any time resets the count; at the `misses`-th consecutive miss it stops and on_dead() runs. on_pong()
// gives a round-trip sample. A miss is counted only when nothing was read since the ping left —
// counted, not judged by time: a read handled before the ping left arrived before it (whatever its
// batch's stamp), one handled after may be its answer (even in the same batch, with the same stamp),
// so neither a stale cached clock nor a long batch since (a starved process) makes a false miss or
// undoes a true one; bytes that arrived but are not read yet put the judgement off (input_waiting).
//
// The timeout is independent of the interval (Dubbo's default is three intervals; gRPC's keepalive
// timeout and time are separate knobs). One ping is outstanding at a time: a ping that falls due
// while the previous one is neither answered (on_pong) nor judged goes out right after it is (unless
// activity since then has put it off: the trigger's silence is counted from that activity), so
// against a silent peer whose first ping went out at P (interval after the last byte received,
// inbound; after the last write, outbound):
//   pings at P, P + s, P + 2s, ...   with s = max(interval, timeout)
//   death at P + (misses - 1) * s + timeout
// i.e. P + (misses - 1) * interval + timeout when timeout <= interval, and P + misses * timeout when
// timeout > interval (jitter varies each interval). A ping's deadline is judged at the first wheel
// wake-up at or after it: the wake-up of the tick it falls in when that comes late enough,
// otherwise one at the deadline itself (timer_scheduler::schedule_exact). Late by the driver's
// wake-up delay (by up to one tick more with a service that cannot wake between ticks), and that
// delay does not add up ping after ping: a ping leaves at the wake-up of the tick it falls due in —
// the tick's start, up to a tick before it falls due (a ping asks, it judges nothing) — or later (a
// busy loop, or right after the previous one's judgement if that came later), and both the next
// ping and its own judgement count from when it fell due — never from before it, and by up to a
// tick + heartbeat_lag_forgiven before it left;
// a ping that left later than that (a stall) counts from when it left, less that, so it is never
// judged missed as it leaves. Never early as the peer sees it: a first ping that left late would
// make the death come sooner after it than the formula says, so the fatal miss is judged no earlier
// than P + (misses - 1) * max(interval x (1 - jitter), timeout) + timeout, P being when the streak's
// first unanswered ping really left (with misses == 1: P + timeout).
//
// A dead timeout that respects the path (QUIC's rule: never below three probe timeouts): from the
// pong round trips the heartbeat keeps RFC 6298's smoothed RTT and variance, and judges each ping no
// earlier than max(timeout, rtt_factor * (srtt + 4 * rttvar)) after it — never shorter than
// configured. "timeout" in the formulas above is this effective timeout.
//
// A stall does not make a talking peer miss: when nothing was read since the ping but the listener
// says the peer's bytes wait unread (input_waiting(): the process was stopped, and the reactor has
// not read what arrived meanwhile), the judgement waits unread_input_recheck and looks again, so the
// answer is read first. A dead peer sends nothing, has nothing waiting, and is judged as before.
#ifndef HEARTWHEEL_NET_HEARTBEAT_HPP
#define HEARTWHEEL_NET_HEARTBEAT_HPP

#include <heartwheel/clock.hpp>
#include <heartwheel/timer_node.hpp>
#include <heartwheel/timer_scheduler.hpp>
#include <heartwheel/net/detail/arrival_stamp.hpp>
#include <heartwheel/net/policies/activity_timer.hpp>
#include <heartwheel/net/policies/policies.hpp>
#include <heartwheel/net/policies/policy_runtime.hpp>

#include <cstdint>
#include <optional>

namespace heartwheel::net {

/// How long after it fell due (besides a tick) a ping may leave and still count from when it fell
/// due: the wait for a wake-up and behind a busy batch. A ping that left later (a stall) counts from
/// when it left, less this, so it is not judged missed the moment it leaves.
inline constexpr duration heartbeat_lag_forgiven = std::chrono::milliseconds(10);

// One timer node per heartbeat (the heartbeat is it), armed for what comes next: while a ping waits
// for its judgement, that judgement (a ping falling due meanwhile waits for it anyway, see above:
// whether one did is asked when the judgement is made); otherwise the next ping, re-filed lazily as
// activity moves it (a read or write stores a stamp; the node, when it wakes early, files itself at
// the new due time). One node, not a pinger and a judge: 48 bytes and a wheel entry less per
// connection. Its scheduler comes from its listener.
class heartbeat final : timer_node {
public:
    /// What a heartbeat asks of its owner (must outlive it): the scheduler; send_ping() (handed to
    /// its ping_writer), on_miss() and on_dead() (the misses-th consecutive miss: close); input_waiting() (bytes from the peer
    /// wait unread for a read already pending, a process stall: a miss is then not judged until
    /// they are read); uniform() for the jitter. The policies' one interface (policy_runtime.hpp).
    using listener = policy_host;

    /// Validates `policy` (config_error) and, when it is enabled, starts the ping schedule from now.
    /// The policy is read, not copied: it must outlive the heartbeat (a connection's is in the
    /// settings its connections share: detail/liveness_settings.hpp).
    heartbeat(const heartbeat_policy& policy, listener& l);
    heartbeat(const heartbeat_policy&&, listener&) = delete;
    heartbeat(const heartbeat&) = delete;
    heartbeat& operator=(const heartbeat&) = delete;

    /// Bytes were read: `stamp` is the batch's (activity_clock), `arrived` when they reached the host
    /// (the kernel's stamp, exact) or no_arrival. The inbound pinger counts from the arrival when
    /// known: a peer's silence begins when its bytes arrived, not when a busy loop read them.
    void on_read(time_point stamp, time_point arrived = no_arrival) noexcept {
        read_since_ping_ = read_since_judgement_ = 1;
        arrival_read_ = 0;
        if (!inbound_) return;
        if (arrived == no_arrival) return touch(stamp);
        touch(arrived, true);
        // The pinger counts from this read's arrival (not from a later ping's due time, which an
        // answer to a ping sent at its tick's start can arrive before).
        arrival_read_ = pinger_exact_ && pinger_last_ == arrived;
    }
    void on_write(time_point stamp) noexcept {
        if (!inbound_) touch(stamp);
    }
    /// The answer to our ping arrived (its bytes are a read: on_read, not repeated here): records a
    /// round trip. `at` is exact — a fresh clock reading (timer_scheduler::fresh_now), not a
    /// batch's stamp — and the next ping counts from it: pongs read in one batch must not share one
    /// ping time (peers pinged in lockstep, round after round, each burst delaying the next round's
    /// pongs). When the read that brought the pong knew its arrival (on_read), that earlier exact
    /// time stands instead, for the next ping and the round trip. Returns the round trip it
    /// completed: none for a pong that answers no outstanding ping.
    std::optional<duration> on_pong(time_point at);

    /// No more pings or judgements: a pong or activity afterwards re-arms nothing.
    void stop() noexcept;
    /// After stop(): the schedule again from now, as when made (misses, round trips and flags
    /// forgotten) — a handshake is over, and the pings it could not carry count from its end.
    void restart();
    std::uint32_t consecutive_misses() const noexcept { return misses_; }
    /// RFC 6298's smoothed round trip and its variance, once a pong was seen.
    /// Kept in whole microseconds (at most 71 minutes).
    std::optional<duration> srtt() const noexcept {
        return seen_rtt_ ? std::optional<duration>(std::chrono::microseconds(srtt_us_)) : std::nullopt;
    }
    duration rttvar() const noexcept { return std::chrono::microseconds(seen_rtt_ ? rttvar_us_ : 0); }
    /// How long after a ping it is judged: max(timeout, rtt_factor * (srtt + 4 * rttvar)).
    duration effective_timeout() const noexcept;
    /// When the last ping sent is (or was) judged: when it fell due plus the effective timeout (see
    /// the top of this file), never before the fatal miss's floor. In on_dead(), the deadline the
    /// peer missed.
    time_point judgement_deadline() const noexcept { return judge_at_; }

private:
    void on_expire() override; // the judgement of the ping outstanding, or the next ping
    timer_scheduler& scheduler() const noexcept { return listener_->scheduler(); } // not a virtual call
    /// The pinger counts from `at`: exact (a pong's fresh clock reading) or a batch's stamp. An
    /// older time (one batch's) does not undo a later exact one. A store: the node finds out when
    /// it wakes.
    void touch(time_point at, bool exact = false) noexcept {
        if (at <= pinger_last_) return;
        pinger_exact_ = exact;
        pinger_last_ = at;
        arrival_read_ = 0; // on_read says so when it is a read's arrival
    }
    /// When the next ping falls due: an interval after the pinger's last activity (exact after a
    /// ping or a pong; a stamp's bound after a read or write).
    time_point ping_due() const;
    /// The ping schedule from now: the first ping an interval (jittered) away.
    void start_schedule();
    /// Files the node for the next ping, or sends it now if it is due already (`after`: as send_ping's).
    void await_ping(time_point after = time_point::min());
    /// Sends a ping that fell due (none is outstanding: a ping due meanwhile waits for the
    /// judgement); `after`: when the previous ping was judged (a ping waiting for that counts from it).
    void send_ping(time_point after = time_point::min());
    void judge_ping();
    duration jittered_interval();

    // 104 bytes, a heap block of 112 (footprint_test): one timer node; the policy, read where it is
    // (shared by a server's connections), its trigger also in the flags' word (read per I/O event);
    // the judgement's deadline is kept, not what it is made of; whether anything was read since the
    // last ping and the last judgement are two flags (they were three 32-bit read counts); the
    // round-trip estimator is in 32-bit microseconds.
    const heartbeat_policy* policy_;
    listener* listener_;
    time_point pinger_last_{}; ///< the pinger's last activity (or a ping's exact base)
    duration pinger_interval_{}; ///< the interval (jittered) the next ping waits after pinger_last_
    time_point ping_sent_{};
    /// When the last ping sent is judged: from when it fell due (bounded) plus the effective timeout,
    /// never before a fatal miss's floor (set with the ping; a pong, the one thing that changes the
    /// effective timeout, ends the wait for it).
    time_point judge_at_{};
    time_point streak_start_{}; ///< when the first ping of the current miss streak left
    std::uint32_t misses_ : 10;        ///< at most the policy's misses (validated: at most 1000)
    std::uint32_t inbound_ : 1;        ///< the policy's trigger is inbound (else outbound)
    std::uint32_t awaiting_pong_ : 1;
    std::uint32_t judging_ : 1;        ///< the node waits for the judgement of the ping outstanding
    std::uint32_t stopped_ : 1;        ///< stopped (or never started: the policy is off): nothing re-arms it
    std::uint32_t pinger_exact_ : 1;   ///< the pinger was last touched by a ping's exact base, not by activity
    std::uint32_t read_since_ping_ : 1;      ///< something was read since the last ping left
    std::uint32_t read_since_judgement_ : 1; ///< ... since the last judgement (or pong)
    std::uint32_t seen_rtt_ : 1;             ///< a pong was seen: srtt_us_ and rttvar_us_ hold samples
    std::uint32_t arrival_read_ : 1;         ///< pinger_last_ is the last read's arrival (inbound)
    static_assert(heartbeat_policy::misses_max < (1u << 10));
    std::uint32_t srtt_us_ = 0, rttvar_us_ = 0; ///< RFC 6298's estimator, in microseconds
};

} // namespace heartwheel::net

#endif
