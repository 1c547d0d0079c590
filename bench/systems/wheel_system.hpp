// wheel_system.hpp — heartwheel's timing_wheel with intrusive nodes, time passed in by hand.
#ifndef HEARTWHEEL_BENCH_WHEEL_SYSTEM_HPP
#define HEARTWHEEL_BENCH_WHEEL_SYSTEM_HPP

#include "common.hpp"

#include <heartwheel/timing_wheel.hpp>

#include <memory>

namespace bench {

class wheel_system {
public:
    static constexpr const char* name = "heartwheel";
    struct node final : heartwheel::timer_node {
        void on_expire() override { ++fired_counter(); }
    };

    explicit wheel_system(std::size_t n) : now_(start_), wheel_(now_), nodes_(n) {}

    void arm(std::size_t i, std::int64_t delay) { wheel_.schedule(nodes_[i], now_ + std::chrono::nanoseconds(delay)); }
    void cancel(std::size_t i) { wheel_.cancel(nodes_[i]); }
    void rearm(std::size_t i, std::int64_t delay) { arm(i, delay); }
    /// schedule_tick(): the deadline already in ticks (arm_tick).
    void arm_tick(std::size_t i, std::uint64_t tick) { wheel_.schedule_tick(nodes_[i], tick); }
    void touch(std::size_t i, std::int64_t delay) { wheel_.touch(nodes_[i], now_ + std::chrono::nanoseconds(delay)); }
    /// The net/ hot path: the deadline already in ticks, as an idle tracker keeps it.
    void touch_tick(std::size_t i, std::uint64_t tick) { wheel_.touch_tick(nodes_[i], tick); }
    std::uint64_t tick_of(std::int64_t delay) const { return wheel_.tick_ceil(now_ + std::chrono::nanoseconds(delay)); }
    bool next_expiry() const { return wheel_.next_wakeup().has_value(); }
    /// Simulated time passes (ns since the start): fires what is due.
    std::size_t advance_to(std::int64_t ns) {
        now_ = start_ + std::chrono::nanoseconds(ns);
        return wheel_.advance(now_);
    }
    std::int64_t now() const { return (now_ - start_).count(); }
    /// Armed already due (deadline = now), as the other systems' delay-0 timers: fires from the due list.
    void arm_expired(std::size_t i, std::int64_t) { wheel_.schedule(nodes_[i], now_); }
    std::size_t expire_all() { return wheel_.advance(now_); }
    /// The real shape: deadlines spread over 1–30 s, then 31 s pass, so every timer cascades down the
    /// levels before it fires.
    void arm_far(std::size_t i, std::int64_t spread_delay) { arm(i, spread_delay); }
    std::size_t expire_far() { return advance_to(now() + 31'000'000'000); }
    std::size_t size() const { return wheel_.size(); }
    /// The harness's own step of every operation: from a timer's number to the timer (instructions' `loop`).
    const void* address_of(std::size_t i) const { return &nodes_[i]; }

private:
    static constexpr heartwheel::time_point start_ = heartwheel::time_point{} + std::chrono::hours(1);
    heartwheel::time_point now_;
    heartwheel::timing_wheel wheel_;
    std::vector<node> nodes_;
};

} // namespace bench

#endif
