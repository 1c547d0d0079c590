// wheel_model.hpp — a reference model of timing_wheel and a harness that drives both with the same
// schedule / schedule_exact / cancel / reschedule / touch / destroy / advance operations and compares
// them. The choices come from a source: a seeded RNG (test/unit/property_test.cpp) or a fuzzer's
// bytes (fuzz/wheel_fuzz.cpp). The model is an ordered multimap of the timers that may fire, keyed
// by deadline tick, and a set of the timers waiting for an exact deadline.
//
// The model's rules (see timing_wheel.hpp): a timer fires in the first advance, from the one it became
// eligible in, whose target tick reaches its deadline tick; it becomes eligible at the next advance if
// scheduled between advances, or if a callback scheduled it with a deadline not after the tick being
// processed, or if its own callback re-armed it with a deadline not after the advance's target;
// otherwise in the current advance. schedule_exact() with a deadline inside the tick after the current
// one keeps it exactly: the timer becomes eligible at the start of the first advance whose time is at
// or past that deadline (with its tick rounded down to the advance's target at most), and a touch
// re-files it as a schedule() of the new deadline would; any other deadline is a schedule().
// Checked on every firing: it is in the model (exactly once, never after a cancel), its deadline tick
// is reached (never early), and within one advance firing ticks never decrease (deadline order).
// Checked after every advance: no eligible timer is left with a deadline at or before the target
// (never lost, never more than one tick late). Deadlines cluster at level boundaries on purpose.
#ifndef HEARTWHEEL_TEST_WHEEL_MODEL_HPP
#define HEARTWHEEL_TEST_WHEEL_MODEL_HPP

#include <heartwheel/timing_wheel.hpp>

#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace heartwheel::test {

using heartwheel::time_point;
using heartwheel::timing_wheel;
inline constexpr std::int64_t tick_ns = 1'000'000; // 1 ms
inline const time_point t0 = time_point{} + std::chrono::hours(1);

inline std::uint64_t ceil_tick(std::int64_t ns) { return ns <= 0 ? 0 : static_cast<std::uint64_t>((ns + tick_ns - 1) / tick_ns); }
inline std::uint64_t floor_tick(std::int64_t ns) { return ns <= 0 ? 0 : static_cast<std::uint64_t>(ns / tick_ns); }

/// A timer that reports its firing to the harness.
template <class Harness>
struct model_timer_node final : heartwheel::timer_node {
    model_timer_node(Harness& h, std::size_t id) : h(&h), id(id) {}
    Harness* h;
    std::size_t id;
    void on_expire() override { h->on_fire(id); }
};

/// Drives a timing_wheel and the model with choices from `Source`, which provides
/// `std::uint64_t below(std::uint64_t n)` (a choice in [0, n)) and `bool exhausted() const`.
/// Any disagreement throws std::logic_error naming it.
template <class Source>
class model_harness {
    using prop_timer = model_timer_node<model_harness>;

public:
    model_harness(Source& source, std::size_t timers) : src_(source), wheel_(t0), model_(timers) {
        for (std::size_t i = 0; i < timers; ++i) nodes_.push_back(std::make_unique<prop_timer>(*this, i));
    }

    /// Runs up to `ops` operations (fewer if the source runs out), then drains the wheel.
    /// Returns how many timers fired.
    std::size_t run(std::size_t ops) {
        for (std::size_t op = 0; op < ops && !src_.exhausted(); ++op) {
            step();
            if (op % 50'000 == 0) {
                wheel_.check_invariants();
                check_size();
            }
        }
        // Drain: everything left fires, exactly once (callbacks stop scheduling now).
        draining_ = true;
        advance_to(now_ns_ + (std::int64_t{1} << 55));
        advance_to(now_ns_);
        for (std::size_t i = 0; i < model_.size(); ++i)
            if (model_[i].pending) fail("timer " + std::to_string(i) + " never fired");
        wheel_.check_invariants();
        if (!wheel_.empty()) fail("wheel not empty after drain");
        return fired_;
    }

