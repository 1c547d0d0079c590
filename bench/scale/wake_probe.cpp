// wake_probe.cpp — how late this machine wakes an ordinary sleeping thread, measured beside the scale
// benchmark's death phase (bench/scale/scale_bench.py), so that the servers' lateness can be read
// against the machine's own. The method is cyclictest's: sleep to absolute deadlines one period
// apart (clock_nanosleep, TIMER_ABSTIME, CLOCK_MONOTONIC, the default scheduling class and priority,
// like the servers) and record how long after each deadline the thread ran. A wake-up more than a
// period late skips the deadlines it missed instead of firing them in a burst.
//
//   wake_probe [PERIOD_US=1000] [TICK_MS=10]   SIGUSR1 starts the count afresh (the probe can be started early at
//   the servers' priority and read over a later phase); SIGTERM or SIGINT ends it with one JSON object:
//   {"wakeups":N,"late_1ms":..,"late_2ms":..,"late_5ms":..,"late_tick":..,"late_tick_2ms":..,
//    "mean_us":..,"max_us":..,"late_events":[[T,MS],..]}  (late_X: wake-ups more than X after their
//   deadline; late_events: the first 4,096 wake-ups more than 2 ms late, each as its deadline T in
//   seconds of CLOCK_MONOTONIC (Python's time.monotonic()) and its lateness in ms, so that the
//   harness can line them up with its own time series)
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>

namespace {

volatile std::sig_atomic_t stop = 0, restart = 0;
void on_signal(int) { stop = 1; }
void on_restart(int) { restart = 1; }

std::int64_t to_ns(const timespec& t) { return std::int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec; }
timespec from_ns(std::int64_t ns) {
    return {static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
}
std::int64_t now_ns() {
    timespec t{};
    clock_gettime(CLOCK_MONOTONIC, &t);
    return to_ns(t);
}

} // namespace

int main(int argc, char** argv) {
    const long period_us = argc > 1 ? std::strtol(argv[1], nullptr, 10) : 1000;
    const long tick_ms = argc > 2 ? std::strtol(argv[2], nullptr, 10) : 10;
    if (period_us < 100 || period_us > 1'000'000 || tick_ms < 1 || tick_ms > 60'000) {
        std::fprintf(stderr, "wake_probe: PERIOD_US must be in [100, 1000000] and TICK_MS in [1, 60000]\n");
        return 2;
    }
    struct sigaction sa{};
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, nullptr);
    sigaction(SIGINT, &sa, nullptr);
    struct sigaction sr{};
    sr.sa_handler = on_restart;
    sigaction(SIGUSR1, &sr, nullptr);
    const std::int64_t period = period_us * 1000;
    constexpr std::int64_t ms = 1'000'000;
    const std::int64_t bounds[] = {1 * ms, 2 * ms, 5 * ms, tick_ms * ms, (tick_ms + 2) * ms};
    std::uint64_t late[5] = {}, wakeups = 0;
    std::int64_t sum = 0, worst = 0;
    struct event { std::int64_t deadline, lateness; };
    constexpr std::size_t max_events = 4096;
    std::vector<event> events;
    events.reserve(max_events); // allocated before the count starts: the loop never allocates
    std::int64_t deadline = now_ns() + period;
    while (!stop) {
        const timespec at = from_ns(deadline);
        if (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, nullptr) != 0) continue; // a signal: re-check
        const std::int64_t now = now_ns();
        const std::int64_t lateness = now - deadline;
        if (restart) {
            restart = 0;
            wakeups = 0;
            sum = worst = 0;
            for (auto& n : late) n = 0;
            events.clear();
        }
        ++wakeups;
        sum += lateness;
        if (lateness > worst) worst = lateness;
        for (int i = 0; i < 5; ++i)
            if (lateness > bounds[i]) ++late[i];
        if (lateness > bounds[1] && events.size() < max_events) events.push_back({deadline, lateness});
        deadline += period;
        if (deadline <= now) deadline = now + period - (now - deadline) % period; // skip what was missed
    }
    std::printf("{\"wakeups\":%llu,\"late_1ms\":%llu,\"late_2ms\":%llu,\"late_5ms\":%llu,\"late_tick\":%llu,"
                "\"late_tick_2ms\":%llu,\"mean_us\":%.1f,\"max_us\":%.1f,\"late_events\":[",
                static_cast<unsigned long long>(wakeups), static_cast<unsigned long long>(late[0]),
                static_cast<unsigned long long>(late[1]), static_cast<unsigned long long>(late[2]),
                static_cast<unsigned long long>(late[3]), static_cast<unsigned long long>(late[4]),
                wakeups ? static_cast<double>(sum) / static_cast<double>(wakeups) / 1e3 : 0.0,
                static_cast<double>(worst) / 1e3);
    for (std::size_t i = 0; i < events.size(); ++i)
        std::printf("%s[%.4f,%.2f]", i ? "," : "", static_cast<double>(events[i].deadline) / 1e9,
                    static_cast<double>(events[i].lateness) / 1e6);
    std::printf("]}\n");
    return 0;
}
