// threading_designs — the three ways to share timing wheels with one io_context run by N threads,
// measured doing the same logical work (docs/design.md, "Threading", says which was chosen and why):
//
//   shards  heartwheel's design: N asio_wheels, each on its own strand; a connection lives on one
//           shard's strand, so its timers are touched only there, with no lock.
//   mutex   one wheel (the same timing_wheel core and one steady_timer) behind a std::mutex: any
//           thread schedules under the lock; expiries run under the lock on the timer's thread
//           and are posted to the connection's strand (user code never runs under the lock).
//   mpsc    Netty HashedWheelTimer's design: schedules are pushed to a multi-producer queue (a
//           mutex-guarded vector swapped out whole: the cheapest queue the standard library has;
//           Netty's is lock-free), which a ticker on its own strand drains every tick (1 ms) into
//           one wheel it alone touches; expiries are posted to the connection's strand.
//
// Every design runs the same connections (C of them, on N shard strands: the same delivery for all)
// and the same events, in two phases:
//   re-arm  each connection re-arms a timer E times (deadline 4–6 s, random per event, so timers are
//           filed in an order unrelated to memory order), the next event posted to its strand — the
//           per-read / per-request cost;
//   expiry  each connection waits for E timers of 1–20 ms (random) to fire, the next armed from the
//           previous one's callback on the connection's strand — the cost of a timer that fires.
// CPU (user + system of the process) per event, minus the harness's own: the same run with no timer
// work (re-arm: the posts alone; expiry: one steady_timer per connection, Asio's own, is not a
// baseline to subtract — its figure is printed beside the others as the per-socket reference).
// Wake-ups while idle: mpsc ticks 1,000 times a second whether or not anything is due; the others
// sleep. Output: a Markdown table; --json writes the figures. Exit 2 on a bad flag, 1 if any design
// lost or duplicated an event (the smoke test relies on it).
//   threading_designs [--threads N] [--connections C] [--events E] [--rounds R] [--json FILE]
#include <heartwheel/asio.hpp>
#include <heartwheel/asio_wheel.hpp>
#include <heartwheel/timing_wheel.hpp>

#include <asio/io_context.hpp>
#include <asio/strand.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

using clock_type = heartwheel::clock;
using namespace std::chrono_literals;
using strand = asio::strand<asio::io_context::executor_type>;

