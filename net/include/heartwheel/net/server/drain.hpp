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
// close 1012, echo's BYE).
//
// The schedule (drain_due, a plain function of the elapsed time): the asks are spread over the
// window less a reserve (a tenth of it, at least a step, at most a second), so that the last one
// asked still has time to say goodbye and hear the peer's answer before the window's end, where what
// remains is closed `shutdown` — a connection asked at the very end would race that close. By the
// fraction f of the spread, ceil(N × f) of the N connections there at the start have been asked; a
// connection that arrives during the drain (accepted just before the listener closed, or its
// handshake finished) is asked at the next step. async_drain completes when no connection is left,
// or at the window's end with how many remain (still saying goodbye, or answering) — the server then
// closes those `shutdown`.
//
// Stop accepting first (listener::close). One drain per execution context at a time (a
// thread-per-core server drains each thread's context; a pool's strands share one).
#ifndef HEARTWHEEL_NET_DRAIN_HPP
#define HEARTWHEEL_NET_DRAIN_HPP

#include <heartwheel/net/connection/close_reason.hpp>
#include <heartwheel/net/detail/teardown_registry.hpp>
#include <heartwheel/net/server/listener.hpp>

#include <heartwheel/asio.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

namespace heartwheel::net {

/// The close reason of a connection asked to leave by a drain.
close_reason draining_reason();

namespace detail {

/// The part of a window a drain keeps after its last ask: a tenth, at least `step`, at most 1 s.
constexpr std::chrono::milliseconds drain_reserve(std::chrono::milliseconds window, std::chrono::milliseconds step) {
    auto r = window / 10;
    if (r > std::chrono::milliseconds(1000)) r = std::chrono::milliseconds(1000);
    if (r < step) r = step;
    return r < window ? r : window;
}

/// How many connections a drain should have asked `elapsed` into it: of `initial` there at its start,
/// the share of `spread` elapsed, rounded up (all once `spread` has passed), and every one of
/// `arrived` since its start.
constexpr std::size_t drain_due(std::size_t initial, std::size_t arrived, std::chrono::nanoseconds elapsed,
                                std::chrono::nanoseconds spread) {
    if (elapsed >= spread || spread.count() <= 0) return initial + arrived;
    if (elapsed.count() <= 0) return arrived;
    // ceil(initial × elapsed / spread) in microseconds: exact, and no overflow below 2^64 / (a day in µs).
    const auto e = static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(elapsed).count());
    const auto w = static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(spread).count());
    if (w == 0) return initial + arrived;
    const std::uint64_t due = (static_cast<std::uint64_t>(initial) * e + w - 1) / w;
    return static_cast<std::size_t>(due) + arrived;
}

template <class Executor>
struct drain_op {
    using clock = std::chrono::steady_clock;
    teardown_registry& registry;
    std::unique_ptr<asio::basic_waitable_timer<clock, asio::wait_traits<clock>, Executor>> timer;
    clock::time_point start, end;
    std::chrono::milliseconds step, spread;
    std::size_t initial = 0, added_at_start = 0, asked = 0;
    bool begun = false;

    template <class Self>
    void operator()(Self& self, error_code = {}) {
        const auto now = clock::now();
        if (!begun) {
            begun = true;
            initial = registry.size();
            added_at_start = registry.added();
        }
        if (registry.size() == 0) return self.complete(error_code{}, std::size_t{0});
        // At the end, every one still unasked (the count above misses none, but an entry a drain
        // before this one left unasked would otherwise wait for the close).
        const std::size_t due = now >= end ? static_cast<std::size_t>(-1)
                                           : drain_due(initial, registry.added() - added_at_start, now - start, spread);
        if (due > asked) {
            for (auto& [keep, e] : registry.take_unasked(due - asked)) e->drain(std::move(keep));
            asked = due;
        }
        if (now >= end) return self.complete(error_code{}, registry.size());
        timer->expires_at(std::min(now + step, end));
        timer->async_wait(std::move(self));
    }
};

} // namespace detail

/// Asks every net::connection of `ex`'s execution context to leave, spread evenly over `window` less
/// its reserve (stepping every `step`). Completes void(error_code, std::size_t remaining) once none is left, or
/// at the window's end with how many remain. The timer runs on `ex`.
template <class Executor, class Token>
auto async_drain(const Executor& ex, std::chrono::milliseconds window, Token&& token,
                 std::chrono::milliseconds step = std::chrono::milliseconds(10)) {
    using clock = std::chrono::steady_clock;
    using timer_type = asio::basic_waitable_timer<clock, asio::wait_traits<clock>, Executor>;
    const auto now = clock::now();
    if (step < std::chrono::milliseconds(1)) step = std::chrono::milliseconds(1);
    return asio::async_compose<Token, void(error_code, std::size_t)>(
        detail::drain_op<Executor>{detail::teardown_registry::of(ex), std::make_unique<timer_type>(ex), now, now + window,
                                   step, window - detail::drain_reserve(window, step)},
        token, ex);
}

/// Closes every net::connection of `ex`'s execution context with `why` (each on its own executor,
/// posted): what a server does with the connections a drain left, or at once when it stops. Returns
/// how many were asked. The server needs no set of its connections for this.
template <class Executor>
std::size_t close_connections(const Executor& ex, close_reason why) {
    auto all = detail::teardown_registry::of(ex).every();
    for (auto& [keep, e] : all) e->close_with(std::move(keep), why);
    return all.size();
}

/// The net::connections of `ex`'s execution context that exist (closed ones until their last
/// pending operation is gone): a server's open-connections gauge, or its wait before stopping.
template <class Executor>
std::size_t connections_of(const Executor& ex) {
    return detail::teardown_registry::of(ex).size();
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
