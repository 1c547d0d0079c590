// server.hpp — the echo/heartbeat server: one acceptor, N workers (io_context + wheel each, one
// thread each), sessions handed out round-robin, optional TLS, a stats line and a /metrics endpoint,
// and a graceful stop on SIGINT/SIGTERM (BYE shutdown to everyone, bounded in time).
#ifndef HEARTWHEEL_ECHO_SERVER_HPP
#define HEARTWHEEL_ECHO_SERVER_HPP

#include "options.hpp"
#include "worker.hpp"

#include <heartwheel/net/server/listener.hpp>

#include <asio/ip/tcp.hpp>
#include <asio/signal_set.hpp>
#include <asio/ssl/context.hpp>

#include <atomic>
#include <memory>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <vector>

namespace echo {

struct timing; // timing.hpp

/// A failure to start (port in use, unreadable certificate): exit code 1.
struct startup_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

class server {
public:
    /// Binds and listens (throws startup_error); prints nothing yet.
    explicit server(const server_options& options);
    ~server();
    /// The bound address (with the real port when --listen gave port 0).
    endpoint_spec local_endpoint() const;
    /// Prints "listening on HOST:PORT", serves until SIGINT/SIGTERM (or stop()), prints the final
    /// counters and returns the exit code.
    int run(std::ostream& out);
    /// Starts the graceful stop (as a signal would). Thread-safe.
    void stop();

    std::string stats_line() const;
    struct connection_counts {
        std::uint64_t accepted, open, closing;
    };
    connection_counts counts(const heartwheel::net::counters_snapshot& c) const;
    std::string prometheus_text() const;

private:
    void accept();
    template <class Socket>
    void accepted(worker& w, std::error_code ec, Socket socket);
    template <class Socket>
    void start_session(worker& w, Socket socket, const asio::ip::address& peer);
    template <class Socket>
    void at_the_limit(worker& w, Socket socket, const asio::ip::address& peer);
    template <class Socket>
    void reject_busy(Socket socket);
    void check_descriptor_limit();
    void begin_shutdown();
    /// The first signal with --drain-window: stop accepting, ask every connection to leave over the
    /// window (each thread's execution context drained on its own), then begin_shutdown().
    void begin_drain();
    /// What the first signal and a handover both do: drain over --drain-window, or shut down without one.
    void begin_leaving();
    /// The successor took the listening sockets (--handover): drain (or shut down without a window).
    void handed_over();
    void await_signal();
    /// Posts `fn` to every session of every worker, each on its own thread.
    void for_each_session(void (session_base::*fn)());
    void start_metrics();
    /// Overload scaling: pressure = the fuller of connections over --max-connections and descriptors
    /// over their limit; a change of at least 0.001 is posted to every worker's timeout_scale.
    double pressure() const;
    /// The timeout scale for the pressure last posted (what every worker's timeout_scale holds).
    double scale() const;
    void population_changed();
    void start_timers(std::ostream& out);

    server_options options_;
    /// --timers other than the wheel: the registered timing that starts every session (timing.hpp).
    const timing* timing_;
    heartwheel::net::liveness_counters live_counters_;
    server_counters counters_;
    worker_set workers_; ///< the shards (net::shards, in either threading model) and their workers
    std::optional<asio::ssl::context> tls_;
    /// The library's accept loop: at the descriptor limit it refuses with BYE busy and rests.
    std::optional<heartwheel::net::listener> listener_;
    asio::ip::tcp::endpoint peer_; ///< the client of the accept in progress (one at a time)
    std::optional<asio::ip::tcp::acceptor> metrics_acceptor_;
    asio::signal_set signals_;
    std::size_t next_worker_ = 0;
    bool stopping_ = false;
    std::atomic<bool> draining_{false};
    std::atomic<std::size_t> drains_left_{0};
    std::vector<heartwheel::timer_handle> timers_;
    std::string limit_note_;                ///< --max-connections beyond the descriptor limit
    std::size_t fd_base_ = 0;                ///< descriptors open before any connection
    std::size_t fd_limit_ = 0;               ///< RLIMIT_NOFILE (0: unlimited)
    std::atomic<int> pressure_millis_{0};    ///< the pressure last posted, in thousandths
};

} // namespace echo

#endif
