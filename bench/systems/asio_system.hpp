// asio_system.hpp — one asio::steady_timer per connection (what heartwheel replaces).
//
// arm = expires_after + async_wait. A re-arm cancels the pending wait, whose operation_aborted
// completion must run before the timer's memory can be reused: the system drains those by polling
// the io_context every 256 re-arms, and that cost is counted.
#ifndef HEARTWHEEL_BENCH_ASIO_SYSTEM_HPP
#define HEARTWHEEL_BENCH_ASIO_SYSTEM_HPP

#include "common.hpp"

#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>

#include <deque>

namespace bench {

class asio_system {
public:
    static constexpr const char* name = "asio::steady_timer";

    explicit asio_system(std::size_t n) {
        for (std::size_t i = 0; i < n; ++i) timers_.emplace_back(io_);
    }

    void arm(std::size_t i, std::int64_t delay) {
        timers_[i].expires_after(std::chrono::nanoseconds(delay));
        timers_[i].async_wait([](const std::error_code& ec) {
            if (!ec) ++fired_counter();
        });
        if (++ops_ % 256 == 0) io_.poll();
    }
    void cancel(std::size_t i) {
        timers_[i].cancel();
        if (++ops_ % 256 == 0) io_.poll();
    }
    void rearm(std::size_t i, std::int64_t delay) { arm(i, delay); }
    /// Arms with a deadline already in the past, so expire_all() has work without sleeping.
    void arm_expired(std::size_t i, std::int64_t) {
        timers_[i].expires_at(asio::steady_timer::clock_type::now() - std::chrono::seconds(1));
        timers_[i].async_wait([](const std::error_code& ec) {
            if (!ec) ++fired_counter();
        });
    }
    std::size_t expire_all() {
        io_.restart();
        return io_.poll();
    }
    /// A system on the real clock: time passing means running its loop once without blocking.
    std::size_t advance_to(std::int64_t) {
        const auto before = fired_counter();
        io_.restart();
        io_.poll();
        return fired_counter() - before;
    }
    /// The harness's own step of every operation: from a timer's number to the timer (instructions' `loop`).
    const void* address_of(std::size_t i) const { return &timers_[i]; }

private:
    asio::io_context io_{1};
    std::deque<asio::steady_timer> timers_;
    std::uint64_t ops_ = 0;
};

} // namespace bench

#endif
