// heartwheel/net/server/drain.hpp — a graceful drain: every connection of an execution context is asked to
// leave, spread evenly over a window, in its protocol's own words.
//
// Why spread: a server that closes all its connections at once on a restart sends every client
// back at once — to the next process, or through a balancer to the rest of the fleet — and a storm
// of handshakes is the fleet's worst minute. Asked a few at a time (the window's share per 10 ms
// step), the reconnects arrive at the rate the window sets; a client told the window (the echo
// protocol's `BYE draining <ms>`) spreads its own reconnect within it too.
//
// How: the context's teardown_registry already lists every net::connection of the context, and
// keeps those asked apart from those not yet asked, so a step takes the next few without a cursor.
// Asking is connection::drain: on the connection's executor, its handler may leave its own way
// (connection_handler::on_drain: an HTTP layer answers the request in progress with
// `Connection: close` first); otherwise it closes `draining`, and its last words say so (a WebSocket
// close 1012, echo's BYE). By step k of n, ceil(N × k / n) of the N connections there at the start
// have been asked; at the window's end every one still unasked is. async_drain completes when no
// connection is left, or at the window's end with how many remain (still saying goodbye, or
// answering) — the server then closes those `shutdown` as before.
//
// Stop accepting first (listener::close): a connection that arrives during a drain is asked at the
// end. One drain per execution context at a time (a thread-per-core server drains each thread's
// context; a pool's strands share one).
#ifndef HEARTWHEEL_NET_DRAIN_HPP
#define HEARTWHEEL_NET_DRAIN_HPP

#include <heartwheel/net/connection/close_reason.hpp>
#include <heartwheel/net/detail/teardown_registry.hpp>
#include <heartwheel/net/server/listener.hpp>

#include <heartwheel/asio.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <utility>

namespace heartwheel::net {

/// The close reason of a connection asked to leave by a drain.
close_reason draining_reason();

namespace detail {

template <class Executor>
struct drain_op {
    using clock = std::chrono::steady_clock;
    teardown_registry& registry;
    std::unique_ptr<asio::basic_waitable_timer<clock, asio::wait_traits<clock>, Executor>> timer;
    clock::time_point start, end;
    std::chrono::milliseconds step;
    std::size_t initial = 0, asked = 0;
    bool begun = false;

    template <class Self>
    void operator()(Self& self, error_code = {}) {
        const auto now = clock::now();
        if (!begun) {
            begun = true;
            initial = registry.size();
        }
        if (registry.size() == 0) return self.complete(error_code{}, std::size_t{0});
        // By now, this share of the connections there at the start has been asked; at the end, all.
        std::size_t due = initial;
        if (now < end) {
            const double part = std::chrono::duration<double>(now - start) / (end - start);
            due = static_cast<std::size_t>(static_cast<double>(initial) * part) + 1;
        }
        const std::size_t n = now >= end ? static_cast<std::size_t>(-1) : (due > asked ? due - asked : 0);
        if (n > 0) {
            for (auto& [keep, e] : registry.take_unasked(n)) e->drain(std::move(keep));
            asked += n;
        }
        if (now >= end) return self.complete(error_code{}, registry.size());
        timer->expires_after(step);
        timer->async_wait(std::move(self));
    }
};

} // namespace detail

/// Asks every net::connection of `ex`'s execution context to leave, spread evenly over `window`
/// (stepping every `step`). Completes void(error_code, std::size_t remaining) once none is left, or
/// at the window's end with how many remain. The timer runs on `ex`.
template <class Executor, class Token>
auto async_drain(const Executor& ex, std::chrono::milliseconds window, Token&& token,
                 std::chrono::milliseconds step = std::chrono::milliseconds(10)) {
    using clock = std::chrono::steady_clock;
    using timer_type = asio::basic_waitable_timer<clock, asio::wait_traits<clock>, Executor>;
    const auto now = clock::now();
    return asio::async_compose<Token, void(error_code, std::size_t)>(
        detail::drain_op<Executor>{detail::teardown_registry::of(ex), std::make_unique<timer_type>(ex), now, now + window,
                                   step < std::chrono::milliseconds(1) ? std::chrono::milliseconds(1) : step, 0, 0, false},
        token, ex);
}

/// Whether drain_on_signals's drain is under way: a server's draining gauge (read from any thread).
class drain_status {
public:
    drain_status() = default;
    explicit drain_status(std::shared_ptr<const std::atomic<bool>> flag) noexcept : flag_(std::move(flag)) {}
    /// From the first signal (or a handover) until the drain ends and stop() is called.
    bool draining() const noexcept { return flag_ && flag_->load(std::memory_order_relaxed); }

private:
    std::shared_ptr<const std::atomic<bool>> flag_;
};

/// What a server does with SIGINT/SIGTERM (`signals`, an asio::signal_set, waited for here): the
/// first stops `l` accepting and drains `ex`'s connections over `window`, then calls `stop()` (the
/// server closes what is left and stops); a second signal, or a window of 0, calls `stop()` at once.
/// A successor taking `l`'s socket over (listener_options::handover) starts the same drain.
/// `stop` is called once, on the signals' executor or ex's (give both the same thread or strand).
/// Install it before the server says it is listening: a supervisor may signal at once.
template <class SignalSet, class Executor, class Stop>
drain_status drain_on_signals(SignalSet& signals, listener& l, const Executor& ex, std::chrono::milliseconds window,
                              Stop stop) {
    struct state {
        SignalSet& signals;
        listener& l;
        Executor ex;
        std::chrono::milliseconds window;
        Stop stop;
        std::shared_ptr<std::atomic<bool>> gauge = std::make_shared<std::atomic<bool>>(false);
        bool draining = false, stopped = false;

        void finish() {
            if (std::exchange(stopped, true)) return;
            gauge->store(false, std::memory_order_relaxed);
            l.close();
            stop();
        }
        // The first signal's work (or a handover's): stop accepting, drain, then stop.
        static void begin_drain(const std::shared_ptr<state>& self) {
            if (self->stopped || self->draining) return;
            if (self->window.count() == 0) return self->finish();
            self->draining = true;
            self->gauge->store(true, std::memory_order_relaxed);
            self->l.close();
            async_drain(self->ex, self->window, [self](const error_code&, std::size_t) { self->finish(); });
        }
        static void wait(const std::shared_ptr<state>& self) {
            self->signals.async_wait([self](const error_code& ec, int) {
                if (ec || self->stopped) return;
                if (self->draining) return self->finish(); // a second signal: at once
                begin_drain(self);
                wait(self);
            });
        }
    };
    auto s = std::make_shared<state>(state{signals, l, ex, window, std::move(stop)});
    l.on_handed_over([weak = std::weak_ptr<state>(s)] {
        if (auto self = weak.lock()) state::begin_drain(self);
    });
    state::wait(s);
    return drain_status(s->gauge);
}

} // namespace heartwheel::net

#endif
