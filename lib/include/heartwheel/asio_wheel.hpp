// heartwheel/asio_wheel.hpp — a timing_wheel driven by one asio::steady_timer.
//
// The steady_timer is armed at the next occupied slot's time (or the deadline of a timer filed with
// schedule_exact, when that is sooner), re-armed only when an earlier timer
// arrives, and left unarmed while nothing is pending: an idle wheel never wakes. When it fires, the
// driver advances the wheel to the real time; if timers are still due (the per-advance budget ran out,
// or a periodic timer is bursting) it posts another advance instead of arming, so I/O interleaves.
// A wheel belongs to one executor — a thread's own io_context, or a strand of an io_context run by a
// pool of threads: call its members from inside that executor. From elsewhere, use async_wait() (its
// initiation is dispatched to the wheel's executor) or post(). For many cores run one asio_wheel per
// thread (thread per core) or per strand (thread pool; docs/design.md, "Threading").
#ifndef HEARTWHEEL_ASIO_WHEEL_HPP
#define HEARTWHEEL_ASIO_WHEEL_HPP

#include <heartwheel/activity_clock.hpp>
#include <heartwheel/clock.hpp>
#include <heartwheel/detail/wait_op.hpp>
#include <heartwheel/timer_handle.hpp>
#include <heartwheel/timer_scheduler.hpp>
#include <heartwheel/timing_wheel.hpp>

#include <heartwheel/asio.hpp>

#include <array>
#include <cstdint>
#include <memory>
#include <system_error>
#include <utility>
#include <vector>

namespace heartwheel {

/// What the driver did, for benchmarks, the server's stats line and its metrics.
struct driver_stats {
    /// Upper bounds (microseconds) of the wake-up lateness histogram's buckets; one more bucket
    /// holds the rest. Lateness = how long after the armed time (a slot's, or an exact deadline's)
    /// the steady_timer woke the driver: the timers due then fire that much (plus their callbacks'
    /// order) after it.
    static constexpr std::array<std::int64_t, 10> lateness_bounds_us = {50, 100, 250, 500, 1000,
                                                                         2500, 5000, 10000, 50000, 100000};
    std::uint64_t wakeups = 0;  ///< steady_timer completions that advanced the wheel
    std::uint64_t rearms = 0;   ///< expires_at + async_wait calls on the steady_timer
    std::uint64_t advances = 0; ///< calls of timing_wheel::advance
    std::uint64_t fired = 0;    ///< callbacks run
    std::array<std::uint64_t, lateness_bounds_us.size() + 1> lateness{}; ///< wake-ups by lateness (not cumulative)
    std::int64_t lateness_total_us = 0;
};

class asio_wheel final : public timer_scheduler {
public:
    using executor_type = asio::any_io_executor;

    explicit asio_wheel(executor_type ex, wheel_config config = {});
    ~asio_wheel();
    asio_wheel(const asio_wheel&) = delete;
    asio_wheel& operator=(const asio_wheel&) = delete;

    executor_type get_executor() const noexcept { return ex_; }
    timing_wheel& wheel() noexcept { return wheel_; }
    const timing_wheel& wheel() const noexcept { return wheel_; }
    const driver_stats& stats() const noexcept { return stats_; }
    std::size_t size() const noexcept { return wheel_.size(); }

    /// The cached time: refreshed at every wake-up, by every schedule_after and by fresh_now(). No
    /// clock call.
    time_point now() noexcept override { return now_; }
    /// Reads the clock and updates the cached time.
    time_point refresh_now() noexcept { return now_ = clock::now(); }
    time_point fresh_now() noexcept override { return refresh_now(); }
    /// Cheap stamps for I/O activity, with a never-early upper bound (see activity_clock.hpp).
    activity_clock& activity() noexcept { return activity_; }
    time_point stamp() override { return activity_.stamp(); }
    time_point latest_possible(time_point s) override { return activity_.latest_possible(s); }
    bool on_steady_clock() const noexcept override { return true; }
    void schedule(timer_node& t, time_point deadline) override { schedule_at(t, deadline); }
    /// timing_wheel::schedule_exact(), and the steady_timer armed at that deadline when it is sooner.
    void schedule_exact(timer_node& t, time_point deadline) override;
    duration tick() const noexcept override { return wheel_.tick(); }
    time_point tick_start(time_point t) const noexcept override { return wheel_.time_of(wheel_.tick_floor(t)); }

    // --- node-based scheduling (on the wheel's thread; throws std::system_error if full/stopped) -
    void schedule_at(timer_node& t, time_point deadline);
    /// The deadline is taken from a fresh clock, so the timer never fires before `delay` really passed.
    /// duration::max() (or any delay past the wheel's range) waits until the range's end: never.
    void schedule_after(timer_node& t, duration delay);
    void schedule_every(periodic_timer& t, duration period, missed_tick policy = missed_tick::burst);
    bool cancel(timer_node& t) noexcept;
    /// Pushes a pending deadline later with a store; earlier or not pending: reschedules.
    void touch(timer_node& t, time_point deadline);

    // --- callback handles ---------------------------------------------------------------------------
    [[nodiscard]] timer_handle schedule_after(duration delay, std::function<void()> fn);
    [[nodiscard]] timer_handle schedule_every(duration period, std::function<void()> fn,
                                missed_tick policy = missed_tick::burst);

    // --- asynchronous wait, any completion token: void(error_code) ---------------------------
    /// Completes with no error when the deadline passed, asio::error::operation_aborted when cancelled
    /// through the handler's cancellation slot (so `co_await (read || wheel.async_wait(...))` works),
    /// or errc::wheel_full / errc::wheel_stopped. Safe to call from any thread.
    template <class CompletionToken>
    auto async_wait_until(time_point deadline, CompletionToken&& token) {
        return asio::async_initiate<CompletionToken, void(error_code)>(
            [this](auto handler, time_point when) {
                using op = detail::wait_op<std::decay_t<decltype(handler)>>;
                auto* o = new op(std::move(handler), ex_);
                asio::dispatch(ex_, [this, o, when] { start_wait(*o, when); });
            },
            token, deadline);
    }
    template <class CompletionToken>
    auto async_wait(duration delay, CompletionToken&& token) {
        return async_wait_until(saturating_add(clock::now(), delay), std::forward<CompletionToken>(token));
    }

    /// Runs f(*this) on the wheel's executor: the way to schedule from another thread.
    template <class F>
    void post(F&& f) {
        asio::post(ex_, [this, fn = std::forward<F>(f)]() mutable { fn(*this); });
    }

    /// Stops the wheel and its steady_timer; hands back every timer that never fired. Pending
    /// asynchronous operations (async_wait, net's tracked requests: every completion_node)
    /// complete with errc::wheel_stopped instead, as they do when the wheel is destroyed.
    std::vector<timer_node*> shutdown();

private:
    void start_wait(detail::wait_op_base& op, time_point when);
    void after_schedule(timer_node& t);
    void arm(time_point when);
    void disarm() noexcept;
    void run_advance();
    void post_advance();
    void record_lateness() noexcept;

    executor_type ex_;
    timing_wheel wheel_;
    asio::steady_timer timer_;
    activity_clock activity_;
    std::shared_ptr<asio_wheel*> self_;
    time_point now_;
    time_point armed_at_{};
    bool armed_ = false;
    bool advancing_ = false;
    bool advance_posted_ = false;
    driver_stats stats_;
};

} // namespace heartwheel

#endif
