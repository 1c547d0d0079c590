// heartwheel/net/metrics/prometheus.hpp — what the library counts, in Prometheus's text exposition format
// (0.0.4), for a server's /metrics.
//
// A prometheus_writer accumulates families: the application's own (metric(), histogram()), then the
// library's — liveness() for a counters_snapshot (closes by reason, idle events, heartbeats, round
// trips, death lateness, closes while scaled), wheels() for the drivers' health (pending timers,
// wake-ups, wake-up lateness), read_chunks() for the thread pools' lent chunks, accepting() for a
// listener's, process() for the drain and the descriptors. Names are the
// `heartwheel_` families echo_server publishes (docs/echo_server.md lists them); every family gets
// its HELP and TYPE lines once; histograms are cumulative with +Inf, _sum and _count. No I/O: serve
// text() however the application serves HTTP.
#ifndef HEARTWHEEL_NET_PROMETHEUS_HPP
#define HEARTWHEEL_NET_PROMETHEUS_HPP

#include <heartwheel/asio_wheel.hpp>
#include <heartwheel/net/metrics/counters.hpp>
#include <heartwheel/net/server/listener.hpp>

#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>

namespace heartwheel::net {

class prometheus_writer {
public:
    prometheus_writer();

    /// A gauge or a counter (`type`), with its HELP and TYPE lines.
    template <class T>
    void metric(std::string_view name, std::string_view type, std::string_view help, T value) {
        head(name, type, help);
        os_ << name << ' ' << value << '\n';
    }
    /// A histogram from per-bucket counts (not cumulative; one more count than bounds, for the rest):
    /// bound i is `bounds[i] * scale` seconds.
    template <class Bounds, class Counts>
    void histogram(std::string_view name, std::string_view help, const Bounds& bounds, double scale, const Counts& counts,
                   double sum_seconds) {
        head(name, "histogram", help);
        std::uint64_t cumulative = 0;
        for (std::size_t i = 0; i < bounds.size(); ++i) {
            cumulative += counts[i];
            os_ << name << "_bucket{le=\"" << static_cast<double>(bounds[i]) * scale << "\"} " << cumulative << '\n';
        }
        cumulative += counts[bounds.size()];
        os_ << name << "_bucket{le=\"+Inf\"} " << cumulative << '\n'
            << name << "_sum " << sum_seconds << '\n'
            << name << "_count " << cumulative << '\n';
    }

    /// heartwheel_closes_total{reason}, heartwheel_idle_events_total{kind}, pings, pongs, misses,
    /// round trips, death lateness, closes while scaled.
    void liveness(const counters_snapshot& c);
    /// heartwheel_wheel_timers (pending in all wheels), heartwheel_driver_wakeups_total and the
    /// wake-up lateness histogram, from the drivers' stats summed over the threads.
    void wheels(std::size_t pending_timers, const driver_stats& summed);
    /// heartwheel_read_chunks_lent: read chunks lent by the threads' pools and not yet given back.
    void read_chunks();
    /// heartwheel_accepted_total, heartwheel_accept_pauses_total (at the descriptor limit),
    /// heartwheel_accept_waits_total (at an admission limit) and heartwheel_accept_refused_total{reason}
    /// (descriptor-limit, max-connections, proxy), from `l`.
    void accepting(const listener& l);
    /// heartwheel_draining (1 while a drain asks connections to leave: drain_status::draining()),
    /// process_open_fds and process_max_fds.
    void process(bool draining);
    /// What every server exports after its own families: accepting(l), process(draining) and
    /// liveness(c).
    void serving(const listener& l, bool draining, const counters_snapshot& c);

    std::string text() const { return os_.str(); }

private:
    void head(std::string_view name, std::string_view type, std::string_view help);
    std::ostringstream os_;
};

/// The process's open descriptors (counted in /proc/self/fd).
std::size_t open_descriptors();

} // namespace heartwheel::net

#endif
