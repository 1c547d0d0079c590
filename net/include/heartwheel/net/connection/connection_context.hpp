// heartwheel/net/connection/connection_context.hpp — what a net::connection is made with: its options, and the
// context the connections of one thread share (the wheel, the liveness policies, the counters, the
// overload scale). Apart from connection.hpp so that an application's headers can hold a context
// without pulling in the connection's templates.
#ifndef HEARTWHEEL_NET_CONNECTION_CONTEXT_HPP
#define HEARTWHEEL_NET_CONNECTION_CONTEXT_HPP

#include <heartwheel/net/metrics/counters.hpp>
#include <heartwheel/net/config/liveness_config.hpp>
#include <heartwheel/net/policies/policies.hpp>
#include <heartwheel/net/connection/write_queue.hpp>
#include <heartwheel/timer_scheduler.hpp>

#include <chrono>
#include <utility>

namespace heartwheel::net {

class timeout_scale;

struct connection_options {
    /// How long last words may take to flush before the lowest layer is closed anyway: 0 to 49 days
    /// (2^32 - 1 ms), checked by the connection's constructor (config_error naming "linger").
    std::chrono::milliseconds linger{1000};
    /// The output's bounds: water marks (writable(), on_writable, can_read) and the slow-consumer
    /// hard and soft limits. Validated by the constructor (config_error). A connection_context sets
    /// it from its configuration's `output` ([output] in TOML): configure it there.
    output_policy output;
    /// How the queue chunks its bytes.
    write_queue_limits queue;
    /// Whether every read that brings bytes is reader activity for idle detection (true), or the
    /// application judges messages itself with message_received() (false; bytes still prove
    /// liveness to the heartbeat and the read timeout either way).
    bool reads_are_idle_activity = true;
    /// Whether a first idle event closes the connection (otherwise on_idle only reports it).
    bool close_on_idle = true;
};

/// What the connections of one thread share, made once per thread (or per server, with one thread)
/// and given to each connection: the wheel its timers live in, the liveness configuration, where closes
/// and events are counted, the overload scale (one timeout_scale per wheel, or none), and the
/// connection options. Must outlive its connections; a connection reads it when it is made.
struct connection_context {
    /// The options' output bound is the configuration's: options given with an output of their own
    /// that differs from it are refused (config_error naming "output"), not silently overridden.
    explicit connection_context(timer_scheduler& t, liveness_config c = {}, liveness_counters* n = nullptr,
                                timeout_scale* s = nullptr, connection_options o = {})
        : timers(t), config(std::move(c)), counters(n), scale(s), options(with_output(std::move(o), config.output)) {}
    timer_scheduler& timers;
    liveness_config config;
    liveness_counters* counters;
    timeout_scale* scale;
    connection_options options;

private:
    static connection_options with_output(connection_options o, const output_policy& configured) {
        if (!(o.output == output_policy{}) && !(o.output == configured))
            throw config_error("output", "set in connection_options",
                               "the liveness configuration's output ([output] in TOML), which the context gives its connections",
                               "set in the wrong place");
        o.output = configured;
        return o;
    }
};

} // namespace heartwheel::net

#endif
