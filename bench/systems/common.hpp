// common.hpp — what every timer system in the benchmarks offers, and the workload's random deadlines.
//
// A "system" is a class with: explicit ctor(std::size_t capacity); arm(i, delay); cancel(i);
// rearm(i, delay) (push a pending deadline later, as a read does to an idle timer); expire_all()
// (fire every timer whose deadline has passed, returning how many fired), and a name. Timer i is the
// i-th simulated connection. Delays are in nanoseconds.
//
// Fairness: timer i lives at the i-th place in memory, so a benchmark that armed timers 0, 1, 2, ...
// would let every FIFO structure fire them in allocation order, where the hardware prefetcher hides
// each cache miss. A real server arms its connections' timers in an order unrelated to where they
// live; the benchmarks arm in `arm_order` (a fixed random permutation) unless a figure is labelled
// "allocation order".
#ifndef HEARTWHEEL_BENCH_COMMON_HPP
#define HEARTWHEEL_BENCH_COMMON_HPP

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>
#include <vector>

namespace bench {

/// Deadlines spread over 1–30 s, as idle and heartbeat timeouts of many connections are.
inline std::vector<std::int64_t> spread_delays(std::size_t n, std::uint64_t seed = 7) {
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<std::int64_t> d(1'000'000'000, 30'000'000'000);
    std::vector<std::int64_t> out(n);
    for (auto& x : out) x = d(rng);
    return out;
}

/// A random permutation of 0..n-1: the order in which the benchmarks touch timers.
inline std::vector<std::size_t> arm_order(std::size_t n, std::uint64_t seed = 13) {
    std::vector<std::size_t> out(n);
    for (std::size_t i = 0; i < n; ++i) out[i] = i;
    std::shuffle(out.begin(), out.end(), std::mt19937_64(seed));
    return out;
}

/// 0..n-1 in memory order (for the labelled allocation-order figures).
inline std::vector<std::size_t> memory_order(std::size_t n) {
    std::vector<std::size_t> out(n);
    for (std::size_t i = 0; i < n; ++i) out[i] = i;
    return out;
}

/// A counter bumped by every callback, so the compiler cannot drop them.
inline std::uint64_t& fired_counter() {
    static std::uint64_t n = 0;
    return n;
}

} // namespace bench

#endif
