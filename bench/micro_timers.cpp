// micro_timers.cpp — the cost of each timer operation, for every system, at 1,000 / 100,000 /
// 1,000,000 live timers, in one run (so ratios compare like with like on a noisy machine).
//
// Each benchmark keeps N timers live (one per simulated connection, deadlines over 1–30 s) and then
// measures one operation over batches of timers: arm, cancel, rearm (push a pending deadline later),
// touch (heartwheel's record-activity path), expire (cost per fired timer), mixed (a server's
// per-event timer work over simulated time) and next_expiry. Timers are armed and visited in a
// random order unrelated to where they live in memory (bench::arm_order), as a server's connections
// are; expire_alloc_order is the one figure in allocation order, labelled as such. Counter ns_per_op
// is the figure; bytes_per_timer comes from malloc statistics.
#include "systems/asio_system.hpp"
#include "systems/heap_system.hpp"
#include "systems/libev_system.hpp"
#include "systems/libevent_system.hpp"
#include "systems/libuv_system.hpp"
#include "systems/wheel_system.hpp"

#include <benchmark/benchmark.h>

#include <malloc.h>

#include <chrono>

namespace {

constexpr std::size_t batch = 4096;

void per_op(benchmark::State& st, std::size_t ops_per_iteration) {
    // Reported as 1 / (ops * 1e-9 * iterations / seconds) = nanoseconds per operation.
    st.counters["ns_per_op"] = benchmark::Counter(static_cast<double>(ops_per_iteration) * 1e-9,
                                                  benchmark::Counter::kIsIterationInvariantRate |
                                                      benchmark::Counter::kInvert);
}

std::size_t heap_bytes() {
    const auto m = mallinfo2();
    return m.uordblks + m.hblkhd;
}

/// N live timers armed in a random order; order[n..n+batch) are the timers the operation arms.
template <class S>
struct fixture {
    explicit fixture(std::size_t n)
        : n(n), sys(n + batch), delays(bench::spread_delays(n + batch)), order(bench::arm_order(n + batch)) {
        for (std::size_t j = 0; j < n; ++j) sys.arm(order[j], delays[order[j]]);
    }
    std::size_t extra(std::size_t k) const { return order[n + k]; }
    std::size_t n;
    S sys;
    std::vector<std::int64_t> delays;
    std::vector<std::size_t> order;
};

template <class S>
void arm(benchmark::State& st) {
    fixture<S> f(static_cast<std::size_t>(st.range(0)));
    for (auto _ : st) {
        for (std::size_t k = 0; k < batch; ++k) f.sys.arm(f.extra(k), f.delays[f.extra(k)]);
        st.PauseTiming();
        for (std::size_t k = 0; k < batch; ++k) f.sys.cancel(f.extra(k));
        st.ResumeTiming();
    }
    per_op(st, batch);
}

template <class S>
void cancel(benchmark::State& st) {
    fixture<S> f(static_cast<std::size_t>(st.range(0)));
    for (auto _ : st) {
        st.PauseTiming();
        for (std::size_t k = 0; k < batch; ++k) f.sys.arm(f.extra(k), f.delays[f.extra(k)]);
        st.ResumeTiming();
        for (std::size_t k = 0; k < batch; ++k) f.sys.cancel(f.extra(k));
    }
    per_op(st, batch);
}

template <class S>
void rearm(benchmark::State& st) {
    fixture<S> f(static_cast<std::size_t>(st.range(0)));
    std::size_t j = 0;
    std::int64_t later = 0;
    for (auto _ : st) {
        for (std::size_t k = 0; k < batch; ++k) {
            const std::size_t i = f.order[j];
            f.sys.rearm(i, f.delays[i] + later);
            if (++j == f.n) j = 0, later += 1'000'000;
        }
    }
    per_op(st, batch);
}

void touch(benchmark::State& st) {
    fixture<bench::wheel_system> f(static_cast<std::size_t>(st.range(0)));
    std::vector<std::uint64_t> ticks(f.n + batch);
    for (std::size_t i = 0; i < f.n + batch; ++i) ticks[i] = f.sys.tick_of(f.delays[i]);
    std::size_t j = 0;
    for (auto _ : st) {
        for (std::size_t k = 0; k < batch; ++k) {
            const std::size_t i = f.order[j];
            f.sys.touch_tick(i, ++ticks[i]);
            if (++j == f.n) j = 0;
        }
    }
    per_op(st, batch);
}

// Cost per fired timer, in the given arming order: N timers armed already due (every system the same
// way), or (Far) from deadlines spread over 1–30 s with 31 s then passing — the simulated-time
// systems only (the wheel cascades each timer down its levels; the heap pops in deadline order).
template <class S, bool MemoryOrder, bool Far = false>
void expire_in(benchmark::State& st) {
    const auto n = static_cast<std::size_t>(st.range(0));
    S sys(n);
    const auto delays = bench::spread_delays(n);
    const auto order = MemoryOrder ? bench::memory_order(n) : bench::arm_order(n);
    std::size_t fired = 0;
    for (auto _ : st) {
        st.PauseTiming();
        for (std::size_t i : order) {
            if constexpr (Far) sys.arm_far(i, delays[i]);
            else sys.arm_expired(i, delays[i]);
        }
        st.ResumeTiming();
        if constexpr (Far) fired += sys.expire_far();
        else fired += sys.expire_all();
    }
    if (fired != n * st.iterations()) st.SkipWithError("not every timer fired");
    per_op(st, n);
}

template <class S>
void expire(benchmark::State& st) { expire_in<S, false>(st); }
template <class S>
void expire_alloc_order(benchmark::State& st) { expire_in<S, true>(st); }
template <class S>
void expire_cascade(benchmark::State& st) { expire_in<S, false, true>(st); }

// A server's shape over simulated time: per connection an idle timer (record activity on every read:
// heartwheel touches, the others re-arm), a heartbeat timer pushed on every write, and a request
// timer that is cancelled when the answer comes and armed for the next request. One "event" is one
// read + echo + request round on a connection (four timer operations); events come 1 µs apart, and
// time is advanced every 256 events, so the wheel processes its slots, the heap pops (and compacts)
// and the real-clock systems run their loops. The run covers 12 simulated seconds, long enough for the
// first request deadlines (5 s) to come due. Reported per event, with the worst pause (the longest
// 256-event stretch, its advance included) and peak heap memory per connection.
template <class S>
void mixed(benchmark::State& st) {
    const auto n = static_cast<std::size_t>(st.range(0));
    const auto base = heap_bytes();
    auto sys = std::make_unique<S>(3 * n);
    const auto delays = bench::spread_delays(n);
    const auto order = bench::arm_order(n);
    constexpr std::int64_t idle = 30'000'000'000, heartbeat = 10'000'000'000, request = 5'000'000'000;
    for (std::size_t i : order) {
        sys->arm(i, idle + delays[i] % 1'000'000'000);
        sys->arm(n + i, heartbeat + delays[i] % 1'000'000'000);
        sys->arm(2 * n + i, request + delays[i] % 1'000'000'000);
    }
    std::size_t j = 0, peak = heap_bytes() - base;
    std::int64_t now = 0;
    std::chrono::steady_clock::duration worst{};
    for (auto _ : st) {
        for (std::size_t chunk = 0; chunk < batch; chunk += 256) {
            const auto t0 = std::chrono::steady_clock::now();
            for (std::size_t k = 0; k < 256; ++k) {
                now += 1000;
                const std::size_t i = order[j];
                if constexpr (requires { sys->touch(i, idle); }) sys->touch(i, idle);
                else sys->rearm(i, idle);
                sys->rearm(n + i, heartbeat);
                sys->cancel(2 * n + i);
                sys->arm(2 * n + i, request);
                if (++j == n) j = 0;
            }
            sys->advance_to(now);
            worst = std::max(worst, std::chrono::steady_clock::now() - t0);
        }
        peak = std::max(peak, heap_bytes() - base);
    }
    per_op(st, batch);
    st.counters["worst_pause_us"] = std::chrono::duration<double, std::micro>(worst).count();
    st.counters["peak_bytes_per_conn"] = static_cast<double>(peak) / static_cast<double>(n);
}

template <class S>
void next_expiry(benchmark::State& st) {
    fixture<S> f(static_cast<std::size_t>(st.range(0)));
    for (auto _ : st) benchmark::DoNotOptimize(f.sys.next_expiry());
    per_op(st, 1);
}

template <class S>
void memory(benchmark::State& st) {
    const auto n = static_cast<std::size_t>(st.range(0));
    for (auto _ : st) {
        const auto delays_and_order = (n + batch) * (sizeof(std::int64_t) + sizeof(std::size_t));
        const auto before = heap_bytes();
        auto f = std::make_unique<fixture<S>>(n);
        const auto after = heap_bytes();
        st.counters["bytes_per_timer"] =
            static_cast<double>(after - before - delays_and_order + sizeof(fixture<S>)) / static_cast<double>(n + batch);
    }
}

} // namespace

// Fixed iteration counts keep a full run predictable (setup outside the timed part dominates the
// wall time otherwise): 64 batches of 4,096 for arm and cancel, 256 for rearm and touch, 3 full
// expiries of N timers, 2,930 batches of 4,096 events (12 simulated seconds) for mixed.
#define HEARTWHEEL_SIZES(iters) \
    ->Arg(1'000)->Arg(100'000)->Arg(1'000'000)->Iterations(iters)->Unit(benchmark::kNanosecond)
#define HEARTWHEEL_ALL(op, iters)                                                                       \
    BENCHMARK_TEMPLATE(op, bench::wheel_system) HEARTWHEEL_SIZES(iters)->Name(#op "/heartwheel");       \
    BENCHMARK_TEMPLATE(op, bench::asio_system) HEARTWHEEL_SIZES(iters)->Name(#op "/asio");              \
    BENCHMARK_TEMPLATE(op, bench::libevent_system<false>) HEARTWHEEL_SIZES(iters)->Name(#op "/libevent"); \
    BENCHMARK_TEMPLATE(op, bench::libevent_system<true>) HEARTWHEEL_SIZES(iters)->Name(#op "/libevent-common"); \
    BENCHMARK_TEMPLATE(op, bench::libev_system) HEARTWHEEL_SIZES(iters)->Name(#op "/libev");            \
    BENCHMARK_TEMPLATE(op, bench::libuv_system) HEARTWHEEL_SIZES(iters)->Name(#op "/libuv");            \
    BENCHMARK_TEMPLATE(op, bench::heap_system) HEARTWHEEL_SIZES(iters)->Name(#op "/heap");

HEARTWHEEL_ALL(arm, 64)
HEARTWHEEL_ALL(cancel, 64)
HEARTWHEEL_ALL(rearm, 256)
BENCHMARK(touch) HEARTWHEEL_SIZES(256)->Name("touch/heartwheel");
HEARTWHEEL_ALL(expire, 3)
BENCHMARK_TEMPLATE(expire_cascade, bench::wheel_system) HEARTWHEEL_SIZES(3)->Name("expire_cascade/heartwheel");
BENCHMARK_TEMPLATE(expire_cascade, bench::heap_system) HEARTWHEEL_SIZES(3)->Name("expire_cascade/heap");
HEARTWHEEL_ALL(expire_alloc_order, 3)
HEARTWHEEL_ALL(mixed, 2930)
BENCHMARK_TEMPLATE(next_expiry, bench::wheel_system) HEARTWHEEL_SIZES(1'000'000)->Name("next_expiry/heartwheel");
BENCHMARK_TEMPLATE(next_expiry, bench::heap_system) HEARTWHEEL_SIZES(1'000'000)->Name("next_expiry/heap");
HEARTWHEEL_ALL(memory, 1)

BENCHMARK_MAIN();
