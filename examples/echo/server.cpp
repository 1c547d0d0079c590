// server.cpp — accepting, handing out, stats and the graceful stop.
#include "server.hpp"

#include <heartwheel/net/server/handover.hpp>

#include <heartwheel/net/metrics/metrics_endpoint.hpp>
#include "session.hpp"
#include "timing.hpp"

#include <heartwheel/net/server/drain.hpp>
#include <heartwheel/net/server/listen.hpp>
#include <heartwheel/net/metrics/prometheus.hpp>

#include <asio/post.hpp>
#include <asio/write.hpp>

#include <sys/socket.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <iostream>
#include <iomanip>
#include <sstream>
#include <type_traits>

namespace echo {
namespace {

asio::ip::tcp::endpoint resolve(asio::io_context& io, const endpoint_spec& e, const char* what) {
    std::error_code ec;
    auto results = asio::ip::tcp::resolver(io).resolve(e.host, std::to_string(e.port), asio::ip::resolver_base::passive, ec);
    if (ec || results.empty()) throw startup_error(std::string("cannot resolve ") + what + " " + e.text() + ": " + ec.message());
    return results.begin()->endpoint();
}

heartwheel::net::listen_options listen_flags(bool reuse_port = false) {
    heartwheel::net::listen_options o;
    o.reuse_port = reuse_port;
    return o;
}

} // namespace

server::server(const server_options& options)
    : options_(options), timing_(find_timing(options_.timers)),
      workers_(options_, live_counters_, counters_), signals_(workers_[0]->ex) {
    check_descriptor_limit();
    if (options_.tls) {
        // The library's server policy (TLS 1.2 or later, AEAD suites, elliptic-curve groups only:
        // docs/echo_server.md); --tls-ciphers and --tls-groups override its lists.
        try {
            tls_.emplace(heartwheel::net::server_tls_context(options_.cert, options_.key, "--tls",
                                                             options_.tls_policy));
        } catch (const heartwheel::net::config_error& e) {
            throw startup_error(e.what());
        }
    }
    heartwheel::net::listener_options lo;
    lo.listen = listen_flags(options_.reuse_port);
    lo.name = "echo_server";
    lo.refusal = tls_ ? "" : "BYE busy\n"; // a TLS client could not read it
    lo.counters = &live_counters_;          // each refusal: a close "busy"
    // Handshakes at once: at most half of --max-connections (admission_limits says how); the
    // connections themselves echo counts (BYE busy, --source-share's displacement at the limit).
    heartwheel::net::admission_limits bound;
    bound.max_connections = options_.max_connections;
    bound.max_handshakes = options_.max_handshakes;
    lo.admission.max_handshakes = bound.effective_max_handshakes();
    lo.admission.handshake_stall = std::chrono::milliseconds(options_.handshake_stall_ms);
    lo.proxy = options_.proxy; // behind a balancer: the clients' addresses from their PROXY headers
    lo.on_refused = [this](heartwheel::net::close_reason r) { // closed by the listener, never a session
        counters_.accepted.fetch_add(1, std::memory_order_relaxed);
        if (r == heartwheel::net::busy_reason()) counters_.busy.fetch_add(1, std::memory_order_relaxed);
    };
    // A socket systemd passed, or with --handover the socket of the process serving that path, is
    // used before binding one (net::listener; the predecessor drains once this one listens).
    lo.handover = options_.handover;
    const auto& ex = workers_[0]->ex;
    try {
        listener_.emplace(ex, resolve(workers_[0]->ioc, options_.listen, "--listen"), std::move(lo));
        listener_->on_handed_over([this] { handed_over(); });
        if (options_.metrics) { // beside a predecessor's during a handover (SO_REUSEPORT), or systemd's
            const auto at = resolve(workers_[0]->ioc, *options_.metrics, "--metrics");
            if (auto activated = heartwheel::net::inherited_listeners::claim_systemd(ex, at))
                metrics_acceptor_.emplace(std::move(*activated));
            else
                metrics_acceptor_.emplace(heartwheel::net::listen(ex, at, listen_flags(!options_.handover.empty())));
        }
    } catch (const heartwheel::net::listen_error& e) {
        throw startup_error(e.what());
    }
}

server::~server() {
    // The members: the server's timers and acceptors, then workers_ (worker_set: sessions
    // closed, the shards shut down, the workers, the shards).
}

// Raises the soft descriptor limit to the hard one, and says so once if --max-connections cannot be
// reached within it (connections beyond the limit are refused with BYE busy, see out_of_descriptors).
void server::check_descriptor_limit() {
    fd_limit_ = heartwheel::net::raise_descriptor_limit();
    constexpr std::size_t reserve = 32; // listeners, epoll, eventfds, stdio, the listener's spare
    const std::size_t budget = fd_limit_ > reserve ? fd_limit_ - reserve : 1;
    // Said (after the listening line) only for a --max-connections the user chose; the default just
    // means "as many as fit".
    if (fd_limit_ != 0 && options_.max_connections > budget && options_.max_connections != server_options{}.max_connections)
        limit_note_ = "echo_server: --max-connections " + std::to_string(options_.max_connections) +
                      " is more than the descriptor limit (" + std::to_string(fd_limit_) +
                      ", ulimit -n) allows: about " + std::to_string(budget) +
                      " connections fit; beyond that new connections get BYE busy";
}

endpoint_spec server::local_endpoint() const {
    const auto ep = listener_->local_endpoint();
    return {ep.address().to_string(), ep.port()};
}

void server::accept() {
    worker& target = *workers_[next_worker_++ % workers_.size()];
    // Plain TCP sockets name their executor's type (see core_socket); tls_socket is over tcp::socket.
    if (tls_)
        listener_->async_accept(target.ex, peer_, [this, &target](std::error_code ec, asio::ip::tcp::socket socket) {
            accepted(target, ec, std::move(socket));
        });
    else if (target.strand) // the thread pool
        listener_->async_accept(*target.strand, peer_, [this, &target](std::error_code ec, strand_socket socket) {
            accepted(target, ec, std::move(socket));
        });
    else
        listener_->async_accept(target.ioc.get_executor(), peer_, [this, &target](std::error_code ec, core_socket socket) {
            accepted(target, ec, std::move(socket));
        });
}

template <class Socket>
void server::accepted(worker& target, std::error_code ec, Socket socket) {
    if (stopping_ || ec) return; // the listener's accept fails only once it is closed
    const asio::ip::address peer = peer_.address(); // the client's (a PROXY header's, behind a balancer)
    {
        counters_.accepted.fetch_add(1, std::memory_order_relaxed);
        socket.set_option(asio::ip::tcp::no_delay(true), ec);
        if (counters_.active.load(std::memory_order_relaxed) >= options_.max_connections) {
            asio::post(target.ex, [this, &target, peer, s = std::move(socket)]() mutable { at_the_limit(target, std::move(s), peer); });
        } else {
            counters_.active.fetch_add(1, std::memory_order_relaxed); // reserved; the session takes it over
            asio::post(target.ex, [this, &target, peer, s = std::move(socket)]() mutable {
                counters_.active.fetch_sub(1, std::memory_order_relaxed);
                start_session(target, std::move(s), peer);
            });
        }
    }
    accept();
}

template <class Socket>
void server::start_session(worker& w, Socket socket, const asio::ip::address& peer) {
    using tls = heartwheel::net::tls_socket; // OpenSSL on the descriptor: no record buffers of its own
    using heartwheel::net::connection_liveness;
    if constexpr (std::is_same_v<Socket, asio::ip::tcp::socket>) { // accepted for TLS only (accept())
        tls stream(std::move(socket), *tls_);
        if (timing_) timing_->start_tls(w, std::move(stream), peer);
        else session<tls, connection_liveness>::start(w, std::move(stream), peer, w.context);
    } else {
        if (!timing_) session<Socket, connection_liveness>::start(w, std::move(socket), peer, w.context);
        else if constexpr (std::is_same_v<Socket, core_socket>) timing_->start_plain(w, std::move(socket), peer);
        else timing_->start_pooled(w, std::move(socket), peer);
    }
}

// A newcomer at --max-connections: with --source-share, one from an address within its share takes
// the place of the newest connection of the address furthest over it (which closes over-share; until
// it has, the server holds one more than the limit); otherwise, and without shares, BYE busy.
template <class Socket>
void server::at_the_limit(worker& w, Socket socket, const asio::ip::address& peer) {
    listener_->at_capacity(); // TLS: silent handshakes (no ClientHello for --handshake-stall) are shed
    if (heartwheel::net::source_share::member* victim = w.shares ? w.shares->make_room(peer) : nullptr) {
        static_cast<session_base&>(*victim).displace();
        start_session(w, std::move(socket), peer);
        return;
    }
    reject_busy(std::move(socket));
}

template <class Socket>
void server::reject_busy(Socket socket) {
    listener_->dropped(); // never a connection: its admission place is free
    counters_.busy.fetch_add(1, std::memory_order_relaxed);
    live_counters_.closed(busy); // the server's own reason: accepted, never a session
    static const std::string bye = "BYE busy\n";
    auto s = std::make_shared<Socket>(std::move(socket));
    if (tls_) { // a TLS client cannot read plain text: just close
        std::error_code ignored;
        s->close(ignored);
        return;
    }
    asio::async_write(*s, asio::buffer(bye), [s](std::error_code, std::size_t) {
        std::error_code ignored;
        s->shutdown(asio::socket_base::shutdown_both, ignored);
        s->close(ignored);
    });
}

// Open descriptors, for process_open_fds. Linux 6.2 and later report the count as the size of
// /proc/self/fd (one stat, whatever the count); older kernels report 0 there, and the directory is
// walked instead — a walk that costs ~3 µs per descriptor on this thread (15,000 connections: tens
// of milliseconds per scrape, every wheel wake-up of this worker waiting behind it).
// Open connections are accepted minus closed, from the same reading: a connection counts as closed
// from the moment its close begins (its goodbye may linger for up to a second), so accepted = the
// sum of closes + open holds in every stats line and scrape; the lingering ones are `closing`.
server::connection_counts server::counts(const heartwheel::net::counters_snapshot& c) const {
    const std::uint64_t closed = c.closes_total();
    const std::uint64_t accepted = counters_.accepted.load(); // after the closes: never below them
    const std::uint64_t open = accepted > closed ? accepted - closed : 0;
    const std::uint64_t alive = counters_.active.load();
    return {accepted, open, alive > open ? alive - open : 0};
}

std::string server::stats_line() const {
    const auto c = live_counters_.snapshot();
    const auto n = counts(c);
    std::size_t wheel = 0;
    for (const auto& w : workers_) wheel += w->wheel_size.load(std::memory_order_relaxed);
    std::ostringstream os;
    os << "connections=" << n.open << " accepted=" << n.accepted << " closes=" << c.closes_text();
    os << " pings=" << c.pings_sent << " pongs=" << c.pongs_received << " misses=" << c.heartbeat_misses
       << " idle=" << c.reader_idle << '/' << c.writer_idle << '/' << c.all_idle << " timeouts="
       << c.request_timeouts + c.closes[static_cast<std::size_t>(close_reason::write_timeout)]
       << " rtt_avg_ms=" << std::fixed << std::setprecision(3)
       << (c.rtt_samples ? static_cast<double>(c.rtt_total_us) / static_cast<double>(c.rtt_samples) / 1000.0 : 0.0)
       << " wheel=" << wheel << " closing=" << n.closing;
    if (options_.live.scales())
        os << " scale=" << scale()
           << " closes_while_scaled=" << c.closes_while_scaled;
    return os.str();
}

std::string server::prometheus_text() const {
    const auto c = live_counters_.snapshot();
    std::size_t wheel = 0;
    heartwheel::driver_stats drivers; // summed over the workers' mirrors
    for (const auto& w : workers_) {
        wheel += w->wheel_size.load(std::memory_order_relaxed);
        drivers.wakeups += w->wakeups.load(std::memory_order_relaxed);
        drivers.lateness_total_us += w->lateness_total_us.load(std::memory_order_relaxed);
        for (std::size_t i = 0; i < drivers.lateness.size(); ++i) drivers.lateness[i] += w->lateness[i].load(std::memory_order_relaxed);
    }
    heartwheel::net::prometheus_writer out;
    // The server's own families, then the library's (liveness, wheels, read chunks).
    const auto n = counts(c);
    out.metric("heartwheel_connections", "gauge", "Open connections (accepted and not closed; see closing).", n.open);
    out.metric("heartwheel_connections_closing", "gauge", "Closed connections still saying goodbye (lingering).", n.closing);
    out.metric("heartwheel_accepted_total", "counter", "Accepted connections.", n.accepted);
    out.metric("heartwheel_accept_pauses_total", "counter", "Times accepting paused at the descriptor limit.",
               listener_->pauses());
    out.metric("heartwheel_read_buffers", "gauge", "Connections holding a read buffer (a partial line or unhandled lines).",
               counters_.read_buffers.load());
    out.metric("heartwheel_read_buffer_bytes", "gauge", "Heap bytes of those read buffers.", counters_.read_buffer_bytes.load());
    out.metric("heartwheel_lines_total", "counter", "Lines received (data, PING and PONG).", counters_.lines.load());
    out.metric("heartwheel_pings_answered_total", "counter", "PING lines from peers answered with PONG.",
               counters_.pings_answered.load());
    out.metric("heartwheel_overload_pressure", "gauge", "Connections or descriptors in use over their limit, the fuller.",
               pressure());
    out.metric("heartwheel_timeout_scale", "gauge", "Scaled timeouts at min + scale * (max - min); 1 = unscaled.", scale());
    out.process(draining_.load());
    out.liveness(c);
    out.wheels(wheel, drivers);
    out.read_chunks();
    return out.text();
}

void server::start_timers(std::ostream& out) {
    // The wheels' figures are copied for other threads this often: every 200 ms for /metrics, else
    // as often as the stats line needs them (at most every second).
    const auto mirror = std::chrono::milliseconds(
        options_.metrics ? 200 : options_.stats_interval_ms > 0 ? std::min<std::int64_t>(options_.stats_interval_ms, 1000) : 1000);
    // Without a stats line or /metrics to feed, nothing is mirrored: an idle server keeps no timer.
    for (auto& w : workers_) {
        if (options_.stats_interval_ms <= 0 && !options_.metrics) break;
        worker* wp = w.get();
        asio::post(w->ex, [wp, mirror] {
            wp->mirror_stats();
            wp->mirror = wp->wheel.schedule_every(mirror, [wp] { wp->mirror_stats(); });
        });
    }
    if (options_.stats_interval_ms > 0) {
        worker& w0 = *workers_[0];
        timers_.push_back(w0.wheel.schedule_every(std::chrono::milliseconds(options_.stats_interval_ms),
                                                   [this, &out] { out << "stats " << stats_line() << std::endl; }));
    }
}

void server::begin_shutdown() {
    if (stopping_) return;
    stopping_ = true;
    std::error_code ignored;
    listener_->close();
    if (metrics_acceptor_) metrics_acceptor_->close(ignored);
    for_each_session(&session_base::shutdown);
    // Stop everything once every connection is gone. When the grace period is over, connections
    // still saying goodbye (a peer that neither reads nor closes) are closed at once, then stop.
    const auto deadline = heartwheel::clock::now() + std::chrono::milliseconds(options_.shutdown_grace_ms);
    worker& w0 = *workers_[0];
    timers_.push_back(w0.wheel.schedule_every(std::chrono::milliseconds(10), [this, deadline, forced = false]() mutable {
        const auto now = heartwheel::clock::now();
        if (counters_.active.load() != 0 && now < deadline) return;
        if (counters_.active.load() != 0 && !forced) {
            forced = true;
            for_each_session(&session_base::abort);
            return;
        }
        if (counters_.active.load() != 0 && now < deadline + std::chrono::milliseconds(500)) return;
        workers_.shards().stop();
    }));
}

// The first signal drains (with a window), the next one shuts down at once.
void server::await_signal() {
    signals_.async_wait([this](std::error_code ec, int) {
        if (ec) return;
        if (draining_ || stopping_) return begin_shutdown();
        begin_leaving();
        if (draining_) await_signal();
    });
}

void server::begin_leaving() {
    if (options_.drain_window_ms > 0) begin_drain();
    else begin_shutdown();
}

void server::begin_drain() {
    draining_ = true;
    listener_->close(); // the metrics stay up: the draining gauge is what an operator watches
    std::vector<asio::io_context*> contexts; // the pool model's workers share one
    for (auto& w : workers_)
        if (std::find(contexts.begin(), contexts.end(), &w->ioc) == contexts.end()) contexts.push_back(&w->ioc);
    drains_left_ = contexts.size();
    for (asio::io_context* ioc : contexts)
        heartwheel::net::async_drain(ioc->get_executor(), std::chrono::milliseconds(options_.drain_window_ms),
                                     [this](std::error_code, std::size_t) {
                                         if (drains_left_.fetch_sub(1) == 1)
                                             asio::post(workers_[0]->ex, [this] { begin_shutdown(); });
                                     });
}

void server::handed_over() { // the listener said so on stderr, and stopped accepting
    std::error_code ignored;
    if (metrics_acceptor_) metrics_acceptor_->close(ignored); // the successor serves /metrics now
    if (!stopping_ && !draining_) begin_leaving();
}

void server::for_each_session(void (session_base::*fn)()) {
    for (auto& w : workers_) {
        worker* wp = w.get();
        asio::post(wp->ex, [wp, fn] { wp->for_each_session(fn); });
    }
}

// Connections an address holds beyond --source-share do not count: one source filling the server
// must not shrink everyone else's timeouts (its busy connections would never be the idle ones shed).
double server::pressure() const {
    std::size_t excess = 0;
    for (const auto& w : workers_) excess += w->excess.load(std::memory_order_relaxed);
    const std::size_t all = counters_.active.load(std::memory_order_relaxed);
    const double active = static_cast<double>(all > excess ? all - excess : 0);
    double p = active / static_cast<double>(options_.max_connections);
    if (fd_limit_ > 0) // descriptors are spent by every connection, within its share or not
        p = std::max(p, static_cast<double>(fd_base_ + all) / static_cast<double>(fd_limit_));
    return std::min(p, 1.0);
}

double server::scale() const {
    return heartwheel::net::scale_for_pressure(pressure_millis_.load() / 1000.0, options_.live.overload.threshold);
}

void server::population_changed() {
    const int millis = static_cast<int>(pressure() * 1000.0);
    if (pressure_millis_.exchange(millis, std::memory_order_relaxed) == millis) return;
    for (auto& w : workers_) {
        worker* wp = w.get();
        // Each worker reads the newest value when the post runs: stale posts change nothing.
        asio::post(wp->ex, [this, wp] { wp->scale.set_pressure(pressure_millis_.load(std::memory_order_relaxed) / 1000.0); });
    }
}

void server::stop() {
    asio::post(workers_[0]->ex, [this] { begin_shutdown(); });
}

int server::run(std::ostream& out) {
    // Caught before the first line: a supervisor that reads it may signal at once, and must get a drain.
    signals_.add(SIGINT);
    signals_.add(SIGTERM);
    await_signal();
    out << "listening on " << local_endpoint().text() << std::endl;
    if (!limit_note_.empty()) std::cerr << limit_note_ << std::endl;
    if (metrics_acceptor_) { // after the pinned first line: where /metrics is (with --metrics HOST:0, the port chosen)
        const auto ep = metrics_acceptor_->local_endpoint();
        out << "metrics on " << endpoint_spec{ep.address().to_string(), ep.port()}.text() << std::endl;
    }
    fd_base_ = heartwheel::net::open_descriptors();
    if (options_.live.scales())
        for (auto& w : workers_) w->on_population_change = [this] { population_changed(); };
    accept();
    if (metrics_acceptor_) heartwheel::net::serve_metrics(*metrics_acceptor_, workers_[0]->wheel, [this] { return prometheus_text(); });
    start_timers(out);
    workers_.shards().run(); // every shard's thread, this one among them, until the shutdown's stop()
    for (auto& w : workers_) w->mirror_stats();
    out << "final " << stats_line() << std::endl;
    return 0;
}

} // namespace echo
