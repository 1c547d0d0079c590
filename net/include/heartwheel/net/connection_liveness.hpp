// heartwheel/net/connection_liveness.hpp — every liveness policy of one connection behind one close
// decision: idle detection, read/write timeouts, heartbeat, request timeouts, and the server limits
// (TLS handshake deadline, maximum age).
//
// Transport-agnostic: it is told about reads and writes and calls back to send a ping and to close.
// net::connection does the telling (its stream records every read and write); it can also be used
// alone:
//
//   heartwheel::net::connection_liveness live(wheel, ex, config, {
//       .on_idle = [&](idle_event e) { /* log, or ignore */ },
//       .send_ping = [&] { write("PING 1\n"); },
//       .close = [&](close_reason why) { say_bye_and_close(why); }});
//   ... live.on_read(); live.on_write_complete(); live.requests().track(id, token);
//
// Closing decisions: reader/writer/all idle close only if close_on_idle; read_timeout, write_timeout,
// the heartbeat's last miss, the handshake deadline and max age always close. The close callback runs
// at most once; after it, after close() or destruction no callback runs, and every outstanding request
// fails with errc::connection_closed. Closes are counted by whoever owns the close path
// (net::connection), not here: every close once, wherever it came from.
#ifndef HEARTWHEEL_NET_CONNECTION_LIVENESS_HPP
#define HEARTWHEEL_NET_CONNECTION_LIVENESS_HPP

#include <heartwheel/net/activity_timer.hpp>
#include <heartwheel/net/connection_limits.hpp>
#include <heartwheel/net/counters.hpp>
#include <heartwheel/net/heartbeat.hpp>
#include <heartwheel/net/idle_state.hpp>
#include <heartwheel/net/liveness_config.hpp>
#include <heartwheel/net/request_tracker.hpp>
#include <heartwheel/net/timeout_scale.hpp>

#include <functional>

namespace heartwheel::net {

class connection_liveness {
public:
    struct callbacks {
        std::function<void(idle_event)> on_idle;   ///< every idle event (optional)
        std::function<void()> send_ping;           ///< write a ping (needed when heartbeats are on)
        std::function<void(close_reason)> close;   ///< a policy decided to close; runs at most once
        bool close_on_idle = true;                 ///< a first idle event of any kind closes
    };

    /// With `scale`, the timeouts that config.overload gives a min shrink under pressure
    /// (timeout_scale.hpp); `scale` must outlive this object.
    connection_liveness(timer_service& svc, asio::any_io_executor ex, const liveness_config& config,
                        callbacks cbs, liveness_counters* counters = nullptr, timeout_scale* scale = nullptr,
                        heartbeat::random_source rnd = {});
    ~connection_liveness();
    connection_liveness(const connection_liveness&) = delete;
    connection_liveness& operator=(const connection_liveness&) = delete;

    /// Bytes arrived. `counts_as_idle_activity` = false for traffic the application does not count
    /// as activity (e.g. pongs, or bytes before a whole message), which still proves liveness to the
    /// heartbeat and the read timeout.
    void on_read(bool counts_as_idle_activity = true);
    /// A write started with data queued (arms the write timeout).
    void on_write_started();
    /// Some bytes of a write went out.
    void on_write_progress();
    /// A whole write finished; `drained` when nothing more is queued (disarms the write timeout).
    void on_write_complete(bool drained = true);
    /// The peer answered our ping.
    void on_pong();
    /// The TLS handshake began / finished (arms / disarms limits.handshake_timeout).
    void handshake_started() { limits_.handshake_started(); }
    void handshake_done() noexcept { limits_.handshake_done(); }

    request_tracker<std::uint64_t>& requests() noexcept { return requests_; }
    const heartbeat& heartbeat_state() const noexcept { return heartbeat_; }
    bool closed() const noexcept { return closed_; }
    /// Stops every timer and fails outstanding requests; idempotent. No callback runs afterwards.
    void close();

private:
    void decide_close(close_reason why);
    /// A close for a timeout that config.overload scales.
    bool scaled_reason(close_reason why) const noexcept;

    timer_service& svc_;
    // Of the config, only what is judged after construction is kept (a connection does not carry a
    // copy of the whole config): the write timeout, and which close reasons the overload scales.
    milliseconds write_timeout_ms_;
    std::uint16_t scaled_reasons_ = 0; ///< bit per close_reason (the scalable ones are all below 16)
    callbacks cbs_;
    liveness_counters* counters_;
    timeout_scale* scale_;
    bool closed_ = false;
    idle_state idle_;
    activity_timer read_timeout_, write_timeout_;
    heartbeat heartbeat_;
    connection_limits limits_;
    request_tracker<std::uint64_t> requests_;
};

} // namespace heartwheel::net

#endif
