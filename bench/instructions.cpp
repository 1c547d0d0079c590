// instructions.cpp — one operation, one system, N live timers, run under callgrind: instructions per
// operation are counted, not timed, so the figure is the same on a busy machine and a quiet one.
//
//   valgrind --tool=callgrind --collect-atstart=no --callgrind-out-file=F instructions SYSTEM OP N K
//   instructions --build     (the compiler and flags it was built with)
//
// Collection is switched on only around the measured loop (the set-up of N timers is not counted),
// and the program prints how many operations that loop made; bench/run_instructions.sh divides the
// instructions callgrind collected by that. Operations are the micro-benchmark's (micro_timers.cpp):
// arm, cancel, rearm, touch and arm_tick (heartwheel only: the deadline already in ticks) and expire (all N armed already due; per fired timer),
// plus expire_cascade (heartwheel and the heap: deadlines over 1–30 s, then 31 s pass) and `loop`:
// the same loop as every other operation — read the next timer's number and value from two arrays,
// find that timer in the system's array (a server holds its connection's timer already) — calling
// nothing, so the harness's own cost can be subtracted, system by system. Timers are armed and visited in a
// random order (bench::arm_order).
#include "systems/asio_system.hpp"
#include "systems/heap_system.hpp"
#include "systems/libev_system.hpp"
#include "systems/libevent_system.hpp"
#include "systems/libuv_system.hpp"
#include "systems/wheel_system.hpp"

#include <valgrind/callgrind.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

/// The measured loop of every operation: index and value from precomputed arrays, then `op`.
template <class Op>
void drive(const std::vector<std::size_t>& idx, const std::vector<std::int64_t>& val, Op op) {
    const std::size_t k = idx.size();
    CALLGRIND_TOGGLE_COLLECT;
    for (std::size_t j = 0; j < k; ++j) op(idx[j], val[j]);
    CALLGRIND_TOGGLE_COLLECT;
}

template <class S>
std::size_t measure(const std::string& op, std::size_t n, std::size_t k) {
    S sys(n + k);
    const auto delays = bench::spread_delays(n + k);
    const auto order = bench::arm_order(n + k);
    if (op == "expire" || op == "expire_cascade") {
        std::size_t fired = 0;
        if (op == "expire") {
            for (std::size_t j = 0; j < n; ++j) sys.arm_expired(order[j], 0);
            CALLGRIND_TOGGLE_COLLECT;
            fired = sys.expire_all();
            CALLGRIND_TOGGLE_COLLECT;
        } else if constexpr (requires { sys.expire_far(); }) {
            for (std::size_t j = 0; j < n; ++j) sys.arm_far(order[j], delays[order[j]]);
            CALLGRIND_TOGGLE_COLLECT;
            fired = sys.expire_far();
            CALLGRIND_TOGGLE_COLLECT;
        }
        return fired == n ? n : 0;
    }
    for (std::size_t j = 0; j < n; ++j) sys.arm(order[j], delays[order[j]]);
    // The operation's k timers and values: new timers for arm and cancel, live ones for the rest.
    std::vector<std::size_t> idx(k);
    std::vector<std::int64_t> val(k);
    const bool fresh = op == "arm" || op == "arm_tick" || op == "cancel" || op == "loop";
    for (std::size_t j = 0; j < k; ++j) {
        idx[j] = fresh ? order[n + j] : order[j % n];
        val[j] = delays[idx[j]] + 1'000'000; // rearm: 1 ms later, as a read pushes an idle deadline
    }
    if (op == "loop") {
        drive(idx, val, [&](std::size_t i, std::int64_t v) {
            const void* timer = sys.address_of(i);
            asm volatile("" : : "r"(timer), "r"(v) : "memory");
        });
    } else if (op == "arm") {
        drive(idx, val, [&](std::size_t i, std::int64_t v) { sys.arm(i, v); });
    } else if (op == "cancel") {
        for (std::size_t j = 0; j < k; ++j) sys.arm(idx[j], val[j]);
        drive(idx, val, [&](std::size_t i, std::int64_t) { sys.cancel(i); });
    } else if (op == "rearm") {
        drive(idx, val, [&](std::size_t i, std::int64_t v) { sys.rearm(i, v); });
    } else if (op == "arm_tick" || op == "touch") { // heartwheel's tick paths: the values in ticks first
        if constexpr (requires { sys.arm_tick(0, 0); sys.touch_tick(0, 0); }) {
            for (std::size_t j = 0; j < k; ++j) val[j] = static_cast<std::int64_t>(sys.tick_of(val[j]));
            if (op == "arm_tick")
                drive(idx, val, [&](std::size_t i, std::int64_t v) { sys.arm_tick(i, static_cast<std::uint64_t>(v)); });
            else
                drive(idx, val, [&](std::size_t i, std::int64_t v) { sys.touch_tick(i, static_cast<std::uint64_t>(v)); });
        } else {
            return 0;
        }
    } else {
        return 0;
    }
    return k;
}

} // namespace

int main(int argc, char** argv) {
    // The compiler and flags this binary was built with: counts recorded by one build are compared
    // only with counts of the same build (bench/instructions.py check).
    if (argc == 2 && std::string(argv[1]) == "--build") {
        std::printf("%s\n", HEARTWHEEL_BENCH_BUILD);
        return 0;
    }
    if (argc != 5) {
        std::fprintf(stderr, "usage: %s heartwheel|asio|libevent|libevent-common|libev|libuv|heap "
                             "loop|arm|arm_tick|cancel|rearm|touch|expire|expire_cascade N K\n"
                             "       %s --build\n", argv[0], argv[0]);
        return 2;
    }
    const std::string sys = argv[1], op = argv[2];
    const std::size_t n = std::strtoull(argv[3], nullptr, 10), k = std::strtoull(argv[4], nullptr, 10);
    if (n == 0 || k == 0) {
        std::fprintf(stderr, "N and K must be positive\n");
        return 2;
    }
    std::size_t ops = 0;
    if (sys == "heartwheel") ops = measure<bench::wheel_system>(op, n, k);
    else if (sys == "asio") ops = measure<bench::asio_system>(op, n, k);
    else if (sys == "libevent") ops = measure<bench::libevent_system<false>>(op, n, k);
    else if (sys == "libevent-common") ops = measure<bench::libevent_system<true>>(op, n, k);
    else if (sys == "libev") ops = measure<bench::libev_system>(op, n, k);
    else if (sys == "libuv") ops = measure<bench::libuv_system>(op, n, k);
    else if (sys == "heap") ops = measure<bench::heap_system>(op, n, k);
    if (ops == 0) {
        std::fprintf(stderr, "%s: unknown system or operation, or not every timer fired\n", argv[0]);
        return 2;
    }
    std::printf("ops=%zu\n", ops);
    return 0;
}
