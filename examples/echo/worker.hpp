// worker.hpp — what the echo server keeps beside each of its shards: the sessions, the admission
// state, the figures mirrored for other threads.
//
// The shard itself — executor, wheel, timeout scale, connection context — is the library's
// (net::shards): thread per core (--threads), an io_context per shard run by one thread; thread pool
// (--io-threads), one io_context run by N threads and each shard a strand of it. Everything of a
// worker (its wheel, its sessions' sockets, posts to it) runs on its shard's executor.
// Sessions link themselves into a ring (no allocation per session) so that shutdown can say BYE to
// each; the ring is touched only from the worker's own executor. wheel_size mirrors the wheel's size
// for the stats line (other threads read it). When its last session is gone the worker hands freed
// memory back to the OS a second later (glibc keeps it in its arenas otherwise): one timer, armed
// only after activity, so an idle worker has nothing pending and never wakes up.
#ifndef HEARTWHEEL_ECHO_WORKER_HPP
#define HEARTWHEEL_ECHO_WORKER_HPP

#include "options.hpp"

#include <heartwheel/asio_wheel.hpp>
#include <heartwheel/net/connection/connection_context.hpp>
#include <heartwheel/net/connection/connection_handler.hpp>
#include <heartwheel/net/metrics/counters.hpp>
#include <heartwheel/net/server/handshake_gate.hpp>
#include <heartwheel/net/server/shards.hpp>
#include <heartwheel/net/server/source_share.hpp>
#include <heartwheel/net/policies/timeout_scale.hpp>

#include <asio/basic_stream_socket.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>

#include <array>
#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <vector>

namespace echo {

/// The sockets of a plain TCP server name their executor's type instead of holding any_io_executor
/// (56 bytes, in the socket and copied twice into each pending receive; a polymorphic call per
/// completion): with a thread per core the io_context's own executor (8 bytes), in the thread pool
/// their shard's strand (24). bench/scale/footprint.cpp measures both against any_io_executor.
/// tls_socket is over asio::ip::tcp::socket: TLS connections keep the polymorphic executor.
using core_socket = asio::basic_stream_socket<asio::ip::tcp, asio::io_context::executor_type>;
using strand_socket = asio::basic_stream_socket<asio::ip::tcp, heartwheel::net::shard::io_strand>;

/// A session's place in its worker's registry: a ring of links inside the sessions themselves (no
/// allocation per session, where a hash set took a node and a bucket: about 40 bytes).
class session_link {
public:
    session_link() noexcept = default;
    session_link(const session_link&) = delete;
    session_link& operator=(const session_link&) = delete;
    ~session_link() { unlink(); }

    /// Joins the ring just before `at` (at the end, when `at` is the ring's head).
    void link_before(session_link& at) noexcept {
        unlink();
        next_ = &at;
        prev_ = at.prev_;
        prev_->next_ = this;
        at.prev_ = this;
    }
    void unlink() noexcept {
        prev_->next_ = next_;
        next_->prev_ = prev_;
        prev_ = next_ = this;
    }
    bool alone() const noexcept { return next_ == this; }
    session_link* next() const noexcept { return next_; }

private:
    session_link* prev_ = this;
    session_link* next_ = this;
};

// The connection's handler first: its vtable pointer is the session's only one (8 bytes less per
// session than a polymorphic base of its own beside the handler). Every session is counted under its
// source (--source-share, on by default): a member of the worker's table, three pointers in place.
class session_base : public heartwheel::net::connection_handler,
                     public session_link,
                     public heartwheel::net::source_share::member {
public:
    /// Say BYE shutdown and close.
    virtual void shutdown() = 0;
    /// Close now, without a goodbye (the worker is going away).
    virtual void abort() = 0;
    /// Close over-share: a newcomer within its address's share takes this session's place
    /// (source_share::make_room uncounted it already).
    virtual void displace() = 0;
};

struct server_counters {
    std::atomic<std::uint64_t> accepted{0}, active{0}, busy{0}, lines{0}, pings_answered{0};
    /// Sessions holding a read buffer of their own (a partial line, or lines stashed under
    /// backpressure), and its heap bytes: zero while every connection is idle between lines.
    std::atomic<std::uint64_t> read_buffers{0}, read_buffer_bytes{0};
};

// Sessions still queued in a shard's io_context hold pointers to their worker: worker_set (below)
// shuts the shards down (wheels, then the queued handlers) before the workers go.
struct worker {
    worker(const server_options& o, heartwheel::net::liveness_counters& lc, server_counters& sc,
           heartwheel::net::shard& shard)
        : options(o), live_counters(lc), counters(sc), ioc(shard.io_context()), ex(shard.get_executor()), strand(shard.strand()),
          wheel(shard.wheel()), scale(shard.scale()), context(shard.context()), handshakes(share_of_handshakes(o)) {
        if (const std::size_t share = o.effective_source_share(); share != 0)
            shares.emplace((share + o.workers() - 1) / o.workers()); // this worker's part
    }
    /// Before the shards shut down: the sessions still open (the shutdown grace ran out) close now,
    /// so each connection lets go of its session.
    void close_all() {
        for_each_session(&session_base::abort);
    }

