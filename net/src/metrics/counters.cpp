// counters.cpp — reason names and the snapshot copy.
#include <heartwheel/net/metrics/counters.hpp>
#include <heartwheel/net/policies/idle_state.hpp>

#include <algorithm>

namespace heartwheel::net {

void liveness_counters::idle_event(idle_kind kind) noexcept {
    switch (kind) {
    case idle_kind::reader: return bump(reader_idle_);
    case idle_kind::writer: return bump(writer_idle_);
    case idle_kind::all: return bump(all_idle_);
    }
}

std::uint64_t counters_snapshot::closes_total() const noexcept {
    std::uint64_t sum = 0;
    for (auto n : closes) sum += n;
    return sum;
}

std::string counters_snapshot::closes_text() const {
    std::string out;
    const std::size_t n = std::min(close_reason_count(), closes.size());
    for (std::size_t i = 0; i < n; ++i) {
        if (closes[i] == 0) continue;
        if (!out.empty()) out += ',';
        out += to_string(static_cast<close_reason>(i));
        out += ':' + std::to_string(closes[i]);
    }
    return out.empty() ? "none" : out;
}

template <std::size_t N>
void liveness_counters::observe(std::array<counter, N + 1>& buckets, const std::array<double, N>& bounds,
                                counter& count, counter& total_us, counter& max_us, duration d) noexcept {
    const auto us = static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(d).count());
    bump(count);
    const double seconds = std::chrono::duration<double>(d).count();
    std::size_t b = 0;
    while (b < N && seconds > bounds[b]) ++b;
    bump(buckets[b]);
    total_us.fetch_add(us, std::memory_order_relaxed);
    auto seen = max_us.load(std::memory_order_relaxed);
    while (us > seen && !max_us.compare_exchange_weak(seen, us, std::memory_order_relaxed)) {
    }
}

void liveness_counters::rtt(duration d) noexcept {
    observe(rtt_buckets_, rtt_bucket_bounds, rtt_samples_, rtt_total_us_, rtt_max_us_, d);
}

void liveness_counters::heartbeat_death(duration lateness, duration tick) noexcept {
    if (lateness < duration::zero()) {
        bump(deaths_early_);
        lateness = duration::zero();
    }
    if (lateness > tick) bump(deaths_late_);
    observe(death_lateness_buckets_, death_lateness_bucket_bounds, deaths_, death_lateness_total_us_,
            death_lateness_max_us_, lateness);
}

counters_snapshot liveness_counters::snapshot() const noexcept {
    counters_snapshot s;
    auto ld = [](const counter& c) { return c.load(std::memory_order_relaxed); };
    s.reader_idle = ld(reader_idle_);
    s.writer_idle = ld(writer_idle_);
    s.all_idle = ld(all_idle_);
    for (std::size_t i = 0; i < max_close_reasons; ++i) s.closes[i] = ld(closes_[i]);
    s.pings_sent = ld(pings_sent_);
    s.pongs_received = ld(pongs_received_);
    s.heartbeat_misses = ld(misses_);
    s.rtt_samples = ld(rtt_samples_);
    s.rtt_total_us = ld(rtt_total_us_);
    s.rtt_max_us = ld(rtt_max_us_);
    for (std::size_t i = 0; i < s.rtt_buckets.size(); ++i) s.rtt_buckets[i] = ld(rtt_buckets_[i]);
    s.deaths = ld(deaths_);
    s.death_lateness_total_us = ld(death_lateness_total_us_);
    s.death_lateness_max_us = ld(death_lateness_max_us_);
    s.deaths_judged_early = ld(deaths_early_);
    s.deaths_judged_late = ld(deaths_late_);
    for (std::size_t i = 0; i < s.death_lateness_buckets.size(); ++i) s.death_lateness_buckets[i] = ld(death_lateness_buckets_[i]);
    s.requests = ld(requests_);
    s.request_timeouts = ld(request_timeouts_);
    s.requests_failed_on_close = ld(failed_on_close_);
    s.reconnect_attempts = ld(reconnect_attempts_);
    s.reconnect_failures = ld(reconnect_failures_);
    s.closes_while_scaled = ld(closes_while_scaled_);
    for (std::size_t i = 0; i < slow_bounds; ++i) s.slow_consumers[i] = ld(slow_consumers_[i]);
    return s;
}

} // namespace heartwheel::net
