// libev_system.hpp — libev timers (a 4-ary heap in the loop, times in double seconds). Re-arm uses
// ev_timer_again with the new repeat value: what libev's manual recommends for idle timeouts.
#ifndef HEARTWHEEL_BENCH_LIBEV_SYSTEM_HPP
#define HEARTWHEEL_BENCH_LIBEV_SYSTEM_HPP

#include "common.hpp"

#include <ev.h>

#include <memory>

namespace bench {

class libev_system {
public:
    static constexpr const char* name = "libev";

    explicit libev_system(std::size_t n) : loop_(ev_loop_new(EVFLAG_AUTO)), timers_(new ev_timer[n]) {
        for (std::size_t i = 0; i < n; ++i) ev_timer_init(&timers_[i], &on_timer, 0., 0.);
    }
    ~libev_system() { ev_loop_destroy(loop_); }
    libev_system(const libev_system&) = delete;
    libev_system& operator=(const libev_system&) = delete;

    void arm(std::size_t i, std::int64_t delay) {
        ev_timer_stop(loop_, &timers_[i]);
        ev_timer_set(&timers_[i], static_cast<double>(delay) * 1e-9, 0.);
        ev_timer_start(loop_, &timers_[i]);
    }
    void cancel(std::size_t i) { ev_timer_stop(loop_, &timers_[i]); }
    void rearm(std::size_t i, std::int64_t delay) {
        timers_[i].repeat = static_cast<double>(delay) * 1e-9;
        ev_timer_again(loop_, &timers_[i]);
    }
    void arm_expired(std::size_t i, std::int64_t) {
        ev_timer_set(&timers_[i], 0., 0.);
        ev_timer_start(loop_, &timers_[i]);
    }
    std::size_t expire_all() {
        const auto before = fired_counter();
        ev_run(loop_, EVRUN_NOWAIT);
        return fired_counter() - before;
    }
    /// A system on the real clock: time passing means running its loop once without blocking.
    std::size_t advance_to(std::int64_t) { return expire_all(); }
    /// The harness's own step of every operation: from a timer's number to the timer (instructions' `loop`).
    const void* address_of(std::size_t i) const { return &timers_[i]; }

private:
    static void on_timer(struct ev_loop*, ev_timer*, int) { ++fired_counter(); }
    struct ev_loop* loop_;
    std::unique_ptr<ev_timer[]> timers_;
};

} // namespace bench

#endif
