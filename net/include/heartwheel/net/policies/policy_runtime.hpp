// heartwheel/net/policies/policy_runtime.hpp — how a policy runs on a connection: its runtime, named by its
// slot, built once per connection and fed every read and write without being written into
// connection_liveness.
//
// A slot that names a runtime (`using runtime = timeout_runtime;`, timeout_policy.hpp) gets one per
// connection, constructed from (policy_host&, its policy, validated). connection_liveness holds them all in a
// policy_runtimes built from liveness_config's own slot list, and calls every hook on every one:
// on_read, on_write_started, on_write_progress, on_write_complete and stop. A runtime derives from
// policy_runtime<itself>, whose hooks do nothing, and hides the ones it needs; the calls are resolved at
// compile time (no virtual call per read per policy), and a slot without a runtime adds an empty
// base (no bytes). Every hook is given the runtime's policy, read where the connections of a config
// share it, so a runtime keeps no pointer to it: only its per-connection state. A runtime reaches
// back through its policy_host: the scheduler, the overload scale, whether the peer's bytes wait
// unread, and the one close decision.
//
// The built-in policies (idle_state's scaling kinds, the heartbeat) reach their owner through the same
// policy_host — its idle events and misses are virtual calls of its own with defaults — so a
// connection_liveness implements one interface for its policies (one vtable pointer), not a listener
// per policy. A ping is the one call that leaves the liveness for the protocol: the host hands it
// straight to its ping_writer (the application or its framing layer, a net::connection_handler),
// counted on the way, not relayed through the host's owner — one interface from the heartbeat to
// the bytes of the ping.
//
// Invariants: a runtime holds only what it must per connection (a policy that is off holds no timer:
// timers are allocated when configured); after stop() it never calls its host; the hooks run on the
// connection's thread; a runtime's close goes through close_for() (counted once, by the close path).
// Hooks beyond reads, writes and stop (the heartbeat's pong, the TLS handshake of the limits) are the
// built-in policies' own calls on connection_liveness.
#ifndef HEARTWHEEL_NET_POLICY_RUNTIME_HPP
#define HEARTWHEEL_NET_POLICY_RUNTIME_HPP

#include <heartwheel/clock.hpp>
#include <heartwheel/timer_scheduler.hpp>
#include <heartwheel/net/connection/close_reason.hpp>

#include <type_traits>

namespace heartwheel::net {

class timeout_scale;
class liveness_counters; // metrics/counters.hpp
struct idle_event;       // idle_state.hpp

/// Who writes the protocol's ping: the application or its framing layer (net::connection_handler is
/// one; a WebSocket layer sends a ping frame, a line protocol a `PING` line).
class ping_writer {
public:
    virtual void send_ping() = 0;

protected:
    ~ping_writer() = default;
};

/// What a policy asks of the connection it watches; connection_liveness is one. A runtime's hooks
/// and the built-in policies (idle_state, heartbeat: their `listener`) call back through it.
class policy_host {
public:
    /// The scheduler the policies' timers are filed in (the same one for its life).
    timer_scheduler& scheduler() const noexcept { return *svc_; }
    /// The overload scale, or null: timeouts given a min shrink under pressure (timeout_scale.hpp).
    timeout_scale* scale() const noexcept { return scale_; }
    /// The counters the policies' events are counted in, or null.
    liveness_counters* counters() const noexcept { return counters_; }
    /// A policy decided to close; the first decision wins, later ones are ignored.
    virtual void close_for(close_reason why) = 0;
    /// Whether the peer's bytes wait unread (a judgement of silence is then put off).
    virtual bool input_waiting() = 0;
    /// An idle event of a kind that scales (idle_state: the others are its owner's to collect).
    virtual void on_idle(idle_event e);
    /// The heartbeat: the ping, written by the ping writer now (and counted). Without one (none
    /// given, or the owner took it back: a TLS handshake not done yet, nothing can be written) the
    /// ping is not written, and still judged: a peer silent that long is silent.
    void send_ping();
    /// Who writes the pings from now on (null: nobody); the owner keeps it alive while it is named.
    void set_ping_writer(ping_writer* w) noexcept { writer_ = w; }
    /// The heartbeat's misses-th consecutive miss: close_for(heartbeat_timeout) unless overridden.
    virtual void on_dead();
    /// Each heartbeat miss (counters, logs).
    virtual void on_miss() {}
    /// Uniform doubles in [0, 1) for the heartbeat's jitter; override to make tests deterministic.
    virtual double uniform();

protected:
    policy_host(timer_scheduler& svc, timeout_scale* scale, liveness_counters* counters = nullptr) noexcept
        : svc_(&svc), scale_(scale), counters_(counters) {}
    ~policy_host() = default;