    void on_fire(std::size_t id) {
        ++fired_;
        auto& m = model_[id];
        if (!m.pending || m.deferred) fail("timer " + std::to_string(id) + " fired while not eligible");
        if (m.exact) fail("exact timer " + std::to_string(id) + " fired before its deadline");
        if (m.deadline > target_) fail("timer " + std::to_string(id) + " fired early");
        const std::uint64_t p = std::max(m.deadline, prev_target_);
        if (p < last_p_) fail("timers fired out of deadline order");
        last_p_ = p;
        remove(id);
        processing_ = p;
        firing_ = id;
        callback_action(id);
        firing_ = none;
    }

private:
    struct model_timer {
        bool pending = false;
        bool deferred = false; // eligible from the next advance
        bool exact = false;    // filed by schedule_exact, waiting for exact_ns
        std::int64_t exact_ns = 0;
        std::uint64_t deadline = 0;
        std::multimap<std::uint64_t, std::size_t>::iterator pos;
    };

    [[noreturn]] void fail(const std::string& what) {
        std::ostringstream os;
        os << what << " (advance " << advances_ << ", target " << target_ << ")";
        throw std::logic_error(os.str());
    }

    std::uint64_t r(std::uint64_t n) { return src_.below(n); }

    // A delay in ns: mostly near level boundaries, sometimes uniform over many magnitudes.
    std::int64_t random_delay() {
        const auto k = r(10);
        if (k < 5) {
            const std::int64_t boundary = std::int64_t{1} << (6 * (1 + r(5)));
            const auto jitter = static_cast<std::int64_t>(r(5)) - 2;
            return (boundary + jitter) * tick_ns + static_cast<std::int64_t>(r(2)) * static_cast<std::int64_t>(r(tick_ns));
        }
        if (k < 9) return static_cast<std::int64_t>(r(std::uint64_t{1} << r(34))) * 1000 - 3 * tick_ns;
        return static_cast<std::int64_t>(r(std::uint64_t{1} << 50)); // up to ~13 days
    }

    std::size_t pick() { return static_cast<std::size_t>(r(nodes_.size())); }

    void remove(std::size_t id) {
        auto& m = model_[id];
        if (m.pending && !m.deferred && !m.exact) eligible_.erase(m.pos);
        if (m.pending && m.deferred) --deferred_count_;
        if (m.pending && m.exact) exact_.erase(id);
        m.pending = m.deferred = m.exact = false;
    }

    void model_schedule(std::size_t id, std::uint64_t deadline, bool in_callback) {
        remove(id);
        auto& m = model_[id];
        m.pending = true;
        m.deadline = std::min(deadline, wheel_.max_tick());
        bool defer = !in_callback;
        if (in_callback && (m.deadline <= processing_ || (id == firing_ && m.deadline <= target_)))
            defer = true;
        m.deferred = defer;
        if (defer) {
            deferred_.push_back(id);
            ++deferred_count_;
        } else {
            m.pos = eligible_.emplace(m.deadline, id);
        }
    }

    void do_schedule(std::size_t id, std::int64_t deadline_ns, bool in_callback) {
        wheel_.schedule(*nodes_[id], t0 + std::chrono::nanoseconds(deadline_ns));
        model_schedule(id, ceil_tick(deadline_ns), in_callback);
    }

    void do_schedule_exact(std::size_t id, std::int64_t deadline_ns, bool in_callback) {
        wheel_.schedule_exact(*nodes_[id], t0 + std::chrono::nanoseconds(deadline_ns));
        if (ceil_tick(deadline_ns) != target_ + 1) return model_schedule(id, ceil_tick(deadline_ns), in_callback);
        remove(id);
        auto& m = model_[id];
        m.pending = m.exact = true;
        m.exact_ns = deadline_ns;
        m.deadline = ceil_tick(deadline_ns);
        exact_.insert(id);
    }

    // A deadline inside the next tick, or up to a tick either side of it.
    std::int64_t near_deadline() {
        const auto base = static_cast<std::int64_t>(target_) * tick_ns;
        if (r(4) == 0) return base + static_cast<std::int64_t>(r(3 * tick_ns)) - tick_ns / 2;
        return base + 1 + static_cast<std::int64_t>(r(tick_ns));
    }

    void do_touch(std::size_t id, std::int64_t deadline_ns, bool in_callback) {
        const auto d = std::min(ceil_tick(deadline_ns), wheel_.max_tick());
        auto& m = model_[id];
        const bool lazy = m.pending && !m.exact && d >= m.deadline;
        wheel_.touch(*nodes_[id], t0 + std::chrono::nanoseconds(deadline_ns));
        if (!lazy) {
            model_schedule(id, d, in_callback);
            return;
        }
        if (!m.deferred) {
            eligible_.erase(m.pos);
            m.pos = eligible_.emplace(d, id);
        }
        m.deadline = d;
    }

