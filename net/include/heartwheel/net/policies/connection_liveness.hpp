// heartwheel/net/policies/connection_liveness.hpp — every liveness policy of one connection behind one close
// decision: idle detection, read/write timeouts, heartbeat, request timeouts, and the server limits
// (TLS handshake deadline, maximum age).
//
// Transport-agnostic: it is told about reads and writes and asks its owner, through one
// liveness_handler, to close; its pings go to the ping_writer it is given (policy_runtime.hpp), the
// protocol's, without passing through the owner. net::connection does the telling (its stream records
// every read and write), is the handler, and names its application as the ping writer once it can
// talk; it can also be used alone:
//
//   struct my_handler final : heartwheel::net::liveness_handler, heartwheel::net::ping_writer {
//       void send_ping() override { write("PING 1\n"); }
//       void on_policy_close(close_reason why) override { say_bye_and_close(why); }
//       asio::any_io_executor completion_executor() override { return socket.get_executor(); }
//   } handler;
//   heartwheel::net::connection_liveness live(wheel, config, handler);
//   live.set_ping_writer(&handler);
//   ... live.on_read(); live.on_write_complete(); live.requests().track(id, token);
//
// A pong enters once: on_pong() records the round trip of the ping it answers; its bytes are a read
// like any other (on_read, which a net::connection's stream calls as they arrive), not counted again.
//
// Sized for many idle connections: only what the configuration enables is built (a policy that is
// off holds no timer; the heartbeat is allocated only when on, the request tracker on first use);
// the policies call back through one interface, not std::functions, and what they judge by is read
// from settings shared by the connections made from an equal config, not copied into each
// (detail/liveness_settings.hpp; docs/benchmarks.md has the bytes per idle connection by part).
// The liveness is itself one timer node, filed at the earliest of the idle kinds' next events, the
// max age and its owner's phase deadline (idle_state::due, connection_limits::age_due,
// expire_phase_at):
// those policies keep data, not timers, and a read or write only stores a stamp — the node, woken
// early, files itself again for the new earliest. The heartbeat is a node of its own (its schedule
// has exact deadlines and a judgement); so are the timeouts that scale under overload (they wait in
// the timeout_scale's queue) and the read/write timeouts.
//
// Closing decisions: reader/writer/all idle close only if the handler's close_on_idle(); read_timeout,
// write_timeout, the heartbeat's last miss, the handshake deadline and max age always close. The
// handler's on_policy_close() runs at most once; after it, after close() or destruction nothing is called, and
// every outstanding request fails with errc::connection_closed. Closes are counted by whoever owns
// the close path (net::connection), not here: every close once, wherever it came from.
#ifndef HEARTWHEEL_NET_CONNECTION_LIVENESS_HPP
#define HEARTWHEEL_NET_CONNECTION_LIVENESS_HPP

#include <heartwheel/net/policies/activity_timer.hpp>
#include <heartwheel/net/connection/close_reason.hpp>
#include <heartwheel/net/policies/connection_limits.hpp>
#include <heartwheel/net/metrics/counters.hpp>
#include <heartwheel/net/detail/liveness_settings.hpp>
#include <heartwheel/net/policies/heartbeat.hpp>
#include <heartwheel/net/policies/idle_state.hpp>
#include <heartwheel/net/config/liveness_config.hpp>
#include <heartwheel/net/policies/policy_runtime.hpp>
#include <heartwheel/net/policies/request_tracker.hpp>
#include <heartwheel/net/policies/timeout_scale.hpp>

#include <memory>

