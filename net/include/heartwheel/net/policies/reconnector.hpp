// heartwheel/net/policies/reconnector.hpp — when to try connecting again, on the wheel.
//
// The application owns the connecting; the reconnector owns the timing. It calls attempt() to start
// a connection attempt; the application reports connected(), proven(), failed() or disconnected().
// A failed attempt, or a connection that drops before it proved stable, waits backoff.next() and
// tries again. Stability is proven by the peer, not by the kernel: a frozen server's kernel still
// completes TCP handshakes, so connected() alone proves nothing. The application calls proven() when
// the peer shows it is alive — its first bytes received, or the application's own handshake or first
// response — and a connection that stays up `stable_after` from then resets the backoff. A peer that
// never proves itself keeps growing the backoff at every drop. reconnect_now() cuts a wait short.
// A server that drains names a window to come back within (echo's `BYE draining <ms>`, WebSocket
// close 1012 with the application's own window): leaving(window) before the drop makes the next
// wait a uniformly random moment within it — not the failure backoff, which does not grow, and not
// at once, so that a fleet's clients spread their reconnects over the window the server chose.
// Nothing runs after stop() or destruction. With counters, every attempt after the first counts as a
// reconnect attempt and every failed() as a reconnect failure.
#ifndef HEARTWHEEL_NET_RECONNECTOR_HPP
#define HEARTWHEEL_NET_RECONNECTOR_HPP

#include <heartwheel/net/policies/backoff.hpp>
#include <heartwheel/net/metrics/counters.hpp>
#include <heartwheel/timer_node.hpp>
#include <heartwheel/timer_scheduler.hpp>

#include <cstdint>
#include <functional>

namespace heartwheel::net {

class reconnector {
public:
    enum class phase { idle, waiting, connecting, connected, stable };
    using attempt_fn = std::function<void()>;
    /// Optional: told each delay chosen, for logs and counters.
    using on_wait_fn = std::function<void(milliseconds delay, unsigned failures)>;

    reconnector(timer_scheduler& svc, const backoff_policy& policy, attempt_fn attempt,
                backoff::random_source rnd = {}, liveness_counters* counters = nullptr);

    void start();                ///< first attempt now
    void connected();            ///< the attempt succeeded (the kernel's word: not yet stable)
    void proven();               ///< the peer showed it is alive; stability is timed from the first call
    void failed();               ///< the attempt failed: wait, then try again
    void disconnected();         ///< an established connection dropped
    void reconnect_now();        ///< cut the current wait short
    /// The server asked us to leave and to come back within `window`: the next disconnected() waits
    /// a uniformly random delay in [0, window] and is no failure.
    void leaving(milliseconds window) noexcept { leave_window_ = window; }
    void stop() noexcept;

    phase state() const noexcept { return phase_; }
    std::uint64_t attempts() const noexcept { return attempts_; }
    milliseconds last_delay() const noexcept { return last_delay_; }
    milliseconds connect_timeout() const { return backoff_.connect_timeout(); }
    void on_wait(on_wait_fn fn) { on_wait_ = std::move(fn); }

private:
    struct hook final : timer_node {
        hook(reconnector& owner, void (reconnector::*call)()) : r(&owner), fn(call) {}
        reconnector* r;
        void (reconnector::*fn)();
        void on_expire() override { (r->*fn)(); }
    };
    void fire_attempt();
    void became_stable();
    void wait_then_retry();
    void wait(milliseconds delay);

    timer_scheduler& svc_;
    backoff backoff_;
    backoff::random_source rnd_; ///< for a leaving window's delay (the backoff's jitter has its own copy)
    attempt_fn attempt_;
    liveness_counters* counters_;
    on_wait_fn on_wait_;
    hook retry_timer_{*this, &reconnector::fire_attempt};
    hook stable_timer_{*this, &reconnector::became_stable};
    phase phase_ = phase::idle;
    std::uint64_t attempts_ = 0;
    milliseconds last_delay_{0};
    milliseconds leave_window_{-1}; ///< set by leaving(), until the next disconnect (negative: none)
};

} // namespace heartwheel::net

#endif
