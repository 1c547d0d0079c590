// common.hpp — what every timer system in the benchmarks offers, and the workload's random deadlines.
//
// A "system" is a class with: explicit ctor(std::size_t capacity); arm(i, delay); cancel(i);
// rearm(i, delay) (push a pending deadline later, as a read does to an idle timer); expire_all()
// (fire every timer whose deadline has passed, returning how many fired), and a name. Timer i is the
// i-th simulated connection. Delays are in nanoseconds.
#ifndef HEARTWHEEL_BENCH_COMMON_HPP
#define HEARTWHEEL_BENCH_COMMON_HPP

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

/// A counter bumped by every callback, so the compiler cannot drop them.
inline std::uint64_t& fired_counter() {
    static std::uint64_t n = 0;
    return n;
}

} // namespace bench

#endif
