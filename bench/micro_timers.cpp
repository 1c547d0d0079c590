// micro_timers.cpp — the cost of each timer operation, for every system, at 1,000 / 100,000 /
// 1,000,000 live timers, in one run (so ratios compare like with like on a noisy machine).
//
// Each benchmark keeps N timers live (one per simulated connection, deadlines over 1–30 s) and then
// measures one operation over batches of timers: arm, cancel, rearm (push a pending deadline later),
// touch (heartwheel's record-activity path), expire (cost per fired timer when all are due) and
// next_expiry. Counter ns_per_op is the figure; bytes_per_timer comes from malloc statistics.
#include "systems/asio_system.hpp"
#include "systems/heap_system.hpp"
#include "systems/libevent_system.hpp"
#include "systems/libuv_system.hpp"
#include "systems/wheel_system.hpp"

#include <benchmark/benchmark.h>

#include <malloc.h>

namespace {

constexpr std::size_t batch = 4096;

void per_op(benchmark::State& st, std::size_t ops_per_iteration) {
    // Reported as 1 / (ops * 1e-9 * iterations / seconds) = nanoseconds per operation.
    st.counters["ns_per_op"] = benchmark::Counter(static_cast<double>(ops_per_iteration) * 1e-9,
                                                  benchmark::Counter::kIsIterationInvariantRate |
                                                      benchmark::Counter::kInvert);
}

template <class S>
struct fixture {
    explicit fixture(std::size_t n) : n(n), sys(n + batch), delays(bench::spread_delays(n + batch)) {
        for (std::size_t i = 0; i < n; ++i) sys.arm(i, delays[i]);
    }
    std::size_t n;
    S sys;
    std::vector<std::int64_t> delays;
};

template <class S>
void arm(benchmark::State& st) {
    fixture<S> f(static_cast<std::size_t>(st.range(0)));
    for (auto _ : st) {
        for (std::size_t k = 0; k < batch; ++k) f.sys.arm(f.n + k, f.delays[f.n + k]);
        st.PauseTiming();
        for (std::size_t k = 0; k < batch; ++k) f.sys.cancel(f.n + k);
        st.ResumeTiming();
    }
    per_op(st, batch);
}

template <class S>
void cancel(benchmark::State& st) {
    fixture<S> f(static_cast<std::size_t>(st.range(0)));
    for (auto _ : st) {
        st.PauseTiming();
        for (std::size_t k = 0; k < batch; ++k) f.sys.arm(f.n + k, f.delays[f.n + k]);
        st.ResumeTiming();
        for (std::size_t k = 0; k < batch; ++k) f.sys.cancel(f.n + k);
    }
    per_op(st, batch);
}

template <class S>
void rearm(benchmark::State& st) {
    fixture<S> f(static_cast<std::size_t>(st.range(0)));
    std::size_t i = 0;
    std::int64_t later = 0;
    for (auto _ : st) {
        for (std::size_t k = 0; k < batch; ++k) {
            f.sys.rearm(i, f.delays[i] + later);
            if (++i == f.n) i = 0, later += 1'000'000;
        }
    }
    per_op(st, batch);
}

void touch(benchmark::State& st) {
    fixture<bench::wheel_system> f(static_cast<std::size_t>(st.range(0)));
    std::vector<std::uint64_t> ticks(f.n);
    for (std::size_t i = 0; i < f.n; ++i) ticks[i] = f.sys.tick_of(f.delays[i]);
    std::size_t i = 0;
    for (auto _ : st) {
        for (std::size_t k = 0; k < batch; ++k) {
            f.sys.touch_tick(i, ++ticks[i]);
            if (++i == f.n) i = 0;
        }
    }
    per_op(st, batch);
}

template <class S>
void expire(benchmark::State& st) {
    const auto n = static_cast<std::size_t>(st.range(0));
    S sys(n);
    const auto delays = bench::spread_delays(n);
    std::size_t fired = 0;
    for (auto _ : st) {
        st.PauseTiming();
        for (std::size_t i = 0; i < n; ++i) sys.arm_expired(i, delays[i]);
        st.ResumeTiming();
        fired += sys.expire_all();
    }
    if (fired != n * st.iterations()) st.SkipWithError("not every timer fired");
    per_op(st, n);
}

// A server's shape: per connection an idle timer (record activity on every read: heartwheel touches,
// the others re-arm), a heartbeat timer pushed on every write, and a request timer that is cancelled
// when the answer comes and armed for the next request — it almost never fires. One "event" is one
// read + echo + request round on a connection; the figure is per event (four timer operations).
// Timers 0..n-1 are idle timers, n..2n-1 heartbeats, 2n..3n-1 requests.
template <class S>
void mixed(benchmark::State& st) {
    const auto n = static_cast<std::size_t>(st.range(0));
    S sys(3 * n);
    const auto delays = bench::spread_delays(n);
    constexpr std::int64_t idle = 30'000'000'000, heartbeat = 10'000'000'000, request = 5'000'000'000;
    for (std::size_t i = 0; i < n; ++i) {
        sys.arm(i, idle + delays[i] % 1'000'000'000);
        sys.arm(n + i, heartbeat + delays[i] % 1'000'000'000);
        sys.arm(2 * n + i, request + delays[i] % 1'000'000'000);
    }
    std::size_t i = 0;
    std::int64_t now = 0; // simulated: 1 µs per event
    for (auto _ : st) {
        for (std::size_t k = 0; k < batch; ++k) {
            now += 1000;
            if constexpr (requires { sys.touch(i, idle); }) sys.touch(i, now + idle);
            else sys.rearm(i, now + idle);
            sys.rearm(n + i, now + heartbeat);
            sys.cancel(2 * n + i);
            sys.arm(2 * n + i, now + request);
            if (++i == n) i = 0;
        }
    }
    per_op(st, batch);
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
        const auto before = mallinfo2().uordblks + mallinfo2().hblkhd;
        auto f = std::make_unique<fixture<S>>(n);
        const auto after = mallinfo2().uordblks + mallinfo2().hblkhd;
        const auto delay_bytes = (n + batch) * sizeof(std::int64_t);
        st.counters["bytes_per_timer"] =
            static_cast<double>(after - before - delay_bytes + sizeof(fixture<S>)) / static_cast<double>(n + batch);
    }
}

} // namespace

// Fixed iteration counts keep a full run predictable (setup outside the timed part dominates the
// wall time otherwise): 64 batches of 4,096 for arm and cancel, 256 for rearm and touch, 3 full
// expiries of N timers.
#define HEARTWHEEL_SIZES(iters) \
    ->Arg(1'000)->Arg(100'000)->Arg(1'000'000)->Iterations(iters)->Unit(benchmark::kNanosecond)
#define HEARTWHEEL_ALL(op, iters)                                                                       \
    BENCHMARK_TEMPLATE(op, bench::wheel_system) HEARTWHEEL_SIZES(iters)->Name(#op "/heartwheel");       \
    BENCHMARK_TEMPLATE(op, bench::asio_system) HEARTWHEEL_SIZES(iters)->Name(#op "/asio");              \
    BENCHMARK_TEMPLATE(op, bench::libevent_system<false>) HEARTWHEEL_SIZES(iters)->Name(#op "/libevent"); \
    BENCHMARK_TEMPLATE(op, bench::libevent_system<true>) HEARTWHEEL_SIZES(iters)->Name(#op "/libevent-common"); \
    BENCHMARK_TEMPLATE(op, bench::libuv_system) HEARTWHEEL_SIZES(iters)->Name(#op "/libuv");            \
    BENCHMARK_TEMPLATE(op, bench::heap_system) HEARTWHEEL_SIZES(iters)->Name(#op "/heap");

HEARTWHEEL_ALL(arm, 64)
HEARTWHEEL_ALL(cancel, 64)
HEARTWHEEL_ALL(rearm, 256)
HEARTWHEEL_ALL(expire, 3)
HEARTWHEEL_ALL(mixed, 64)
BENCHMARK(touch) HEARTWHEEL_SIZES(256)->Name("touch/heartwheel");
BENCHMARK_TEMPLATE(next_expiry, bench::wheel_system) HEARTWHEEL_SIZES(1'000'000)->Name("next_expiry/heartwheel");
BENCHMARK_TEMPLATE(next_expiry, bench::heap_system) HEARTWHEEL_SIZES(1'000'000)->Name("next_expiry/heap");
HEARTWHEEL_ALL(memory, 1)

BENCHMARK_MAIN();
