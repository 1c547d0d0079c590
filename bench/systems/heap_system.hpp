// heap_system.hpp — a binary min-heap of (deadline, id, generation) with lazy deletion: cancel and
// re-arm bump the timer's generation, and stale heap entries are skipped when popped. Time is
// simulated (advance_to), so timers come due and stale entries are popped as in a running server.
// Once stale entries outnumber live timers 2:1 the heap is rebuilt in O(n) from its live entries
// (that rebuild is the structure's worst pause, which the mixed benchmark reports).
#ifndef HEARTWHEEL_BENCH_HEAP_SYSTEM_HPP
#define HEARTWHEEL_BENCH_HEAP_SYSTEM_HPP

#include "common.hpp"

#include <algorithm>
#include <functional>
#include <vector>

namespace bench {

class heap_system {
public:
    static constexpr const char* name = "binary heap";

    explicit heap_system(std::size_t n) : gen_(n, 0), live_(n, 0) {}

    void arm(std::size_t i, std::int64_t delay) {
        if (!live_[i]) live_[i] = 1, ++live_count_;
        heap_.push_back(entry{now_ + delay, static_cast<std::uint32_t>(i), ++gen_[i]});
        std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
        compact_if_bloated();
    }
    void cancel(std::size_t i) {
        if (live_[i]) live_[i] = 0, --live_count_;
        ++gen_[i];
    }
    void rearm(std::size_t i, std::int64_t delay) { arm(i, delay); }
    bool next_expiry() {
        while (!heap_.empty() && stale(heap_.front())) pop();
        return !heap_.empty();
    }
    /// Simulated time passes: fires what is due and drops the stale entries met on the way.
    std::size_t advance_to(std::int64_t now) {
        now_ = now;
        std::size_t fired = 0;
        while (!heap_.empty() && heap_.front().when <= now_) {
            const entry e = pop();
            if (e.gen != gen_[e.id]) continue;
            ++gen_[e.id];
            live_[e.id] = 0, --live_count_;
            ++fired_counter();
            ++fired;
        }
        return fired;
    }
    std::int64_t now() const { return now_; }
    /// Already due: deadline = now, as the other systems' "armed already due" (delay 0).
    void arm_expired(std::size_t i, std::int64_t) { arm(i, 0); }
    std::size_t expire_all() { return advance_to(now_); }
    /// Armed 1–30 s out, then 31 s pass (the wheel's cascade shape).
    void arm_far(std::size_t i, std::int64_t spread_delay) { arm(i, spread_delay); }
    std::size_t expire_far() { return advance_to(now_ + 31'000'000'000); }
    /// The harness's own step of every operation: from a timer's number to the timer (instructions' `loop`).
    const void* address_of(std::size_t i) const { return &gen_[i]; }

private:
    struct entry {
        std::int64_t when;
        std::uint32_t id;
        std::uint32_t gen;
        bool operator>(const entry& o) const { return when > o.when; }
    };
    bool stale(const entry& e) const { return e.gen != gen_[e.id]; }
    entry pop() {
        std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
        const entry e = heap_.back();
        heap_.pop_back();
        return e;
    }
    void compact_if_bloated() {
        if (heap_.size() < 3 * live_count_ + 1024) return;
        std::erase_if(heap_, [this](const entry& e) { return stale(e); });
        std::make_heap(heap_.begin(), heap_.end(), std::greater<>());
    }
    std::int64_t now_ = 0;
    std::size_t live_count_ = 0;
    std::vector<std::uint32_t> gen_;
    std::vector<std::uint8_t> live_;
    std::vector<entry> heap_;
};

} // namespace bench

#endif
