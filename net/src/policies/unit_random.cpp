// unit_random.cpp — see detail/unit_random.hpp.
#include <heartwheel/net/detail/unit_random.hpp>

#include <cstdint>
#include <random>

namespace heartwheel::net::detail {

double unit_random() noexcept {
    thread_local std::uint64_t state = [] {
        std::random_device rd;
        return (std::uint64_t{rd()} << 32) ^ rd();
    }();
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) * 0x1.0p-53; // 53 random bits
}

} // namespace heartwheel::net::detail
