// scale_change.cpp — what a change of the overload scale costs, against how many scaled timers exist.
//
// N reader-idle timers (max 10 s, min 1 s), half of them already waiting in their range's queue and
// half still in their min, none due: each iteration moves the scale between 0.9 and 0.8, which makes
// none of them due (they have waited 1.5 s at most). timeout_scale re-arms one queue head per change,
// so the time per change should not depend on N. For reference, `rearm_every_timer` re-files all N
// timers on the wheel, which is what a scale change costs when every timer is re-judged.
#include <heartwheel/net/policies/activity_timer.hpp>
#include <heartwheel/net/policies/timeout_scale.hpp>
#include <heartwheel/testing/manual_scheduler.hpp>
#include <heartwheel/timing_wheel.hpp>

#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

namespace {

using namespace std::chrono_literals;
using heartwheel::duration;
using heartwheel::time_point;

struct ignore_expiries final : heartwheel::net::activity_timer::listener {
    explicit ignore_expiries(heartwheel::timer_scheduler& s) : svc(&s) {}
    void on_expired(heartwheel::net::activity_timer&, bool) override {}
    heartwheel::timer_scheduler& scheduler() const noexcept override { return *svc; }
    heartwheel::timer_scheduler* svc;
};

struct population {
    explicit population(std::size_t n) : ignore(svc), scale(svc, 0.5) {
        timers.reserve(n);
        auto add = [&] {
            timers.push_back(std::make_unique<heartwheel::net::activity_timer>(ignore));
            timers.back()->start_scaled(scale, 1s, 10s, svc.now());
        };
        for (std::size_t i = 0; i < n / 2; ++i) add();
        for (int ms = 100; ms <= 1000; ms += 100) svc.advance_to(time_point{} + std::chrono::milliseconds(ms));
        svc.advance_to(time_point{} + 1500ms); // the first half queued since 1 s
        for (std::size_t i = n / 2; i < n; ++i) add(); // the second half in their min
    }
    heartwheel::testing::manual_scheduler svc{1ms, time_point{}};
    ignore_expiries ignore;
    heartwheel::net::timeout_scale scale;
    std::vector<std::unique_ptr<heartwheel::net::activity_timer>> timers;
};

void scale_change(benchmark::State& state) {
    population p(static_cast<std::size_t>(state.range(0)));
    bool high = false;
    for (auto _ : state) {
        p.scale.set_scale(high ? 0.9 : 0.8);
        high = !high;
    }
    if (p.scale.queued() != static_cast<std::size_t>(state.range(0)) / 2) state.SkipWithError("a timer fired");
    state.counters["queued"] = static_cast<double>(p.scale.queued());
}
BENCHMARK(scale_change)->Arg(1000)->Arg(1000000);

void rearm_every_timer(benchmark::State& state) {
    population p(static_cast<std::size_t>(state.range(0)));
    bool high = false;
    for (auto _ : state) {
        const duration d = high ? 9s : 8s;
        for (auto& t : p.timers) p.svc.wheel().schedule(*t, p.svc.now() + d);
        high = !high;
    }
}
BENCHMARK(rearm_every_timer)->Arg(1000)->Arg(1000000)->Iterations(20);

} // namespace

BENCHMARK_MAIN();