double cpu_seconds() {
    rusage u{};
    ::getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

enum class phase { rearm, expiry };
enum class design { none, shards, mutex, mpsc, asio_timer };
const char* name(design d) {
    switch (d) {
    case design::none: return "harness only";
    case design::shards: return "strand shards (heartwheel)";
    case design::mutex: return "one wheel behind a mutex";
    case design::mpsc: return "MPSC queue drained per tick (Netty)";
    case design::asio_timer: return "a steady_timer per connection (Asio)";
    }
    return "?";
}

struct config {
    int threads = 2;
    int connections = 10000;
    int events = 50;
    int rounds = 3;
    std::string json;
};

// The per-connection random durations, fixed up front so every design sees the same sequence.
std::vector<std::chrono::microseconds> delays(const config& cfg, phase p) {
    std::mt19937_64 rng(42);
    std::uniform_int_distribution<int> rearm_us(4'000'000, 6'000'000), expiry_us(1'000, 20'000);
    std::vector<std::chrono::microseconds> d(static_cast<std::size_t>(cfg.connections) * static_cast<std::size_t>(cfg.events));
    for (auto& x : d) x = std::chrono::microseconds(p == phase::rearm ? rearm_us(rng) : expiry_us(rng));
    return d;
}

class bench_run;

/// One connection: its timer, its strand, its event count.
struct conn final : heartwheel::timer_node {
    bench_run* run = nullptr;
    std::size_t index = 0;
    strand* home = nullptr;
    int done = 0;
    std::unique_ptr<asio::steady_timer> own; // design::asio_timer
    void on_expire() override;
};

class bench_run {
public:
    bench_run(const config& cfg, design d, phase p, const std::vector<std::chrono::microseconds>& delays)
        : cfg_(cfg), d_(d), p_(p), delays_(delays), conns_(static_cast<std::size_t>(cfg.connections)) {
        for (int s = 0; s < cfg.threads; ++s) strands_.emplace_back(asio::make_strand(io_));
        if (d == design::shards)
            for (auto& s : strands_) shard_wheels_.push_back(std::make_unique<heartwheel::asio_wheel>(s));
        for (std::size_t i = 0; i < conns_.size(); ++i) {
            conns_[i].run = this;
            conns_[i].index = i;
            conns_[i].home = &strands_[i % strands_.size()];
            if (d == design::asio_timer) conns_[i].own = std::make_unique<asio::steady_timer>(*conns_[i].home);
        }
    }

    /// Runs the phase to the end; returns {cpu seconds, wall seconds}.
    std::pair<double, double> go() {
        if (d_ == design::mpsc) start_ticker();
        if (d_ == design::mutex) armed_ = clock_type::time_point::max();
        auto work = asio::make_work_guard(io_);
        for (auto& c : conns_) asio::post(*c.home, [this, &c] { event(c); });
        const double cpu0 = cpu_seconds();
        const auto t0 = std::chrono::steady_clock::now();
        std::vector<std::thread> pool;
        for (int t = 1; t < cfg_.threads; ++t) pool.emplace_back([this] { io_.run(); });
        std::thread watcher([this, &work] {
            while (finished_.load() < conns_.size()) std::this_thread::sleep_for(1ms);
            work.reset();
            stop_ = true; // the mpsc ticker and the mutex wheel's timer stop re-arming
            asio::post(io_, [this] { cancel_timers(); });
        });
        io_.run();
        watcher.join();
        for (auto& t : pool) t.join();
        const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        return {cpu_seconds() - cpu0, wall};
    }

    /// Whether every connection did exactly its events and every timer fired once per expiry event.
    bool exact() const {
        const auto want = static_cast<std::size_t>(cfg_.events);
        for (const auto& c : conns_)
            if (static_cast<std::size_t>(c.done) != want) return false;
        return p_ == phase::rearm || fired_.load() == conns_.size() * want;
    }

    /// A connection's event, on its strand: count it, then arm its next timer (or finish).
    void event(conn& c) {
        if (c.done == cfg_.events) {
            // Re-arm phase: the timer is still pending; leave it to the end-of-run cancel.
            finished_.fetch_add(1);
            return;
        }
        const auto delay = delays_[c.index * static_cast<std::size_t>(cfg_.events) + static_cast<std::size_t>(c.done)];
        ++c.done;
        arm(c, delay);
        if (p_ == phase::rearm) asio::post(*c.home, [this, &c] { event(c); });
    }

    /// The timer fired (on whatever thread its design fires it): deliver the event on the connection's strand.
    void fired(conn& c, bool on_home) {
        fired_.fetch_add(1, std::memory_order_relaxed);
        if (p_ != phase::expiry) return;
        if (on_home) event(c);
        else asio::post(*c.home, [this, &c] { event(c); });
    }

private:
    friend struct conn;

    void arm(conn& c, std::chrono::microseconds delay) {
        switch (d_) {
        case design::none:
            if (p_ == phase::expiry) fired(c, true); // no timer: the next event at once
            break;
        case design::shards: shard_wheels_[c.index % strands_.size()]->schedule_after(c, delay); break;
        case design::mutex: {
            std::lock_guard lock(mu_);
            if (!wheel_) wheel_ = std::make_unique<heartwheel::timing_wheel>(clock_type::now());
            wheel_->schedule(c, clock_type::now() + delay);
            rearm_mutex_timer();
            break;
        }
        case design::mpsc: {
            const auto deadline = clock_type::now() + delay;
            std::lock_guard lock(mu_);
            queue_.push_back({&c, deadline});
            break;
        }
        case design::asio_timer:
            c.own->expires_after(delay);
            c.own->async_wait([this, &c](const asio::error_code& ec) {
                if (!ec) fired(c, true);
            });
            break;
        }
    }

    // --- the mutex design: the one timer is re-armed (under the lock) when an earlier deadline came.
    void rearm_mutex_timer() {
        const auto next = wheel_->next_wakeup();
        if (!next || *next >= armed_) return;
        armed_ = *next;
        mutex_timer_.expires_at(*next);
        mutex_timer_.async_wait([this](const asio::error_code& ec) {
            if (ec || stop_) return;
            std::vector<conn*> due;
            {
                std::lock_guard lock(mu_);
                armed_ = clock_type::time_point::max();
                due_ = &due;
                wheel_->advance(clock_type::now());
                due_ = nullptr;
                rearm_mutex_timer();
            }
            for (conn* c : due) fired(*c, false);
        });
    }

    // --- the mpsc design: a ticker on its own strand, every tick.
    void start_ticker() {
        wheel_ = std::make_unique<heartwheel::timing_wheel>(clock_type::now());
        ticker_.expires_after(1ms);
        ticker_.async_wait([this](const asio::error_code& ec) { tick(ec); });
    }
    void tick(const asio::error_code& ec) {
        if (ec || stop_) return;
        {
            std::lock_guard lock(mu_);
            draining_.swap(queue_);
        }
        for (auto& [c, deadline] : draining_) wheel_->schedule(*c, deadline);
        draining_.clear();
        std::vector<conn*> due;
        due_ = &due;
        wheel_->advance(clock_type::now());
        due_ = nullptr;
        for (conn* c : due) fired(*c, false);
        ticker_.expires_at(ticker_.expiry() + 1ms);
        ticker_.async_wait([this](const asio::error_code& e) { tick(e); });
    }

    // At the end, on each timer's own executor: nothing may keep io_context::run() from returning.
    void cancel_timers() {
        {
            std::lock_guard lock(mu_);
            mutex_timer_.cancel();
        }
        asio::post(ticker_strand_, [this] { ticker_.cancel(); });
        for (std::size_t s = 0; s < shard_wheels_.size(); ++s)
            asio::post(strands_[s], [w = shard_wheels_[s].get()] { w->shutdown(); });
        for (auto& c : conns_)
            if (c.own) asio::post(*c.home, [&c] { c.own->cancel(); });
    }

    const config& cfg_;
    design d_;
    phase p_;
    const std::vector<std::chrono::microseconds>& delays_;
    asio::io_context io_{cfg_.threads};
    std::vector<strand> strands_;
    std::vector<std::unique_ptr<heartwheel::asio_wheel>> shard_wheels_;
    std::vector<conn> conns_;
    std::atomic<std::size_t> finished_{0}, fired_{0};
    std::atomic<bool> stop_{false};
    // mutex and mpsc: the one wheel.
    std::mutex mu_;
    std::unique_ptr<heartwheel::timing_wheel> wheel_;
    std::vector<conn*>* due_ = nullptr; // where expiries are collected while the wheel advances
    asio::steady_timer mutex_timer_{io_};
    clock_type::time_point armed_ = clock_type::time_point::max();
    strand ticker_strand_{asio::make_strand(io_)};
    asio::steady_timer ticker_{ticker_strand_};
    std::vector<std::pair<conn*, clock_type::time_point>> queue_, draining_;
};

void conn::on_expire() {
    // shards: on the wheel's strand, which is this connection's strand; mutex/mpsc: collected and
    // delivered after the wheel's lock (or the ticker's drain) is left.
    if (run->d_ == design::shards) run->fired(*this, true);
    else run->due_->push_back(this);
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
}

int parse_int(const char* flag, const char* text, int lo, int hi) {
    char* end = nullptr;
    const long v = std::strtol(text, &end, 10);
    if (end == text || *end != '\0' || v < lo || v > hi) {
        std::fprintf(stderr, "threading_designs: %s %s is not valid: accepted an integer in [%d, %d]\n", flag, text, lo, hi);
        std::exit(2);
    }
    return static_cast<int>(v);
}

} // namespace

