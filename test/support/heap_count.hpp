// heap_count.hpp — a test program's own operator new, counting what it is asked for while a
// measurement runs: figures that are the same under every build and allocator. Replacing operator
// new is a whole program's business: include this header in exactly one source of a test binary.
#ifndef HEARTWHEEL_TEST_HEAP_COUNT_HPP
#define HEARTWHEEL_TEST_HEAP_COUNT_HPP

#include <cstddef>
#include <cstdlib>
#include <new>

namespace hwtest {

struct heap_use {
    std::size_t allocations, bytes;
    std::size_t frees = 0; ///< operator delete calls meanwhile: allocations - frees were left live
};

namespace heap_count_detail {
inline bool counting = false;
inline heap_use counted{0, 0, 0};
} // namespace heap_count_detail

/// What `f()` asks operator new for: how many allocations, how many bytes.
template <class F>
heap_use measure_heap(F&& f) {
    heap_count_detail::counted = {0, 0, 0};
    heap_count_detail::counting = true;
    f();
    heap_count_detail::counting = false;
    return heap_count_detail::counted;
}

} // namespace hwtest

void* operator new(std::size_t n) {
    if (hwtest::heap_count_detail::counting) {
        ++hwtest::heap_count_detail::counted.allocations;
        hwtest::heap_count_detail::counted.bytes += n;
    }
    if (void* p = std::malloc(n ? n : 1)) return p;
    throw std::bad_alloc();
}
// GCC takes a replaced operator delete that frees what the replaced operator new took from malloc
// for a mismatch once both are inlined.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void operator delete(void* p) noexcept {
    if (p && hwtest::heap_count_detail::counting) ++hwtest::heap_count_detail::counted.frees;
    std::free(p);
}
void operator delete(void* p, std::size_t) noexcept { operator delete(p); }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#endif