    /// Calls `fn` on every session (on the worker's thread); a call may end any session, its own
    /// included: a cursor in the ring, just after the session called, tells where to go on.
    void for_each_session(void (session_base::*fn)()) {
        if (!cursor.alone()) throw std::logic_error("echo::worker::for_each_session called from inside itself");
        for (session_link* l = sessions.next(); l != &sessions;) {
            cursor.link_before(*l->next());
            (static_cast<session_base*>(l)->*fn)();
            l = cursor.next();
            cursor.unlink();
        }
    }

    /// Called when a connection is counted under its source or stops being: mirrors the excess for
    /// the server's pressure (re-judged by the population change that comes with it).
    void mirror_excess() {
        excess.store(shares ? shares->excess() : 0, std::memory_order_relaxed);
    }

    /// Called when a session starts or ends: the server re-judges its pressure (overload scaling).
    void population_changed() {
        if (on_population_change) on_population_change();
    }
    std::function<void()> on_population_change;


    /// This thread's share of the per-source handshake limits: each split evenly between the threads
    /// (rounded up).
    static heartwheel::net::handshake_limits share_of_handshakes(const server_options& o) {
        heartwheel::net::handshake_limits l = o.handshakes;
        const auto share = [n = o.workers()](auto v) { return static_cast<decltype(v)>((v + n - 1) / n); };
        l.max_pending_per_source = share(l.max_pending_per_source);
        l.per_source_rate = share(l.per_source_rate);
        return l;
    }

    static heartwheel::wheel_config wheel_config(const server_options& o) {
        heartwheel::wheel_config c;
        c.tick = std::chrono::milliseconds(o.tick_ms);
        c.max_fires_per_advance = 10000;
        return c;
    }

    session_link sessions; ///< the head of the ring of this worker's sessions (each links itself in)
    session_link cursor;   ///< for_each_session's place in that ring while it walks
    const server_options& options;
    heartwheel::net::liveness_counters& live_counters;
    server_counters& counters;
    asio::io_context& ioc;                    ///< the io_context its shard runs on (its own, or the pool)
    asio::any_io_executor ex;                 ///< its shard's executor: an io_context's, or a strand of the pool
    const heartwheel::net::shard::io_strand* strand; ///< that strand as its own type; null with a thread per core
    heartwheel::asio_wheel& wheel;
    /// The scaled timeouts of this worker's connections (--*-min flags); pressure set by the server.
    heartwheel::net::timeout_scale& scale;
    /// What every connection of this worker shares: the wheel, the policies, the counters, the scale.
    const heartwheel::net::connection_context& context;
    /// TLS handshakes in progress on this thread, bounded per source.
    heartwheel::net::handshake_gate handshakes;
    /// Connections by source address (--source-share, unless 0), and its excess mirrored for other threads.
    std::optional<heartwheel::net::source_share> shares;
    std::atomic<std::size_t> excess{0};
    heartwheel::timer_handle mirror; ///< keeps wheel_size current (only with stats or metrics)
    std::atomic<std::size_t> wheel_size{0};
    /// The driver's figures, mirrored with wheel_size for other threads (metrics).
    std::atomic<std::uint64_t> wakeups{0};
    std::atomic<std::int64_t> lateness_total_us{0};
    std::array<std::atomic<std::uint64_t>, heartwheel::driver_stats::lateness_bounds_us.size() + 1> lateness{};

    /// On the worker's thread: copies the wheel's and the driver's figures for other threads.
    void mirror_stats() {
        wheel_size = wheel.size();
        const auto& d = wheel.stats();
        wakeups = d.wakeups;
        lateness_total_us = d.lateness_total_us;
        for (std::size_t i = 0; i < lateness.size(); ++i) lateness[i] = d.lateness[i];
    }
};

/// The server's shards (one per --threads / --io-threads) and the worker beside each, torn down in
/// the one safe order: sessions closed, the shards shut down (wheels, then queued handlers, which may
/// destroy sessions that tell their worker), then the workers, then the shards.
class worker_set {
public:
    worker_set(const server_options& o, heartwheel::net::liveness_counters& lc, server_counters& sc)
        : shards_(o.workers(), o.io_threads > 0 ? heartwheel::net::threading::thread_pool : heartwheel::net::threading::thread_per_core,
                  o.live, &lc, worker::wheel_config(o)) {
        for (std::size_t i = 0; i < shards_.size(); ++i) workers_.push_back(std::make_unique<worker>(o, lc, sc, shards_[i]));
    }
    ~worker_set() {
        for (auto& w : workers_) w->close_all();
        shards_.shutdown();
    }
    worker_set(const worker_set&) = delete;
    worker_set& operator=(const worker_set&) = delete;

    std::size_t size() const noexcept { return workers_.size(); }
    const std::unique_ptr<worker>& operator[](std::size_t i) const noexcept { return workers_[i]; }
    auto begin() const noexcept { return workers_.begin(); }
    auto end() const noexcept { return workers_.end(); }
    heartwheel::net::shards& shards() noexcept { return shards_; }

private:
    heartwheel::net::shards shards_;
    std::vector<std::unique_ptr<worker>> workers_; ///< destroyed before the shards
};

} // namespace echo

#endif
