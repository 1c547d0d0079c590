// heartwheel/net/detail/unit_random.hpp — the default jitter source of the liveness policies: uniform
// doubles in [0, 1) from a per-thread splitmix64 seeded once from std::random_device. Eight bytes of
// state per thread, where a std::mt19937_64 per connection would cost 2.5 KB and a random_device read.
#ifndef HEARTWHEEL_NET_DETAIL_UNIT_RANDOM_HPP
#define HEARTWHEEL_NET_DETAIL_UNIT_RANDOM_HPP

namespace heartwheel::net::detail {

double unit_random() noexcept;

} // namespace heartwheel::net::detail

#endif