    void do_cancel(std::size_t id) {
        const bool was = wheel_.cancel(*nodes_[id]);
        if (was != model_[id].pending) fail("cancel() disagrees with the model");
        remove(id);
    }

    void do_destroy(std::size_t id) {
        remove(id);
        nodes_[id] = std::make_unique<prop_timer>(*this, id); // the old one unlinks itself
    }

    std::int64_t base_ns() const { return static_cast<std::int64_t>(processing_) * tick_ns; }

    void callback_action(std::size_t id) {
        if (draining_) return;
        switch (r(8)) {
        case 0: do_schedule(id, base_ns() + random_delay(), true); break;
        case 1: do_cancel(pick()); break;
        case 2: do_schedule(pick(), base_ns() + random_delay(), true); break;
        case 3: do_touch(pick(), base_ns() + random_delay(), true); break;
        case 4: do_schedule_exact(pick(), near_deadline(), true); break;
        default: break;
        }
    }

    void advance_to(std::int64_t ns) {
        now_ns_ = std::max(now_ns_, ns);
        for (std::size_t id : deferred_) {
            auto& m = model_[id];
            if (!m.pending || !m.deferred) continue;
            m.deferred = false;
            --deferred_count_;
            m.pos = eligible_.emplace(m.deadline, id);
        }
        deferred_.clear();
        ++advances_;
        prev_target_ = target_;
        target_ = std::max(floor_tick(now_ns_), prev_target_);
        for (auto it = exact_.begin(); it != exact_.end();) {
            auto& m = model_[*it];
            if (m.exact_ns > now_ns_) {
                ++it;
                continue;
            }
            m.exact = false;
            m.deadline = std::min(m.deadline, target_);
            m.pos = eligible_.emplace(m.deadline, *it);
            it = exact_.erase(it);
        }
        last_p_ = 0;
        processing_ = prev_target_;
        wheel_.advance(t0 + std::chrono::nanoseconds(now_ns_));
        if (!eligible_.empty() && eligible_.begin()->first <= target_)
            fail("timer " + std::to_string(eligible_.begin()->second) + " was due and did not fire");
        processing_ = target_;
    }

    void step() {
        const auto k = r(100);
        const std::int64_t now = now_ns_;
        if (k < 25) do_schedule(pick(), now + random_delay(), false);
        else if (k < 30) do_schedule_exact(pick(), near_deadline(), false);
        else if (k < 40) do_cancel(pick());
        else if (k < 55) do_touch(pick(), now + random_delay(), false);
        else if (k < 57) do_destroy(pick());
        else {
            const auto j = r(20);
            std::int64_t step_ns = static_cast<std::int64_t>(r(3 * tick_ns));
            if (j == 0) step_ns = random_delay();
            else if (j == 1) step_ns = static_cast<std::int64_t>(r(std::uint64_t{1} << 40));
            else if (j == 2) step_ns = 0;
            advance_to(now + std::max<std::int64_t>(step_ns, 0));
        }
    }

    void check_size() {
        if (wheel_.size() != eligible_.size() + deferred_count_ + exact_.size())
            fail("size() " + std::to_string(wheel_.size()) + " disagrees with the model");
    }

    Source& src_;
    timing_wheel wheel_;
    std::vector<std::unique_ptr<prop_timer>> nodes_;
    std::vector<model_timer> model_;
    std::multimap<std::uint64_t, std::size_t> eligible_;
    std::vector<std::size_t> deferred_;
    std::size_t deferred_count_ = 0;
    std::set<std::size_t> exact_; ///< timers waiting exactly (schedule_exact)
    std::int64_t now_ns_ = 0;
    std::uint64_t target_ = 0, prev_target_ = 0, processing_ = 0, last_p_ = 0;
    static constexpr std::size_t none = ~std::size_t{0};
    std::size_t firing_ = none; ///< whose callback runs now
    std::uint64_t advances_ = 0;
    std::size_t fired_ = 0;
    bool draining_ = false;
};

} // namespace heartwheel::test

#endif