int main(int argc, char** argv) {
    config cfg;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (i + 1 >= argc) {
            std::fprintf(stderr, "threading_designs: %s needs a value (flags: --threads --connections --events --rounds --json)\n", a.c_str());
            return 2;
        }
        const char* v = argv[++i];
        if (a == "--threads") cfg.threads = parse_int("--threads", v, 1, 64);
        else if (a == "--connections") cfg.connections = parse_int("--connections", v, 1, 1'000'000);
        else if (a == "--events") cfg.events = parse_int("--events", v, 1, 10'000);
        else if (a == "--rounds") cfg.rounds = parse_int("--rounds", v, 1, 100);
        else if (a == "--json") cfg.json = v;
        else {
            std::fprintf(stderr, "threading_designs: unknown flag %s (flags: --threads --connections --events --rounds --json)\n", a.c_str());
            return 2;
        }
    }
    const design designs[] = {design::none, design::shards, design::mutex, design::mpsc, design::asio_timer};
    bool ok = true;
    std::string json = "{\"threads\": " + std::to_string(cfg.threads) + ", \"connections\": " + std::to_string(cfg.connections) +
                       ", \"events\": " + std::to_string(cfg.events) + ", \"phases\": {";
    std::printf("%d threads, %d connections, %d events each, median of %d rounds (designs alternated)\n\n", cfg.threads,
                cfg.connections, cfg.events, cfg.rounds);
    for (phase p : {phase::rearm, phase::expiry}) {
        const auto d = delays(cfg, p);
        const double events = static_cast<double>(cfg.connections) * cfg.events;
        std::vector<std::vector<double>> cpu(std::size(designs)), wall(std::size(designs));
        for (int r = 0; r < cfg.rounds; ++r) {
            for (std::size_t k = 0; k < std::size(designs); ++k) {
                const std::size_t j = (k + static_cast<std::size_t>(r)) % std::size(designs); // alternate the order
                if (p == phase::rearm && designs[j] == design::asio_timer) continue; // its re-arm is a cancel + post per event
                bench_run run(cfg, designs[j], p, d);
                const auto [c, w] = run.go();
                if (!run.exact()) {
                    std::fprintf(stderr, "threading_designs: %s lost or repeated events\n", name(designs[j]));
                    ok = false;
                }
                cpu[j].push_back(c / events * 1e9);
                wall[j].push_back(w / events * 1e9);
            }
        }
        const double harness = median(cpu[0]);
        std::printf("%s phase — ns of CPU per event, the harness's own (%.0f ns) subtracted\n\n",
                    p == phase::rearm ? "re-arm" : "expiry", harness);
        std::printf("| design | CPU ns / event | x strand shards | wall ns / event |\n| --- | ---: | ---: | ---: |\n");
        const double shards = median(cpu[1]) - harness;
        json += std::string(p == phase::rearm ? "" : ", ") + "\"" + (p == phase::rearm ? "rearm" : "expiry") +
                "\": {\"harness_ns\": " + std::to_string(harness);
        for (std::size_t j = 1; j < std::size(designs); ++j) {
            if (cpu[j].empty()) continue;
            const double net = median(cpu[j]) - harness;
            std::printf("| %s | %.0f | %.2f | %.0f |\n", name(designs[j]), net, shards > 0 ? net / shards : 0.0, median(wall[j]));
            json += ", \"" + std::string(name(designs[j])) + "\": " + std::to_string(net);
        }
        json += "}";
        std::printf("\n");
    }
    std::printf("Wake-ups per second with nothing due: strand shards 0, mutex 0, MPSC ticker 1000 (one per tick).\n");
    json += "}}\n";
    if (!cfg.json.empty()) std::ofstream(cfg.json) << json;
    return ok ? 0 : 1;
}
