// libuv_system.hpp — libuv timers (a min-heap in the loop): uv_timer_start / uv_timer_again /
// uv_timer_stop, with millisecond deadlines relative to the loop's cached time.
#ifndef HEARTWHEEL_BENCH_LIBUV_SYSTEM_HPP
#define HEARTWHEEL_BENCH_LIBUV_SYSTEM_HPP

#include "common.hpp"

#include <uv.h>

#include <memory>

namespace bench {

class libuv_system {
public:
    static constexpr const char* name = "libuv";

    explicit libuv_system(std::size_t n) : timers_(new uv_timer_t[n]), n_(n) {
        uv_loop_init(&loop_);
        for (std::size_t i = 0; i < n; ++i) uv_timer_init(&loop_, &timers_[i]);
    }
    ~libuv_system() {
        for (std::size_t i = 0; i < n_; ++i) uv_close(reinterpret_cast<uv_handle_t*>(&timers_[i]), nullptr);
        uv_run(&loop_, UV_RUN_DEFAULT);
        uv_loop_close(&loop_);
    }

    void arm(std::size_t i, std::int64_t delay) {
        uv_timer_start(&timers_[i], &on_timer, static_cast<std::uint64_t>(delay / 1'000'000), 0);
    }
    void cancel(std::size_t i) { uv_timer_stop(&timers_[i]); }
    /// uv_timer_again re-arms with the repeat value: libuv's idiom for pushing a deadline later.
    void rearm(std::size_t i, std::int64_t delay) {
        uv_timer_set_repeat(&timers_[i], static_cast<std::uint64_t>(delay / 1'000'000));
        uv_timer_again(&timers_[i]);
    }
    void arm_expired(std::size_t i, std::int64_t) { uv_timer_start(&timers_[i], &on_timer, 0, 0); }
    std::size_t expire_all() {
        const auto before = fired_counter();
        uv_update_time(&loop_);
        uv_run(&loop_, UV_RUN_NOWAIT);
        return fired_counter() - before;
    }
    /// A system on the real clock: time passing means running its loop once without blocking.
    std::size_t advance_to(std::int64_t) {
        const auto before = fired_counter();
        uv_update_time(&loop_);
        uv_run(&loop_, UV_RUN_NOWAIT);
        return fired_counter() - before;
    }
    /// The harness's own step of every operation: from a timer's number to the timer (instructions' `loop`).
    const void* address_of(std::size_t i) const { return &timers_[i]; }

private:
    static void on_timer(uv_timer_t*) { ++fired_counter(); }
    uv_loop_t loop_{};
    std::unique_ptr<uv_timer_t[]> timers_;
    std::size_t n_;
};

} // namespace bench

#endif
