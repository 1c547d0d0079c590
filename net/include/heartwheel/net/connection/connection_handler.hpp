// heartwheel/net/connection/connection_handler.hpp — what a connection asks of its application: one interface
// per connection (one shared pointer, not a std::function per hook — memory matters at a million idle
// connections), every call optional, every call on the connection's executor.
//
// Invariants (kept by net::connection): last_words and on_close run once each, in that order;
// send_ping never runs once the connection is closing; after on_close nothing more is called and the
// connection lets the handler go. connection_hooks wraps lambdas for small programs and tests.
#ifndef HEARTWHEEL_NET_CONNECTION_HANDLER_HPP
#define HEARTWHEEL_NET_CONNECTION_HANDLER_HPP

#include <heartwheel/net/connection/close_reason.hpp>
#include <heartwheel/net/policies/idle_state.hpp>
#include <heartwheel/net/policies/policy_runtime.hpp>

#include <functional>
#include <utility>

namespace heartwheel::net {

/// What a connection asks of its application; override what it needs (every call is optional).
/// The application is also its liveness's ping writer: the heartbeat's pings come to send_ping()
/// straight from the policy, once the connection can talk (after TLS's handshake, until it closes).
class connection_handler : public ping_writer {
public:
    virtual ~connection_handler() = default;
    void send_ping() override {}              ///< heartbeat: queue a ping (with send())
    virtual void last_words(close_reason) {}  ///< closing: queue a goodbye (with send()); once
    virtual void on_close(close_reason) {}    ///< closed: the lowest layer is closed; once
    virtual void on_writable() {}             ///< the output drained below its low-water mark
    /// The output wrote its last byte and holds nothing (a byte output's: send()), on a turn of its
    /// own after the write's: a layer that waits for its answer to be out (HTTP's parking) goes on.
    virtual void on_output_idle() {}
    virtual void on_idle(idle_event) {}       ///< every idle event (they close unless told not to)
    /// The connection's execution context shut down with the connection still open (io.stop(), no
    /// close): the connection has let its handler go; a framing layer lets its application's go too,
    /// so that a session owning its layer and being its handler is no cycle that outlives the context.
    virtual void on_detached() noexcept {}
    /// The server drains (net/server/drain.hpp): leave in the protocol's own words and return true (an HTTP
    /// layer: after the response in progress), or return false and the connection closes `draining`
    /// now (its last_words say the protocol's goodbye).
    virtual bool on_drain() { return false; }
    /// The phase deadline (connection::expires_after) passed: return true when it was a turn of the
    /// layer's own (an HTTP layer's short eager read ending) — the connection stays open and nothing
    /// is counted — or false, and the connection closes with the deadline's reason. `due`: when it was
    /// due (it runs at the wheel's tick after, or later), for a next deadline counted from it
    /// (connection::expires_at) rather than from now.
    virtual bool on_deadline(time_point due) {
        (void)due;
        return false;
    }
};

/// A connection_handler made of lambdas (each optional), for small programs and tests:
/// connection::set_hooks() wraps them.
struct connection_hooks {
    std::function<void()> send_ping;
    std::function<void(close_reason)> last_words;
    std::function<void(close_reason)> on_close;
    std::function<void()> on_writable;
    std::function<void(idle_event)> on_idle;
};

namespace detail {
class hooks_handler final : public connection_handler {
public:
    explicit hooks_handler(connection_hooks h) : h_(std::move(h)) {}
    void send_ping() override {
        if (h_.send_ping) h_.send_ping();
    }
    void last_words(close_reason r) override {
        if (h_.last_words) h_.last_words(r);
    }
    void on_close(close_reason r) override {
        if (h_.on_close) h_.on_close(r);
    }
    void on_writable() override {
        if (h_.on_writable) h_.on_writable();
    }
    void on_idle(idle_event e) override {
        if (h_.on_idle) h_.on_idle(e);
    }

private:
    connection_hooks h_;
};
} // namespace detail

} // namespace heartwheel::net

#endif
