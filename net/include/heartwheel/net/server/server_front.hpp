// heartwheel/net/server/server_front.hpp — what a server opens from its server_settings, in the order a
// supervisor needs: the listening socket, the metrics port, SIGINT/SIGTERM caught, then the ready
// lines.
//
// The order is the point. A supervisor (systemd's notify shim, a deploy script) signals as soon as it
// has read "listening on", so the signals are caught before that line is printed (a signal arriving
// first would kill the process: no drain). With --handover a successor binds the metrics port beside
// this process while it drains, so the metrics acceptor takes SO_REUSEPORT then. The first signal
// stops accepting and drains the executor's connections over the settings' drain window
// (drain_on_signals); the draining gauge is then on /metrics.
//
// Invariants: the listener, the metrics acceptor and the signal set live as long as the front (which
// does not move); on_signals() is called once; serve_metrics() does nothing without a metrics port.
// Everything runs on the front's executor (the acceptor's strand or thread).
#ifndef HEARTWHEEL_NET_SERVER_FRONT_HPP
#define HEARTWHEEL_NET_SERVER_FRONT_HPP

#include <heartwheel/asio_wheel.hpp>
#include <heartwheel/net/server/drain.hpp>
#include <heartwheel/net/server/listener.hpp>
#include <heartwheel/net/metrics/prometheus.hpp>
#include <heartwheel/net/config/server_settings.hpp>

#include <heartwheel/asio.hpp>
#if defined(HEARTWHEEL_BOOST_ASIO)
#include <boost/asio/signal_set.hpp>
#else
#include <asio/signal_set.hpp>
#endif

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace heartwheel::net {

class server_front {
public:
    /// Opens what `settings` asks for on `ex`: the listener (settings.listener() and then `name`,
    /// `refusal` and `counters` — the server's own options) and, with settings.metrics, the metrics
    /// port. On a listen_error, prints "<name>: <what>" to stderr and returns null (the server exits 1).
    static std::unique_ptr<server_front> open(const asio::any_io_executor& ex, const server_settings& settings,
                                              std::string name, std::string refusal = {},
                                              liveness_counters* counters = nullptr);

    server_front(const server_front&) = delete;
    server_front& operator=(const server_front&) = delete;

    net::listener& listener() noexcept { return *listener_; }
    /// SIGINT/SIGTERM: the first stops accepting and drains the executor's connections over the
    /// settings' drain window, then calls `stop` (the server closes what is left and stops); a second
    /// signal calls it at once. Call it once, before printing ready_lines().
    void on_signals(std::function<void()> stop);
    /// Whether the drain is under way (the draining gauge; any thread).
    bool draining() const noexcept { return drain_.draining(); }
    /// "listening on HOST:PORT\n" (every server's first line) and, with a metrics port, "metrics on
    /// HOST:PORT\n".
    std::string ready_lines() const;
    /// With a metrics port, answers GET /metrics: the server's own families (`families`), then what
    /// every server exports (the listener's, draining, the counters' closes and liveness, the
    /// process) and, with `report_wheel`, `wheel`'s timers and wake-ups (leave it out when other
    /// wheels run on other threads). `wheel` times the scrapes: it runs on the front's executor.
    void serve_metrics(asio_wheel& wheel, std::function<void(prometheus_writer&)> families, bool report_wheel = true);

private:
    server_front(const asio::any_io_executor& ex, const server_settings& settings, listener_options options);

    asio::any_io_executor ex_;
    std::chrono::milliseconds drain_window_;
    liveness_counters* counters_;
    std::optional<net::listener> listener_;
    std::optional<asio::ip::tcp::acceptor> metrics_;
    std::optional<asio::signal_set> signals_;
    drain_status drain_;
};

} // namespace heartwheel::net

#endif
