// heartwheel/net/detail/arrival_stamp.hpp — when a read's bytes reached the host: the kernel's receive
// stamp (SO_TIMESTAMPNS), on the wheel's steady clock.
//
// Idea: a peer's silence counts from when its last bytes arrived, not from when a busy loop got round
// to reading them. Under a burst (a round of pings answered at once) the answers wait in their
// sockets while the loop works through the others, and a heartbeat counting from the read would
// judge each peer that much later than its silence warrants. Linux stamps every received segment
// with the wall clock when a socket asks (SO_TIMESTAMPNS), and recvmsg hands over the stamp of the
// last segment it read from (TCP carries the newest stamp onto segments it coalesces), so the stamp
// is when the newest byte of the read arrived — never before the peer sent it.
//
// The wall clock (CLOCK_REALTIME) and the steady one (CLOCK_MONOTONIC) run at the same rate — NTP's
// slewing adjusts both — so they differ by an offset that changes only when the wall clock is
// stepped (settimeofday, a leap second). A stamp is converted with the offset read at the read (the
// wall clock first: the conversion errs late by the gap between the two readings, never early).
// A step between a segment's arrival and its read would convert it wrongly — late for a step back,
// EARLY for a step forward — so each thread keeps the offset of its previous conversion: when the
// offset moved, it trusts only stamps converting to after that moment (a segment stamped before a
// forward step converts to before its own arrival, hence before the moment the move was seen).
// What is not trusted reports no stamp, and the reader falls back to its batch's clock.
// Invariant: arrival_from_wall returns no_arrival or a time t with
// real arrival <= t <= mono_now, whatever steps the wall clock took meanwhile.
#ifndef HEARTWHEEL_NET_DETAIL_ARRIVAL_STAMP_HPP
#define HEARTWHEEL_NET_DETAIL_ARRIVAL_STAMP_HPP

#include <heartwheel/clock.hpp>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#ifdef __linux__
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#endif

namespace heartwheel::net {

/// A read whose arrival time is unknown (a stream without the kernel's stamps).
inline constexpr time_point no_arrival = time_point::min();

namespace detail {

/// A thread's memory of the clocks' offset (see the top of this file).
struct wall_offset_guard {
    std::int64_t offset_ns = 0;    ///< wall - steady at the previous conversion
    time_point trust_from = time_point::max(); ///< stamps converting to before this are not trusted
    bool seen = false;
};

/// How far the offset may seem to move between two conversions without a step: the two clocks are
/// read one after the other, and a preemption between them looks like a step (a false alarm only
/// costs the stamps of the moment).
inline constexpr std::int64_t wall_offset_tolerance_ns = 20'000;

/// The stamp `wall_ns` (wall clock, ns since the epoch) on the steady clock, read at wall `wall_now_ns`
/// then steady `mono_now`; no_arrival when a step of the wall clock could make it early.
inline time_point arrival_from_wall(std::int64_t wall_ns, std::int64_t wall_now_ns, time_point mono_now,
                                    wall_offset_guard& g) noexcept {
    const std::int64_t offset = wall_now_ns - std::chrono::duration_cast<std::chrono::nanoseconds>(mono_now.time_since_epoch()).count();
    if (!g.seen || std::llabs(offset - g.offset_ns) > wall_offset_tolerance_ns) {
        g.seen = true;
        g.trust_from = mono_now; // what arrived before now may have been stamped before the step
    }
    g.offset_ns = offset;
    const time_point t{std::chrono::duration_cast<duration>(std::chrono::nanoseconds(wall_ns - offset))};
    if (t < g.trust_from) return no_arrival;
    return t < mono_now ? t : mono_now;
}

#ifdef __linux__
inline std::int64_t ns_of(const timespec& t) noexcept { return std::int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec; }

/// The calling thread's guard.
inline wall_offset_guard& thread_wall_offset_guard() noexcept {
    thread_local wall_offset_guard guard;
    return guard;
}

/// Starts the calling thread's guard, if it has not started, from now: a socket asks for stamps on
/// the thread that will read it, and its first read's stamp is then trusted (what arrived before
/// this moment is not: no offset was seen before it).
inline void prime_wall_offset_guard() noexcept {
    wall_offset_guard& g = thread_wall_offset_guard();
    if (g.seen) return;
    timespec wall{}, mono{};
    ::clock_gettime(CLOCK_REALTIME, &wall);
    ::clock_gettime(CLOCK_MONOTONIC, &mono);
    g.seen = true;
    g.offset_ns = ns_of(wall) - ns_of(mono);
    g.trust_from = time_point{std::chrono::duration_cast<duration>(std::chrono::nanoseconds(ns_of(mono)))};
}

/// Control space for one SCM_TIMESTAMPNS message.
inline constexpr std::size_t arrival_control_size = CMSG_SPACE(sizeof(timespec));

/// The arrival of what a recvmsg returned (its SCM_TIMESTAMPNS), on the steady clock; no_arrival
/// without one, or when the thread's guard does not trust it.
inline time_point arrival_of(msghdr& msg) noexcept {
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_TIMESTAMPNS) continue;
        timespec ts{}, wall{}, mono{};
        std::memcpy(&ts, CMSG_DATA(c), sizeof ts);
        ::clock_gettime(CLOCK_REALTIME, &wall); // first: see the top of this file
        ::clock_gettime(CLOCK_MONOTONIC, &mono);
        static_assert(std::is_same_v<clock, std::chrono::steady_clock>, "steady_clock is CLOCK_MONOTONIC");
        return arrival_from_wall(ns_of(ts), ns_of(wall),
                                 time_point{std::chrono::duration_cast<duration>(std::chrono::nanoseconds(ns_of(mono)))},
                                 thread_wall_offset_guard());
    }
    return no_arrival;
}

/// One recv of `fd` that brings the stamp of the newest byte it read along (a recvmsg with room for
/// it): returns as recv does; `arrived` is set only when a stamp came and is trusted.
inline ssize_t recv_stamped(int fd, void* into, std::size_t size, time_point& arrived) noexcept {
    iovec iov{into, size};
    alignas(cmsghdr) char control[arrival_control_size];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    const ssize_t r = ::recvmsg(fd, &msg, 0);
    if (r > 0)
        if (const time_point a = arrival_of(msg); a != no_arrival) arrived = a;
    return r;
}
#endif

} // namespace detail
} // namespace heartwheel::net

#endif
