// liveness.hpp — the per-socket baseline the benchmarks compare the wheel with (echo_server --timers
// asio): one asio::steady_timer per connection per concern, re-armed on every read or write (cancel +
// async_wait), as hand-rolled Asio servers do. It plugs into heartwheel::net::connection in place of
// net's connection_liveness (same interface), so both timings share the stream, the write queue and
// the close path; only the timing differs. The handler's on_policy_close runs at most once, and nothing
// runs after close() or destruction. no_liveness (--timers none) is the floor: no timing at all.
// Benchmark code, not the example's: register.cpp plugs both into the echo server (echo/timing.hpp).
#ifndef HEARTWHEEL_ECHO_BASELINES_LIVENESS_HPP
#define HEARTWHEEL_ECHO_BASELINES_LIVENESS_HPP

#include "echo/worker.hpp"

#include <heartwheel/net/policies/connection_liveness.hpp>

#include <asio/steady_timer.hpp>

#include <memory>

namespace echo::baselines {

using heartwheel::net::close_reason;

class asio_liveness {
public:
    asio_liveness(worker& w, heartwheel::net::liveness_handler& handler);
    ~asio_liveness();
    /// A factory for heartwheel::net::connection.
    static auto factory(worker& w) {
        return [&w](heartwheel::net::liveness_handler& handler) {
            return asio_liveness(w, handler);
        };
    }
    void handshake_started();
    void handshake_done() { handshake_.cancel(); }
    void on_read(bool data);
    void on_write_started();
    void on_write_progress();
    void on_write_complete(bool drained);
    void on_pong();
    void close();
    /// Who writes the pings (the connection names its application once it can talk).
    void set_ping_writer(heartwheel::net::ping_writer* w) noexcept { pinger_ = w; }
    /// The worker's wheel and counters: the connection's own timers and close counts go there.
    heartwheel::timer_scheduler& scheduler() const noexcept { return w_.wheel; }
    heartwheel::net::liveness_counters* counters() const noexcept { return w_.context.counters; }

private:
    using timer = asio::steady_timer;
    void arm(timer& t, std::chrono::milliseconds after, void (asio_liveness::*fn)());
    void reader_idle() { decide(close_reason::reader_idle); }
    void writer_idle() { decide(close_reason::writer_idle); }
    void all_idle() { decide(close_reason::all_idle); }
    void read_timed_out() { decide(close_reason::read_timeout); }
    void write_timed_out() { decide(close_reason::write_timeout); }
    void handshake_timed_out() { decide(close_reason::handshake_timeout); }
    void max_age() { decide(close_reason::max_age); }
    void send_ping();
    void judge_ping();
    void decide(close_reason r);

    worker& w_;
    heartwheel::net::liveness_handler& handler_;
    heartwheel::net::ping_writer* pinger_ = nullptr;
    const heartwheel::net::liveness_config& cfg_;
    std::shared_ptr<asio_liveness*> self_;
    bool closed_ = false;
    timer reader_, writer_, all_, write_timeout_, ping_, miss_, handshake_, age_;
    std::unique_ptr<timer> read_timeout_; ///< only when configured (a pointer's cost otherwise)
    bool writing_ = false, read_since_ping_ = true;
    std::uint32_t misses_ = 0;
    heartwheel::time_point ping_sent_{};
    bool awaiting_pong_ = false;
    bool judging_ = false;  ///< a ping is outstanding: neither answered nor judged
    bool ping_due_ = false; ///< the next ping fell due meanwhile
};

/// --timers none: no liveness at all (no timer, no heartbeat, no timeout) — the floor the
/// benchmarks measure liveness overhead against. Same interface; nothing ever closes the connection.
class no_liveness {
public:
    explicit no_liveness(worker& w) noexcept : w_(&w) {}
    static auto factory(worker& w) {
        return [&w](heartwheel::net::liveness_handler&) { return no_liveness(w); };
    }
    void handshake_started() {}
    void handshake_done() {}
    void on_read(bool) {}
    void on_write_started() {}
    void on_write_progress() {}
    void on_write_complete(bool) {}
    void on_pong() {}
    void close() {}
    /// The worker's wheel and counters: the connection's own timers and close counts go there.
    heartwheel::timer_scheduler& scheduler() const noexcept { return w_->wheel; }
    heartwheel::net::liveness_counters* counters() const noexcept { return w_->context.counters; }

private:
    worker* w_;
};

} // namespace echo::baselines

#endif
