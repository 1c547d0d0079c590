// heap_system.hpp — a binary min-heap of (deadline, id, generation) with lazy deletion: cancel and
// re-arm bump the timer's generation, and stale heap entries are skipped when popped.
#ifndef HEARTWHEEL_BENCH_HEAP_SYSTEM_HPP
#define HEARTWHEEL_BENCH_HEAP_SYSTEM_HPP

#include "common.hpp"

#include <queue>

namespace bench {

class heap_system {
public:
    static constexpr const char* name = "binary heap";

    explicit heap_system(std::size_t n) : gen_(n, 0) {}

    void arm(std::size_t i, std::int64_t delay) {
        heap_.push(entry{now_ + delay, static_cast<std::uint32_t>(i), ++gen_[i]});
        compact_if_bloated();
    }
    void cancel(std::size_t i) { ++gen_[i]; }
    void rearm(std::size_t i, std::int64_t delay) { arm(i, delay); }
    bool next_expiry() {
        while (!heap_.empty() && heap_.top().gen != gen_[heap_.top().id]) heap_.pop();
        return !heap_.empty();
    }
    void advance_by(std::int64_t ns) { now_ += ns; }
    void arm_expired(std::size_t i, std::int64_t spread_delay) { arm(i, spread_delay); }
    std::size_t expire_all() {
        advance_by(31'000'000'000);
        std::size_t fired = 0;
        while (!heap_.empty() && heap_.top().when <= now_) {
            const entry e = heap_.top();
            heap_.pop();
            if (e.gen != gen_[e.id]) continue;
            ++gen_[e.id];
            ++fired_counter();
            ++fired;
        }
        return fired;
    }

private:
    struct entry {
        std::int64_t when;
        std::uint32_t id;
        std::uint32_t gen;
        bool operator>(const entry& o) const { return when > o.when; }
    };
    // Lazy deletion leaves stale entries behind; rebuild once they outnumber live timers 2:1.
    void compact_if_bloated() {
        if (heap_.size() < 4 * gen_.size() + 1024) return;
        std::vector<entry> live;
        while (!heap_.empty()) {
            if (heap_.top().gen == gen_[heap_.top().id]) live.push_back(heap_.top());
            heap_.pop();
        }
        heap_ = decltype(heap_)(std::greater<>(), std::move(live));
    }
    std::int64_t now_ = 0;
    std::vector<std::uint32_t> gen_;
    std::priority_queue<entry, std::vector<entry>, std::greater<>> heap_;
};

} // namespace bench

#endif