namespace heartwheel::net {

/// What a connection's liveness asks of its owner (net::connection is one). Must outlive it.
class liveness_handler {
public:
    /// A policy decided to close; runs at most once, last in the policy's call (it may destroy the
    /// liveness).
    virtual void on_policy_close(close_reason why) = 0;
    /// Every idle event, closing or not.
    virtual void on_idle(idle_event) {}
    /// Whether a first idle event of any kind closes.
    virtual bool close_on_idle() const noexcept { return true; }
    /// Where request completions go by default (requests()).
    virtual asio::any_io_executor completion_executor() = 0;
    /// Whether bytes from the peer wait unread for a read already pending (net::connection asks
    /// the kernel). While they do, no policy judges the peer silent: reader/writer/all idle, the
    /// read timeout and a heartbeat miss wait until they are read (after a process stall, the
    /// reactor reads them a pass at a time). Asked only when a judgement falls due.
    virtual bool input_waiting() { return false; }
    /// The phase deadline passed (expire_phase_at; net::connection's expires_after): `due` is when it
    /// was due (the node runs at the tick after). It is cleared first: the owner may set another. Runs
    /// last in the node's call (it may destroy the liveness).
    virtual void on_phase_deadline(time_point due) { (void)due; }

protected:
    ~liveness_handler() = default;
};

class connection_liveness final : timer_node,
                                  policy_host, // also its idle_state's and heartbeat's listener
                                  activity_timer::listener {
public:
    /// Validates `config` (config_error) and starts the enabled policies from now. With `scale`, the
    /// timeouts given a min (`reader_idle_min`, ...) shrink under pressure (timeout_scale.hpp); `scale`
    /// must outlive this object.
    connection_liveness(timer_scheduler& svc, const liveness_config& config, liveness_handler& handler,
                        liveness_counters* counters = nullptr, timeout_scale* scale = nullptr);
    /// The same from settings made already (connection_context::settings: validated and interned
    /// once for all of a context's connections); settings made for the other case of `scale` (null
    /// or not: which close reasons scale) are looked up again for this one.
    static connection_liveness from_settings(timer_scheduler& svc, detail::settings_ref settings, liveness_handler& handler,
                                             liveness_counters* counters = nullptr, timeout_scale* scale = nullptr) {
        if (settings->scaled != (scale != nullptr)) settings = detail::intern(settings->config, scale != nullptr);
        return connection_liveness(svc, std::move(settings), handler, counters, scale);
    }
    ~connection_liveness();
    connection_liveness(const connection_liveness&) = delete;
    connection_liveness& operator=(const connection_liveness&) = delete;

    /// Bytes arrived. `counts_as_idle_activity` = false for traffic the application does not count
    /// as activity (e.g. pongs, or bytes before a whole message), which still proves liveness to the
    /// heartbeat and the read timeout.
    /// `arrived`: when the bytes reached the host (the kernel's stamp, liveness_stream's
    /// enable_arrival_stamps; on the scheduler's clock), or no_arrival: the heartbeat then counts
    /// the peer's silence from it,
    /// not from the read — a burst read one after another does not make the later peers' deaths late.
    void on_read(bool counts_as_idle_activity = true, time_point arrived = no_arrival);
    /// A whole message the application counts as activity, whose bytes were reported by on_read
    /// already (the connection's message_received): the idle kinds only.
    void on_message();
    /// Whether reads should bring their arrival (a heartbeat counts from it, on a scheduler whose
    /// clock is the steady one that the stamps are converted to): a net::connection asks its TCP
    /// socket for the kernel's stamps when this is true.
    bool wants_arrival_stamps() const noexcept { return heartbeat_ != nullptr && svc_->on_steady_clock(); }
    /// A write started with data queued (arms the write timeout).
    void on_write_started();
    /// Some bytes of a write went out.
    void on_write_progress();
    /// A whole write finished; `drained` when nothing more is queued (disarms the write timeout).
    void on_write_complete(bool drained = true);
    /// The peer answered our ping: its round trip (the pong's bytes were a read: on_read).
    void on_pong();
    /// A handshake (TLS, a WebSocket upgrade) began / finished: arms / disarms limits.handshake_timeout.
    /// Meanwhile there is no heartbeat — the peer cannot be pinged mid-handshake, and the handshake's
    /// deadline is that phase's judge — and its schedule starts again when the handshake is done.
    void handshake_started();
    void handshake_done();
    /// A handshake queued for its place (admission): its deadline paused until handshake_started()
    /// again — the time queued is the server's, not the peer's — and still no heartbeat.
    void handshake_waiting() noexcept { limits_.handshake_done(); }

    /// The connection's outstanding requests (made on first use, with config.request). After close()
    /// a request tracked here completes at once with errc::connection_closed.
    request_tracker<std::uint64_t>& requests();
    /// Tracked requests in flight (0 when none was ever tracked: the tracker is not made for this).
    std::size_t outstanding_requests() const noexcept { return requests_ ? requests_->outstanding() : 0; }
    bool closed() const noexcept { return idle_.stopped(); } // stopped by close() only

    /// A deadline of the owner's own (net::connection's phase of the protocol: expires_after), kept
    /// by the liveness's node beside the idle kinds and the max age — a field, not a timer of its own:
    /// at `due` the handler's on_phase_deadline() runs. One at a time; a later call replaces it.
    /// Nothing after close().
    void expire_phase_at(time_point due);
    /// No phase deadline (the node, if filed for it, wakes once for nothing and files itself again).
    void cancel_phase() noexcept { phase_due_ = time_point::max(); }
    /// The phase deadline's due time (time_point::max(): none).
    time_point phase_due() const noexcept { return phase_due_; }
    /// Whether the phase deadline is all this liveness judges: no idle kind, max age, read timeout or
    /// heartbeat configured, and no tracked request in flight. An owner may then keep the connection's
    /// wait as its socket and that one deadline (http::server parks an idle kept-alive connection so).
    bool judges_only_phase() const noexcept;
    /// Stops every timer and fails outstanding requests; idempotent. No callback runs afterwards.
    void close();

    /// The scheduler its timers are filed in; a net::connection files its own there too. (For
    /// idle_state, the heartbeat and connection_limits too: they keep no pointer of their own to it.)
    timer_scheduler& scheduler() const noexcept override { return policy_host::scheduler(); }
    /// The counters it counts in (null: none); a net::connection counts its closes there.
    using policy_host::counters;
    /// Who writes the heartbeat's pings (null: nobody yet, or no more: they are judged unwritten).
    using policy_host::set_ping_writer;

private:
    /// The node: the idle kinds' events and the max age, when due.
    void on_expire() override;
    /// Files the node at the earliest of `idle_at` (the idle kinds' next event, or a put-off's
    /// look again), the max age and the phase deadline; nothing when none is on.
    void arm(time_point idle_at);
    time_point idle_due() const { return idle_.due(settings_->config.idle, *svc_); }
    /// An idle event (the node's, or a scaling kind's): counted, told, and closing if the first of
    /// its kind and the handler says so. Returns false when the liveness closed (it may be gone).
    bool idle(idle_event e);
    void on_idle(idle_event e) override { idle(e); }
    void on_dead() override;
    void on_miss() override;
    /// The limits' timers (a handshake deadline, an age that scales): one-shot, and closing.
    void on_expired(activity_timer& t, bool) override;
    bool input_waiting() override { return handler_->input_waiting(); }
    // policy_host: the one close decision, for every policy
    void close_for(close_reason why) override;

    liveness_handler* handler_;
    time_point phase_due_ = time_point::max(); ///< expire_phase_at's, or max
    // from_settings's (the public constructor validates and interns first).
    connection_liveness(timer_scheduler& svc, detail::settings_ref settings, liveness_handler& handler,
                        liveness_counters* counters, timeout_scale* scale);
    // What is judged after construction is read from settings shared by the connections made from
    // an equal config (one pointer, not a copy per connection): the idle, heartbeat, request and
    // limits policies, and which close reasons the overload scales. First: the parts read them.
    detail::settings_ref settings_;
    idle_state idle_;
    connection_limits limits_; // closed: idle_ stopped (a byte of its own, not one more word here)
    liveness_config::with_slots<policy_runtimes> runtimes_; ///< the policies whose slots name a runtime
    std::unique_ptr<heartbeat> heartbeat_;                 ///< only when heartbeats are on
    std::unique_ptr<request_tracker<std::uint64_t>> requests_; ///< made on first use
};

} // namespace heartwheel::net

#endif
