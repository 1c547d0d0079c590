// liveness.hpp — the two ways the echo server times a connection, behind one interface:
//  wheel_liveness: heartwheel's connection_liveness and connection_limits on the worker's wheel;
//  asio_liveness:  the baseline — one asio::steady_timer per connection per concern, re-armed on
//                  every read or write (cancel + async_wait), as hand-rolled Asio servers do.
// Both: handshake_started/done, on_read(data), on_write_started/progress/complete, on_pong, close().
// The close hook runs at most once, and nothing runs after close() or destruction.
#ifndef HEARTWHEEL_ECHO_LIVENESS_HPP
#define HEARTWHEEL_ECHO_LIVENESS_HPP

#include "worker.hpp"

#include <heartwheel/net/connection_limits.hpp>
#include <heartwheel/net/connection_liveness.hpp>

#include <asio/steady_timer.hpp>

#include <memory>

namespace echo {

using heartwheel::net::close_reason;

struct liveness_hooks {
    std::function<void()> send_ping;
    std::function<void(close_reason)> close;
};

class wheel_liveness {
public:
    wheel_liveness(worker& w, liveness_hooks hooks);
    void handshake_started() { limits_.handshake_started(); }
    void handshake_done() { limits_.handshake_done(); }
    void on_read(bool data) { live_.on_read(data); }
    void on_write_started() { live_.on_write_started(); }
    void on_write_progress() { live_.on_write_progress(); }
    void on_write_complete(bool drained) { live_.on_write_complete(drained); }
    void on_pong() { live_.on_pong(); }
    void close() {
        live_.close();
        limits_.stop();
    }

private:
    void decide(close_reason r);
    liveness_hooks hooks_;
    bool closed_ = false;
    heartwheel::net::connection_liveness live_;
    heartwheel::net::connection_limits limits_;
};

class asio_liveness {
public:
    asio_liveness(worker& w, liveness_hooks hooks);
    ~asio_liveness();
    void handshake_started();
    void handshake_done() { handshake_.cancel(); }
    void on_read(bool data);
    void on_write_started();
    void on_write_progress();
    void on_write_complete(bool drained);
    void on_pong();
    void close();

private:
    using timer = asio::steady_timer;
    void arm(timer& t, std::chrono::milliseconds after, void (asio_liveness::*fn)());
    void reader_idle() { decide(close_reason::reader_idle); }
    void writer_idle() { decide(close_reason::writer_idle); }
    void all_idle() { decide(close_reason::all_idle); }
    void write_timed_out() { decide(close_reason::write_timeout); }
    void handshake_timed_out() { decide(close_reason::handshake_timeout); }
    void max_age() { decide(close_reason::max_age); }
    void send_ping();
    void judge_ping();
    void decide(close_reason r);

    worker& w_;
    liveness_hooks hooks_;
    const heartwheel::net::liveness_config& cfg_;
    std::shared_ptr<asio_liveness*> self_;
    bool closed_ = false;
    timer reader_, writer_, all_, write_timeout_, ping_, miss_, handshake_, age_;
    bool writing_ = false, read_since_ping_ = true;
    std::uint32_t misses_ = 0;
    heartwheel::time_point ping_sent_{};
    bool awaiting_pong_ = false;
    bool judging_ = false;  ///< a ping is outstanding: neither answered nor judged
    bool ping_due_ = false; ///< the next ping fell due meanwhile
};

} // namespace echo

#endif
