// worker.hpp — one shard of the server: its executor, its wheel, its context and its sessions.
//
// Thread per core (--threads): the worker owns an io_context run by one thread. Thread pool
// (--io-threads): the server owns one io_context run by N threads and each worker is a strand of it;
// everything of the worker (its wheel, its sessions' sockets, posts to it) runs on that strand.
// Sessions register themselves so that shutdown can say BYE to each; the registry is touched only
// from the worker's own executor. wheel_size mirrors the wheel's size for the stats line (other threads
// read it). When its last session is gone the worker hands freed memory back to the OS a second later
// (glibc keeps it in its arenas otherwise): one timer, armed only after activity, so an idle worker
// has nothing pending and never wakes up.
#ifndef HEARTWHEEL_ECHO_WORKER_HPP
#define HEARTWHEEL_ECHO_WORKER_HPP

#include "options.hpp"

#include <heartwheel/asio_wheel.hpp>
#include <heartwheel/net/connection_context.hpp>
#include <heartwheel/net/counters.hpp>
#include <heartwheel/net/handshake_gate.hpp>
#include <heartwheel/net/source_share.hpp>
#include <heartwheel/net/timeout_scale.hpp>

#include <asio/io_context.hpp>
#include <asio/strand.hpp>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <array>
#include <atomic>
#include <functional>
#include <optional>
#include <unordered_set>
#include <vector>

namespace echo {

class session_base {
public:
    virtual ~session_base() = default;
    /// Say BYE shutdown and close.
    virtual void shutdown() = 0;
    /// Close now, without a goodbye (the worker is going away).
    virtual void abort() = 0;
};

struct server_counters {
    std::atomic<std::uint64_t> accepted{0}, active{0}, busy{0}, lines{0}, pings_answered{0};
    std::atomic<std::uint64_t> accept_pauses{0}; ///< accept() failed for lack of descriptors (EMFILE...)
    /// Sessions holding a read buffer of their own (a partial line, or lines stashed under
    /// backpressure), and its heap bytes: zero while every connection is idle between lines.
    std::atomic<std::uint64_t> read_buffers{0}, read_buffer_bytes{0};
};

// Member order matters: sessions still queued in `own_io` are destroyed by its destructor, after
// `wheel` is gone (its nodes were detached) but while `sessions` and the counters still exist. The
// pool's io_context outlives the workers: the server shuts it down first (server::~server).
struct worker {
    /// With `pool`, a strand of it (the thread-pool model); without, an io_context of its own.
    worker(const server_options& o, heartwheel::net::liveness_counters& lc, server_counters& sc,
           asio::io_context* pool = nullptr)
        : options(o), live_counters(lc), counters(sc), own_io(pool ? nullptr : std::make_unique<asio::io_context>(1)),
          ioc(pool ? *pool : *own_io),
          ex(pool ? asio::any_io_executor(asio::make_strand(*pool)) : asio::any_io_executor(own_io->get_executor())),
          wheel(ex, wheel_config(o)),
          scale(wheel, o.live.overload.threshold), context(wheel, o.live, &lc, &scale, session_options(o)),
          handshakes(share_of_handshakes(o)) {
        if (o.source_share != 0) shares.emplace((o.source_share + o.workers() - 1) / o.workers()); // this worker's part
    }
    ~worker() {
        closing = true; // sessions destroyed by io's destructor must not touch the wheel
        // Sessions still open (the shutdown grace ran out) close now, so each connection lets go of
        // its session; io's destructor then destroys what is left of them with their handlers.
        for_each_session(&session_base::abort);
    }

    /// Calls `fn` on every session (on the worker's thread); a call may end other sessions.
    void for_each_session(void (session_base::*fn)()) {
        std::vector<session_base*> all(sessions.begin(), sessions.end());
        for (auto* s : all)
            if (sessions.count(s)) (s->*fn)();
    }

    /// Called when a connection is counted under its source or stops being: mirrors the excess for
    /// the server's pressure, which it then re-judges.
    void shares_changed() {
        excess.store(shares ? shares->excess() : 0, std::memory_order_relaxed);
        population_changed();
    }

    /// Called when a session starts or ends: the server re-judges its pressure (overload scaling).
    void population_changed() {
        if (on_population_change) on_population_change();
    }
    std::function<void()> on_population_change;

    /// Called by a session's destructor.
    void session_gone() {
        if (!sessions.empty() || closing || trim.pending()) return;
        trim = wheel.schedule_after(std::chrono::seconds(1), [] {
#if defined(__GLIBC__)
            ::malloc_trim(0);
#endif
        });
    }

    /// The echo sessions' connection options: a data line is activity, a PONG is not (the session says
    /// message_received()); slow consumers bounded by --output-*.
    static heartwheel::net::connection_options session_options(const server_options& o) {
        heartwheel::net::connection_options c;
        c.reads_are_idle_activity = false;
        c.output = o.live.output;
        return c;
    }

    /// This thread's share of the handshake limits: each split evenly between the threads (rounded up).
    static heartwheel::net::handshake_limits share_of_handshakes(const server_options& o) {
        heartwheel::net::handshake_limits l = o.handshakes;
        const auto share = [n = o.workers()](auto v) { return static_cast<decltype(v)>((v + n - 1) / n); };
        l.max_pending = share(l.max_pending);
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

    std::unordered_set<session_base*> sessions;
    bool closing = false;
    const server_options& options;
    heartwheel::net::liveness_counters& live_counters;
    server_counters& counters;
    std::unique_ptr<asio::io_context> own_io; ///< thread per core: this worker's; thread pool: none
    asio::io_context& ioc;                    ///< the io_context this worker runs on (its own, or the pool)
    asio::any_io_executor ex;                 ///< the worker's executor: own_io's, or a strand of the pool
    heartwheel::asio_wheel wheel;
    /// The scaled timeouts of this worker's connections (--*-min flags); pressure set by the server.
    heartwheel::net::timeout_scale scale;
    /// What every connection of this worker shares: the wheel, the policies, the counters, the scale.
    heartwheel::net::connection_context context;
    /// TLS handshakes in progress on this thread, bounded in all and per source.
    heartwheel::net::handshake_gate handshakes;
    /// Connections by source address (--source-share), and its excess mirrored for other threads.
    std::optional<heartwheel::net::source_share> shares;
    std::atomic<std::size_t> excess{0};
    heartwheel::timer_handle mirror; ///< keeps wheel_size current (only with stats or metrics)
    heartwheel::timer_handle trim;   ///< malloc_trim once idle
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

} // namespace echo

#endif
