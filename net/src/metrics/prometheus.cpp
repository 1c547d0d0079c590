// prometheus.cpp — the library's metric families; see prometheus.hpp.
#include <heartwheel/net/metrics/prometheus.hpp>

#include <heartwheel/net/connection/close_reason.hpp>
#include <heartwheel/net/connection/read_chunk.hpp>

#include <sys/resource.h>
#include <sys/stat.h>

#include <filesystem>
#include <iomanip>

namespace heartwheel::net {

prometheus_writer::prometheus_writer() { os_ << std::setprecision(9); }

void prometheus_writer::head(std::string_view name, std::string_view type, std::string_view help) {
    os_ << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n';
}

void prometheus_writer::liveness(const counters_snapshot& c) {
    head("heartwheel_closes_total", "counter", "Connections closed, by reason (each exactly once).");
    for (std::size_t i = 0; i < close_reason_count(); ++i)
        os_ << "heartwheel_closes_total{reason=\"" << to_string(static_cast<close_reason>(i)) << "\"} " << c.closes[i] << '\n';
    head("heartwheel_idle_events_total", "counter", "Idle events, by kind.");
    os_ << "heartwheel_idle_events_total{kind=\"reader\"} " << c.reader_idle << "\nheartwheel_idle_events_total{kind=\"writer\"} "
        << c.writer_idle << "\nheartwheel_idle_events_total{kind=\"all\"} " << c.all_idle << '\n';
    metric("heartwheel_pings_sent_total", "counter", "Heartbeat pings sent.", c.pings_sent);
    metric("heartwheel_pongs_received_total", "counter", "Heartbeat pongs received.", c.pongs_received);
    metric("heartwheel_heartbeat_misses_total", "counter", "Pings not answered in time.", c.heartbeat_misses);
    histogram("heartwheel_rtt_seconds", "Heartbeat ping round trips.", rtt_bucket_bounds, 1.0, c.rtt_buckets,
              static_cast<double>(c.rtt_total_us) / 1e6);
    histogram("heartwheel_heartbeat_death_lateness_seconds",
              "How long after the deadline a dead peer missed (when its last ping fell due + timeout) it was judged and its close began.",
              death_lateness_bucket_bounds, 1.0, c.death_lateness_buckets, static_cast<double>(c.death_lateness_total_us) / 1e6);
    metric("heartwheel_heartbeat_death_lateness_max_seconds", "gauge", "The latest of those judgements.",
           static_cast<double>(c.death_lateness_max_us) / 1e6);
    metric("heartwheel_heartbeat_deaths_judged_early_total", "counter",
           "Peers judged dead before their deadline (never, by design).", c.deaths_judged_early);
    metric("heartwheel_heartbeat_deaths_judged_late_total", "counter",
           "Peers judged dead more than one wheel tick after their deadline (the thread woke late or was busy).",
           c.deaths_judged_late);
    metric("heartwheel_closes_while_scaled_total", "counter", "Closes by a scaled timeout while it was scaled.",
           c.closes_while_scaled);
    head("heartwheel_slow_consumer_closes_total", "counter", "Slow-consumer closes, by the output bound that fired.");
    for (std::size_t i = 0; i < slow_bounds; ++i)
        os_ << "heartwheel_slow_consumer_closes_total{bound=\"" << to_string(static_cast<slow_bound>(i)) << "\"} "
            << c.slow_consumers[i] << '\n';
}

void prometheus_writer::wheels(std::size_t pending_timers, const driver_stats& summed) {
    metric("heartwheel_wheel_timers", "gauge", "Timers pending in all wheels.", pending_timers);
    metric("heartwheel_driver_wakeups_total", "counter", "Wake-ups of the wheels' steady_timers.", summed.wakeups);
    histogram("heartwheel_timer_lateness_seconds", "How late after a slot's time its wheel woke to fire it.",
              driver_stats::lateness_bounds_us, 1e-6, summed.lateness, static_cast<double>(summed.lateness_total_us) / 1e6);
}

void prometheus_writer::read_chunks() {
    metric("heartwheel_read_chunks_lent", "gauge", "Read chunks lent by the threads' pools and not yet given back.",
           read_chunk::outstanding());
}

void prometheus_writer::accepting(const listener& l) {
    metric("heartwheel_accepted_total", "counter", "Connections the listener accepted.", l.accepted());
    metric("heartwheel_accept_pauses_total", "counter", "Times accepting paused at the descriptor limit.", l.pauses());
    metric("heartwheel_accept_waits_total", "counter", "Times accepting stopped at an admission limit.", l.waits());
    head("heartwheel_accept_refused_total", "counter", "Connections the listener closed itself, by why.");
    os_ << "heartwheel_accept_refused_total{reason=\"descriptor-limit\"} " << l.refused()
        << "\nheartwheel_accept_refused_total{reason=\"max-connections\"} " << l.refused_at_limit()
        << "\nheartwheel_accept_refused_total{reason=\"proxy\"} " << l.proxy_refused() << '\n';
}

void prometheus_writer::process(bool draining) {
    metric("heartwheel_draining", "gauge", "1 while connections are asked to leave (a drain), else 0.", draining ? 1 : 0);
    rlimit lim{};
    ::getrlimit(RLIMIT_NOFILE, &lim);
    metric("process_open_fds", "gauge", "Open file descriptors.", open_descriptors());
    metric("process_max_fds", "gauge", "The file descriptor limit.", static_cast<double>(lim.rlim_cur));
}

void prometheus_writer::serving(const listener& l, bool draining, const counters_snapshot& c) {
    accepting(l);
    process(draining);
    liveness(c);
}

std::size_t open_descriptors() {
    struct stat st {};
    if (::stat("/proc/self/fd", &st) == 0 && st.st_size > 0) return static_cast<std::size_t>(st.st_size);
    std::size_t fds = 0;
    std::error_code ec;
    for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec); !ec && it != std::filesystem::directory_iterator();
         it.increment(ec))
        ++fds;
    return fds > 0 ? fds - 1 : 0; // less the walk's own descriptor for the directory
}

} // namespace heartwheel::net
