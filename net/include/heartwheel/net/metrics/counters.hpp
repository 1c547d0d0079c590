// heartwheel/net/metrics/counters.hpp — counters for every liveness outcome, readable from any thread.
//
// One liveness_counters may be shared by all connections of a server (relaxed atomics: a counter is
// a statistic, not a synchronisation point). snapshot() copies them for printing or export.
#ifndef HEARTWHEEL_NET_COUNTERS_HPP
#define HEARTWHEEL_NET_COUNTERS_HPP

#include <heartwheel/clock.hpp>
#include <heartwheel/net/connection/close_reason.hpp>

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

namespace heartwheel::net {

enum class idle_kind; // idle_state.hpp

/// Upper bounds (seconds) of the ping round-trip histogram's buckets; one more bucket holds the rest.
inline constexpr std::array<double, 12> rtt_bucket_bounds = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                                             0.01,   0.025,   0.05,   0.1,   0.25,   1.0};
/// Upper bounds (seconds) of the heartbeat-death lateness histogram: how long after the deadline a
/// dead peer missed (when its last ping fell due + the timeout, never before the formula from its
/// first unanswered ping) it was judged and its close began. By design up to one wheel tick
/// (deadlines round up to the tick); past that, the thread woke late or was busy.
/// Bounds at 2 and 12 ms show "within a millisecond or two past a 1 or 10 ms tick".
inline constexpr std::array<double, 14> death_lateness_bucket_bounds = {
    0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.012, 0.015, 0.02, 0.05, 0.1, 0.25, 1.0};

/// Which bound closed a slow consumer: the output's hard limit, its soft limit held past its time, or
/// a framing layer's count of queued messages (ws_options::max_queued_messages).
enum class slow_bound : std::uint8_t { hard_limit, soft_limit, message_count };
inline constexpr std::size_t slow_bounds = 3;
constexpr const char* to_string(slow_bound b) noexcept {
    return b == slow_bound::hard_limit ? "hard-limit" : b == slow_bound::soft_limit ? "soft-limit" : "message-count";
}

struct counters_snapshot {
    std::array<std::uint64_t, rtt_bucket_bounds.size() + 1> rtt_buckets{}; ///< not cumulative
    std::uint64_t reader_idle = 0, writer_idle = 0, all_idle = 0;
    std::array<std::uint64_t, max_close_reasons> closes{}; ///< by close_reason value
    std::uint64_t closes_total() const noexcept;
    /// "reader-idle:1,peer-closed:50" (the reasons with a count, in reason order), or "none": what
    /// the example servers' stats and final lines show after "closes=".
    std::string closes_text() const;
    std::uint64_t pings_sent = 0, pongs_received = 0, heartbeat_misses = 0;
    std::uint64_t rtt_samples = 0, rtt_total_us = 0, rtt_max_us = 0;
    std::array<std::uint64_t, death_lateness_bucket_bounds.size() + 1> death_lateness_buckets{}; ///< not cumulative
    std::uint64_t deaths = 0, death_lateness_total_us = 0, death_lateness_max_us = 0;
    std::uint64_t deaths_judged_early = 0; ///< judged before their deadline: a bug if ever non-zero
    std::uint64_t deaths_judged_late = 0;  ///< judged more than one wheel tick after it: woke late or busy
    std::uint64_t requests = 0, request_timeouts = 0, requests_failed_on_close = 0;
    std::uint64_t reconnect_attempts = 0, reconnect_failures = 0;
    std::uint64_t closes_while_scaled = 0; ///< closes by a scaled timeout while its scale was below 1
    std::array<std::uint64_t, slow_bounds> slow_consumers{}; ///< slow-consumer closes by the bound that fired
};

class liveness_counters {
public:
    void idle_event(idle_kind kind) noexcept;
    void closed(close_reason r) noexcept { bump(closes_[static_cast<std::size_t>(r)]); }
    void ping_sent() noexcept { bump(pings_sent_); }
    void pong_received() noexcept { bump(pongs_received_); }
    void heartbeat_miss() noexcept { bump(misses_); }
    void rtt(duration d) noexcept;
    /// A heartbeat judged its peer dead `lateness` after the deadline the peer missed; `tick` is the
    /// wheel's, the lateness its rounding allows.
    void heartbeat_death(duration lateness, duration tick) noexcept;
    void request_started() noexcept { bump(requests_); }
    void request_timed_out() noexcept { bump(request_timeouts_); }
    void requests_failed_on_close(std::uint64_t n) noexcept { failed_on_close_.fetch_add(n, std::memory_order_relaxed); }
    void reconnect_attempt() noexcept { bump(reconnect_attempts_); }
    void reconnect_failure() noexcept { bump(reconnect_failures_); }
    void closed_while_scaled() noexcept { bump(closes_while_scaled_); }
    /// A slow-consumer close (also counted by closed()): which bound fired.
    void slow_consumer(slow_bound b) noexcept { bump(slow_consumers_[static_cast<std::size_t>(b)]); }

    counters_snapshot snapshot() const noexcept;

private:
    using counter = std::atomic<std::uint64_t>;
    static void bump(counter& c) noexcept { c.fetch_add(1, std::memory_order_relaxed); }
    /// One observation of a histogram: its bucket, count, sum and maximum (microseconds).
    template <std::size_t N>
    static void observe(std::array<counter, N + 1>& buckets, const std::array<double, N>& bounds, counter& count,
                        counter& total_us, counter& max_us, duration d) noexcept;
    counter reader_idle_{0}, writer_idle_{0}, all_idle_{0};
    std::array<counter, max_close_reasons> closes_{};
    counter pings_sent_{0}, pongs_received_{0}, misses_{0};
    counter rtt_samples_{0}, rtt_total_us_{0}, rtt_max_us_{0};
    std::array<counter, rtt_bucket_bounds.size() + 1> rtt_buckets_{};
    counter deaths_{0}, death_lateness_total_us_{0}, death_lateness_max_us_{0}, deaths_early_{0}, deaths_late_{0};
    std::array<counter, death_lateness_bucket_bounds.size() + 1> death_lateness_buckets_{};
    counter requests_{0}, request_timeouts_{0}, failed_on_close_{0};
    counter reconnect_attempts_{0}, reconnect_failures_{0};
    counter closes_while_scaled_{0};
    std::array<counter, slow_bounds> slow_consumers_{};
};

} // namespace heartwheel::net

#endif
