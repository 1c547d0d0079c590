// heartwheel/net/connection/connection_context.hpp — what a net::connection is made with: the context the
// connections of one thread share (the wheel, the configuration, the counters, the overload scale), and
// the options a connection takes from it. Apart from connection.hpp so that an application's headers
// can hold a context without pulling in the connection's templates.
//
// One configuration: every knob a connection applies is a described table of its liveness_config
// ([connection], [output], [keepalive], the policies), validated here, once per context; the options are
// a view of two of those tables, copied once, which a framing layer may adjust for its connections
// (activity = messages) without touching the shared configuration.
#ifndef HEARTWHEEL_NET_CONNECTION_CONTEXT_HPP
#define HEARTWHEEL_NET_CONNECTION_CONTEXT_HPP

#include <heartwheel/net/metrics/counters.hpp>
#include <heartwheel/net/config/liveness_config.hpp>
#include <heartwheel/net/connection/connection_policy.hpp>
#include <heartwheel/net/policies/policies.hpp>
#include <heartwheel/net/connection/write_queue.hpp>
#include <heartwheel/net/detail/liveness_settings.hpp>
#include <heartwheel/timer_scheduler.hpp>

#include <utility>

namespace heartwheel::net {

class timeout_scale;

/// What one connection is made with: its configuration's [connection] table (linger, activity,
/// close_on_idle, the queue's chunking) and its [output] bound.
struct connection_options : connection_policy {
    output_policy output;

    connection_options() = default;
    connection_options(const connection_policy& c, const output_policy& o) : connection_policy(c), output(o) {}
    /// The view of a configuration (not validated here: the context validates its configuration).
    static connection_options of(const liveness_config& c) { return {c.connection, c.output}; }
    bool reads_are_idle_activity() const noexcept { return activity == reader_activity::bytes; }
    write_queue_limits queue() const noexcept { return {chunk_bytes, keep_capacity}; }
};

/// What the connections of one thread share, made once per thread (or per server, with one thread)
/// and given to each connection: the wheel its timers live in, the configuration, where closes and
/// events are counted, and the overload scale (one timeout_scale per wheel, or none). Must outlive its
/// connections; a connection reads it when it is made.
struct connection_context {
    /// Validates the configuration (config_error naming table.field): a connection made with this
    /// context applies it as it is.
    explicit connection_context(timer_scheduler& t, liveness_config c = {}, liveness_counters* n = nullptr,
                                timeout_scale* s = nullptr)
        : timers(t), config(validated(std::move(c))), counters(n), scale(s), options(connection_options::of(config)),
          settings(detail::intern(config, s != nullptr)) {}
    timer_scheduler& timers;
    liveness_config config;
    liveness_counters* counters;
    timeout_scale* scale;
    /// The view of config's [connection] and [output] tables each connection is made with.
    connection_options options;
    /// What each connection's liveness judges by, made from config once here (not looked up again
    /// per connection: a connection made and unmade per request, as a parked HTTP one is, would
    /// compare the whole configuration each time). Like options, it is config as the context was made
    /// (a scale set later than that has them looked up again, per connection).
    detail::settings_ref settings;

private:
    static liveness_config validated(liveness_config c) {
        c.validate();
        return c;
    }
};

} // namespace heartwheel::net

#endif
