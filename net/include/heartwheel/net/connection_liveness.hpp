// heartwheel/net/connection_liveness.hpp — idle detection, read/write timeouts, heartbeat and request
// timeouts for one connection, wired to one close callback. Transport-agnostic: the application
// reports reads and writes (of a tcp::socket, an ssl::stream or anything else) and supplies how to
// send a ping and how to close. Example:
//
//   heartwheel::net::connection_liveness live(wheel, ex, config, {
//       .on_idle = [&](idle_event e) { /* log, or ignore */ },
//       .send_ping = [&] { write("PING 1\n"); },
//       .close = [&](close_reason why) { say_bye_and_close(why); }});
//   ... live.on_read(); live.on_write_complete(); live.requests().track(id, token);
//
// Closing decisions: reader/writer/all idle close only if close_on_idle; read_timeout, write_timeout
// and the heartbeat's last miss always close. After close() or destruction no callback runs, and every
// outstanding request fails with errc::connection_closed.
#ifndef HEARTWHEEL_NET_CONNECTION_LIVENESS_HPP
#define HEARTWHEEL_NET_CONNECTION_LIVENESS_HPP

#include <heartwheel/net/activity_timer.hpp>
#include <heartwheel/net/counters.hpp>
#include <heartwheel/net/heartbeat.hpp>
#include <heartwheel/net/idle_state.hpp>
#include <heartwheel/net/liveness_config.hpp>
#include <heartwheel/net/request_tracker.hpp>

#include <functional>
#include <optional>

namespace heartwheel::net {

class connection_liveness {
public:
    struct callbacks {
        std::function<void(idle_event)> on_idle;   ///< every idle event (optional)
        std::function<void()> send_ping;           ///< write a ping (needed when heartbeats are on)
        std::function<void(close_reason)> close;   ///< a policy decided to close; reason for the log
        bool close_on_idle = true;                 ///< a first idle event of any kind closes
    };

    connection_liveness(timer_service& svc, asio::any_io_executor ex, const liveness_config& config,
                        callbacks cbs, liveness_counters* counters = nullptr, heartbeat::random_source rnd = {});
    ~connection_liveness();
    connection_liveness(const connection_liveness&) = delete;
    connection_liveness& operator=(const connection_liveness&) = delete;

    /// Bytes arrived. `counts_as_idle_activity` = false for traffic the application does not count
    /// as activity (e.g. pongs), which still proves liveness to the heartbeat.
    void on_read(bool counts_as_idle_activity = true);
    /// A write started with data queued (arms the write timeout).
    void on_write_started();
    /// Some bytes of a write went out.
    void on_write_progress();
    /// A whole write finished; `drained` when nothing more is queued (disarms the write timeout).
    void on_write_complete(bool drained = true);
    /// The peer answered our ping.
    void on_pong();

    request_tracker<std::uint64_t>& requests() noexcept { return requests_; }
    const heartbeat& heartbeat_state() const noexcept { return heartbeat_; }
    bool closed() const noexcept { return closed_; }
    /// Stops every timer and fails outstanding requests; idempotent.
    void close();

private:
    void decide_close(close_reason why);

    timer_service& svc_;
    liveness_config config_;
    callbacks cbs_;
    liveness_counters* counters_;
    bool closed_ = false;
    idle_state idle_;
    activity_timer read_timeout_, write_timeout_;
    heartbeat heartbeat_;
    request_tracker<std::uint64_t> requests_;
};

} // namespace heartwheel::net

#endif
