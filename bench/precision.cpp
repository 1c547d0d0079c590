// precision.cpp — how late timers fire on a real io_context: 100,000 timers with deadlines spread
// over 0.5–3 s, for heartwheel's asio_wheel at a 1 ms and a 10 ms tick and for one asio::steady_timer
// per timer. Each callback reads steady_clock and records now - deadline. Reports lateness p50 / p99
// / max, how many fired early (must be 0), CPU seconds of the run, for the wheel how many times its
// driver woke up and re-armed its steady_timer per second, and the time this process waited for a
// CPU while runnable (run-queue wait, /proc/self/schedstat): on a shared machine that wait, not the
// timer structure, is most of a bad p99. The systems run interleaved (each round in a rotated
// order), `rounds` times; the JSON gives every round and the median of each figure.
//   build/bench/precision [timers] [rounds]
#include <heartwheel/asio_wheel.hpp>

#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace {

using clk = std::chrono::steady_clock;

struct result {
    std::string system;
    std::vector<std::int64_t> late_ns;
    double seconds = 0, cpu_seconds = 0, runq_wait_ms = 0;
    std::uint64_t wakeups = 0, rearms = 0;
};

/// Nanoseconds this process has spent runnable but waiting for a CPU (schedstat's second field).
double runq_wait_ms() {
    std::FILE* f = std::fopen("/proc/self/schedstat", "r");
    if (f == nullptr) return 0;
    unsigned long long run = 0, wait = 0;
    const int got = std::fscanf(f, "%llu %llu", &run, &wait);
    std::fclose(f);
    return got == 2 ? static_cast<double>(wait) / 1e6 : 0;
}

double cpu_now() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

std::vector<clk::duration> spread(std::size_t n) {
    std::mt19937_64 rng(11);
    std::uniform_int_distribution<std::int64_t> d(500'000'000, 3'000'000'000);
    std::vector<clk::duration> out(n);
    for (auto& x : out) x = std::chrono::nanoseconds(d(rng));
    return out;
}

struct lateness_timer final : heartwheel::timer_node {
    clk::time_point deadline;
    std::vector<std::int64_t>* out = nullptr;
    void on_expire() override { out->push_back((clk::now() - deadline).count()); }
};

result run_wheel(std::size_t n, std::chrono::milliseconds tick) {
    result r{"heartwheel tick " + std::to_string(tick.count()) + " ms", {}, 0, 0, 0, 0, 0};
    r.late_ns.reserve(n);
    asio::io_context io(1);
    heartwheel::wheel_config cfg;
    cfg.tick = tick;
    heartwheel::asio_wheel wheel(io.get_executor(), cfg);
    std::vector<lateness_timer> timers(n);
    const auto delays = spread(n);
    const double cpu0 = cpu_now(), wait0 = runq_wait_ms();
    const auto start = clk::now();
    for (std::size_t i = 0; i < n; ++i) {
        timers[i].deadline = start + delays[i];
        timers[i].out = &r.late_ns;
        wheel.schedule_at(timers[i], timers[i].deadline);
    }
    io.run();
    r.seconds = std::chrono::duration<double>(clk::now() - start).count();
    r.cpu_seconds = cpu_now() - cpu0;
    r.runq_wait_ms = runq_wait_ms() - wait0;
    r.wakeups = wheel.stats().wakeups;
    r.rearms = wheel.stats().rearms;
    return r;
}

result run_asio(std::size_t n) {
    result r{"asio::steady_timer", {}, 0, 0, 0, 0, 0};
    r.late_ns.reserve(n);
    asio::io_context io(1);
    std::vector<std::unique_ptr<asio::steady_timer>> timers;
    timers.reserve(n);
    const auto delays = spread(n);
    const double cpu0 = cpu_now(), wait0 = runq_wait_ms();
    const auto start = clk::now();
    for (std::size_t i = 0; i < n; ++i) {
        const auto deadline = start + delays[i];
        timers.push_back(std::make_unique<asio::steady_timer>(io, deadline));
        timers.back()->async_wait([&r, deadline](std::error_code) { r.late_ns.push_back((clk::now() - deadline).count()); });
    }
    io.run();
    r.seconds = std::chrono::duration<double>(clk::now() - start).count();
    r.cpu_seconds = cpu_now() - cpu0;
    r.runq_wait_ms = runq_wait_ms() - wait0;
    return r;
}

struct summary {
    double p50, p99, max, seconds, cpu, wait, wakeups, rearms;
    std::size_t fired, early;
};

summary summarize(result& r) {
    auto& v = r.late_ns;
    std::sort(v.begin(), v.end());
    const auto at = [&](double q) { return static_cast<double>(v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))]) / 1e6; };
    const auto early = static_cast<std::size_t>(std::count_if(v.begin(), v.end(), [](std::int64_t x) { return x < 0; }));
    return {at(0.5), at(0.99), at(1.0), r.seconds, r.cpu_seconds, r.runq_wait_ms,
            static_cast<double>(r.wakeups) / r.seconds, static_cast<double>(r.rearms) / r.seconds, v.size(), early};
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

