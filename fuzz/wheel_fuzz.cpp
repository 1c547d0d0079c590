// wheel_fuzz.cpp — the timing wheel against the reference model of test/support/wheel_model.hpp.
// The first byte picks the number of timers (1..64); the rest is read as the harness's choices
// (schedule / schedule_exact / cancel / touch / destroy / advance and their delays), so the fuzzer
// explores operation sequences rather than random seeds. When the bytes run out the wheel is drained:
// every pending timer must fire exactly once, never early, at most one tick late, in deadline order.
#include "fuzz_check.hpp"
#include "wheel_model.hpp"

#include <cstdint>
#include <cstdio>
#include <stdexcept>

namespace {

/// Choices read from the fuzzer's bytes, little-endian, as many bytes as n needs; zeros once spent.
struct byte_source {
    const std::uint8_t* p;
    const std::uint8_t* end;
    std::uint64_t below(std::uint64_t n) {
        std::uint64_t v = 0;
        for (std::uint64_t span = n - 1, shift = 0; span > 0 && shift < 64; span >>= 8, shift += 8)
            v |= std::uint64_t{p < end ? *p++ : std::uint8_t{0}} << shift;
        return v % n;
    }
    bool exhausted() const { return p >= end; }
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 2) return 0;
    byte_source src{data + 1, data + size};
    heartwheel::test::model_harness<byte_source> h(src, 1 + data[0] % 64);
    try {
        h.run(size); // every operation takes at least one byte
    } catch (const std::logic_error& e) {
        std::fprintf(stderr, "wheel disagrees with the model: %s\n", e.what());
        std::abort();
    }
    return 0;
}
