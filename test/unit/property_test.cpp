// property_test.cpp — millions of random operations, with fixed seeds, checked against the reference
// model in test/support/wheel_model.hpp (exactly once, never early, never lost, at most one tick late,
// deadline order).
#define BOOST_TEST_MODULE property
#include <boost/test/unit_test.hpp>

#include "wheel_model.hpp"

#include <cstdlib>
#include <random>

namespace {

/// Choices from a seeded Mersenne Twister; never runs out.
struct rng_source {
    explicit rng_source(std::uint64_t seed) : rng(seed) {}
    std::uint64_t below(std::uint64_t n) { return std::uniform_int_distribution<std::uint64_t>(0, n - 1)(rng); }
    bool exhausted() const { return false; }
    std::mt19937_64 rng;
};

std::size_t ops_per_seed() {
    if (const char* env = std::getenv("HEARTWHEEL_PROPERTY_OPS")) return std::strtoull(env, nullptr, 10);
    return 1'000'000;
}

} // namespace

BOOST_AUTO_TEST_CASE(random_operations_match_the_model) {
    const std::size_t ops = ops_per_seed();
    for (std::uint64_t seed : {1u, 42u, 20261122u}) {
        for (std::size_t timers : {64u, 4096u}) {
            BOOST_TEST_MESSAGE("seed " << seed << ", " << timers << " timers, " << ops << " operations");
            rng_source source(seed);
            heartwheel::test::model_harness<rng_source> h(source, timers);
            try {
                const std::size_t fired = h.run(ops);
                BOOST_TEST_MESSAGE("fired " << fired << " timers");
                BOOST_TEST(fired > ops / 20);
            } catch (const std::exception& e) {
                BOOST_FAIL("seed " << seed << ", " << timers << " timers: " << e.what());
            }
        }
    }
}
