// instructions.cpp — one operation, one system, N live timers, run under callgrind: instructions per
// operation are counted, not timed, so the figure is the same on a busy machine and a quiet one.
//
//   valgrind --tool=callgrind --collect-atstart=no --callgrind-out-file=F instructions SYSTEM OP N K
//
// Collection is switched on only around the measured loop (the set-up of N timers is not counted),
// and the program prints how many operations that loop made; bench/run_instructions.sh divides the
// instructions callgrind collected by that. Operations are the micro-benchmark's (micro_timers.cpp):
// arm, cancel, rearm, touch (heartwheel only) and expire (all N due; per fired timer).
#include "systems/asio_system.hpp"
#include "systems/heap_system.hpp"
#include "systems/libevent_system.hpp"
#include "systems/libuv_system.hpp"
#include "systems/wheel_system.hpp"

#include <valgrind/callgrind.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

template <class S>
std::size_t measure(const std::string& op, std::size_t n, std::size_t k) {
    S sys(n + k);
    const auto delays = bench::spread_delays(n + k);
    if (op == "expire") {
        for (std::size_t i = 0; i < n; ++i) sys.arm_expired(i, delays[i]);
        CALLGRIND_TOGGLE_COLLECT;
        const std::size_t fired = sys.expire_all();
        CALLGRIND_TOGGLE_COLLECT;
        return fired == n ? n : 0;
    }
    for (std::size_t i = 0; i < n; ++i) sys.arm(i, delays[i]);
    if (op == "arm") {
        CALLGRIND_TOGGLE_COLLECT;
        for (std::size_t j = 0; j < k; ++j) sys.arm(n + j, delays[n + j]);
        CALLGRIND_TOGGLE_COLLECT;
    } else if (op == "cancel") {
        for (std::size_t j = 0; j < k; ++j) sys.arm(n + j, delays[n + j]);
        CALLGRIND_TOGGLE_COLLECT;
        for (std::size_t j = 0; j < k; ++j) sys.cancel(n + j);
        CALLGRIND_TOGGLE_COLLECT;
    } else if (op == "rearm") { // each timer pushed 1 ms later per round, as reads do
        std::size_t i = 0;
        std::int64_t later = 1'000'000;
        CALLGRIND_TOGGLE_COLLECT;
        for (std::size_t j = 0; j < k; ++j) {
            sys.rearm(i, delays[i] + later);
            if (++i == n) i = 0, later += 1'000'000;
        }
        CALLGRIND_TOGGLE_COLLECT;
    } else if (op == "touch") {
        if constexpr (requires { sys.touch_tick(0, 0); }) {
            std::vector<std::uint64_t> ticks(n);
            for (std::size_t i = 0; i < n; ++i) ticks[i] = sys.tick_of(delays[i]);
            std::size_t i = 0;
            CALLGRIND_TOGGLE_COLLECT;
            for (std::size_t j = 0; j < k; ++j) {
                sys.touch_tick(i, ++ticks[i]);
                if (++i == n) i = 0;
            }
            CALLGRIND_TOGGLE_COLLECT;
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
    if (argc != 5) {
        std::fprintf(stderr, "usage: %s heartwheel|asio|libevent|libevent-common|libuv|heap "
                             "arm|cancel|rearm|touch|expire N K\n", argv[0]);
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
    else if (sys == "libuv") ops = measure<bench::libuv_system>(op, n, k);
    else if (sys == "heap") ops = measure<bench::heap_system>(op, n, k);
    if (ops == 0) {
        std::fprintf(stderr, "%s: unknown system or operation, or not every timer fired\n", argv[0]);
        return 2;
    }
    std::printf("ops=%zu\n", ops);
    return 0;
}