void print(const std::string& system, const std::vector<summary>& rounds, std::size_t n, bool last) {
    auto med = [&](double summary::*f) {
        std::vector<double> v;
        for (const auto& s : rounds) v.push_back(s.*f);
        return median(v);
    };
    std::size_t fired = 0, early = 0;
    for (const auto& s : rounds) fired += s.fired, early += s.early;
    std::printf("  {\"system\": \"%s\", \"timers\": %zu, \"rounds\": %zu, \"fired\": %zu, \"early\": %zu, "
                "\"late_ms\": {\"p50\": %.3f, \"p99\": %.3f, \"max\": %.3f}, \"seconds\": %.3f, \"cpu_seconds\": %.3f, "
                "\"runq_wait_ms\": %.1f, \"wakeups_per_s\": %.1f, \"rearms_per_s\": %.1f, \"p99_by_round\": [",
                system.c_str(), n, rounds.size(), fired, early, med(&summary::p50), med(&summary::p99), med(&summary::max),
                med(&summary::seconds), med(&summary::cpu), med(&summary::wait), med(&summary::wakeups), med(&summary::rearms));
    for (std::size_t i = 0; i < rounds.size(); ++i)
        std::printf("%s{\"p99\": %.3f, \"runq_wait_ms\": %.1f}", i ? ", " : "", rounds[i].p99, rounds[i].wait);
    std::printf("]}%s\n", last ? "" : ",");
}

} // namespace

int main(int argc, char** argv) {
    const std::size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 100'000;
    const std::size_t rounds = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 3;
    if (n == 0 || rounds == 0) {
        std::fprintf(stderr, "usage: %s [timers > 0] [rounds > 0]\n", argv[0]);
        return 2;
    }
    const std::vector<std::string> names = {"heartwheel tick 1 ms", "heartwheel tick 10 ms", "asio::steady_timer"};
    std::vector<std::vector<summary>> by_system(names.size());
    bool all_fired = true;
    for (std::size_t round = 0; round < rounds; ++round) {
        for (std::size_t k = 0; k < names.size(); ++k) {
            const std::size_t which = (k + round) % names.size(); // rotated: no system always runs first
            result r = which == 0 ? run_wheel(n, std::chrono::milliseconds(1))
                     : which == 1 ? run_wheel(n, std::chrono::milliseconds(10))
                                  : run_asio(n);
            all_fired = all_fired && r.late_ns.size() == n;
            by_system[which].push_back(summarize(r));
        }
    }
    std::printf("[\n");
    for (std::size_t i = 0; i < names.size(); ++i) print(names[i], by_system[i], n, i + 1 == names.size());
    std::printf("]\n");
    return all_fired ? 0 : 1;
}