    timer_scheduler* svc_;
    timeout_scale* scale_;
    liveness_counters* counters_;
    ping_writer* writer_ = nullptr;
};

/// A runtime's hooks, each doing nothing: a runtime derives from policy_runtime<itself> and hides the
/// ones it needs, with its own policy's type for `Policy`. `stamp` is one clock stamp per I/O event,
/// shared by every policy. (A base of its own per runtime: empty bases of one type would each take a
/// byte and padding in policy_runtimes.)
template <class Runtime>
struct policy_runtime {
    template <class Policy> void on_read(policy_host&, const Policy&, time_point /*stamp*/) {}
    template <class Policy> void on_write_started(policy_host&, const Policy&) {}
    template <class Policy> void on_write_progress(policy_host&, const Policy&, time_point /*stamp*/) {}
    template <class Policy> void on_write_complete(policy_host&, const Policy&, time_point /*stamp*/, bool /*drained*/) {}
    void stop() noexcept {}
};

namespace detail {
/// The runtime of a slot without one: empty, a distinct type per slot (so that all can be bases).
template <class Slot> struct no_runtime : policy_runtime<no_runtime<Slot>> {
    template <class Policy> no_runtime(policy_host&, const Policy&) noexcept {}
};
template <class Slot, class = void> struct runtime_of { using type = no_runtime<Slot>; };
template <class Slot> struct runtime_of<Slot, std::void_t<typename Slot::runtime>> { using type = typename Slot::runtime; };
template <class Slot> using runtime_of_t = typename runtime_of<Slot>::type;
/// A runtime is built from a validated policy (config_error otherwise).
template <class Slot, class Policy> const Policy& checked(const Policy& p) {
    if constexpr (!std::is_same_v<runtime_of_t<Slot>, no_runtime<Slot>>) p.validate();
    return p;
}
} // namespace detail

/// One connection's runtimes of the slots `Slots` (liveness_config::with_slots<policy_runtimes>). Each
/// hook is given the config the runtimes were built from (validated, and outliving them: the
/// liveness's shared settings), whose policies the runtimes read.
template <class... Slots>
class policy_runtimes : detail::runtime_of_t<Slots>... {
public:
    template <class Config>
    policy_runtimes(policy_host& host, const Config& config)
        : detail::runtime_of_t<Slots>(host, detail::checked<Slots>(config.template policy_of<Slots>()))... {}
    template <class Config> void on_read(policy_host& h, const Config& c, time_point s) {
        (detail::runtime_of_t<Slots>::on_read(h, c.template policy_of<Slots>(), s), ...);
    }
    template <class Config> void on_write_started(policy_host& h, const Config& c) {
        (detail::runtime_of_t<Slots>::on_write_started(h, c.template policy_of<Slots>()), ...);
    }
    template <class Config> void on_write_progress(policy_host& h, const Config& c, time_point s) {
        (detail::runtime_of_t<Slots>::on_write_progress(h, c.template policy_of<Slots>(), s), ...);
    }
    template <class Config> void on_write_complete(policy_host& h, const Config& c, time_point s, bool drained) {
        (detail::runtime_of_t<Slots>::on_write_complete(h, c.template policy_of<Slots>(), s, drained), ...);
    }
    void stop() noexcept { (detail::runtime_of_t<Slots>::stop(), ...); }
};

} // namespace heartwheel::net

#endif
