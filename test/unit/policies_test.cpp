// policies_test.cpp — backoff sequences and jitter bounds, reconnect state machine, connection limits,
// request timeouts, TOML loading and validation errors; all on a manual clock.
#define BOOST_TEST_MODULE policies
#include <boost/test/unit_test.hpp>

#include <heartwheel/error.hpp>
#include <heartwheel/net/policies/backoff.hpp>
#include <heartwheel/net/policies/connection_limits.hpp>
#include <heartwheel/net/policies/connection_liveness.hpp>
#include <heartwheel/net/detail/liveness_settings.hpp>
#include <heartwheel/net/config/liveness_config.hpp>
#include <heartwheel/net/config/liveness_toml.hpp>
#include <heartwheel/net/connection/output_bound.hpp>
#include <heartwheel/net/policies/reconnector.hpp>
#include <heartwheel/net/policies/request_tracker.hpp>
#include <heartwheel/net/connection/write_queue.hpp>

#include "liveness_recorder.hpp"
#include "manual_service.hpp"

#include <asio/io_context.hpp>

#include <cstdio>
#include <fstream>
#include <random>

using namespace hwtest;
using namespace heartwheel::net;
using std::chrono::milliseconds;

BOOST_AUTO_TEST_CASE(grpc_backoff_sequence_and_cap) {
    backoff_policy p; // gRPC defaults: 1 s, x1.6, ±20 %, 120 s cap
    backoff b(p, [] { return 0.5; }); // mid-point: no jitter
    std::vector<long long> got;
    for (int i = 0; i < 14; ++i) got.push_back(b.next().count());
    BOOST_TEST((std::vector<long long>(got.begin(), got.begin() + 5) == std::vector<long long>{1000, 1600, 2560, 4096, 6554}));
    BOOST_TEST(got.back() == 120000);
    BOOST_TEST(b.connect_timeout().count() == 120000); // max(20 s, current backoff)
    b.reset();
    BOOST_TEST(b.next().count() == 1000);
    BOOST_TEST(b.connect_timeout().count() == 20000);
    backoff high(p, [] { return 0.999; }); // the jitter's top: +20 % (gRPC's own rule goes past max)
    long long longest = 0;
    for (int i = 0; i < 20; ++i) longest = std::max<long long>(longest, high.next().count());
    BOOST_TEST(longest == 120000); // max is a hard cap
}

BOOST_AUTO_TEST_CASE(jitter_strategies_stay_in_bounds) {
    std::mt19937_64 engine(5);
    auto rnd = [&] { return std::uniform_real_distribution<double>(0, 1)(engine); };
    for (auto strategy : {backoff_strategy::grpc, backoff_strategy::full, backoff_strategy::equal, backoff_strategy::decorrelated}) {
        backoff_policy p;
        p.strategy = strategy;
        backoff b(p, rnd);
        double base = 1000;
        long long prev = 1000;
        for (int i = 0; i < 30; ++i) {
            const auto d = static_cast<double>(b.next().count());
            const double cap = std::min(base, 120000.0);
            switch (strategy) {
            case backoff_strategy::grpc: BOOST_TEST((d >= cap * 0.8 - 1 && d <= cap * 1.2 + 1)); break;
            case backoff_strategy::full: BOOST_TEST((d >= 0 && d <= cap + 1)); break;
            case backoff_strategy::equal: BOOST_TEST((d >= cap / 2 - 1 && d <= cap + 1)); break;
            case backoff_strategy::decorrelated:
                BOOST_TEST((d >= 999 && d <= std::min(120000.0, 3.0 * static_cast<double>(prev)) + 1));
                break;
            }
            prev = std::max<long long>(static_cast<long long>(d), 1000);
            base *= 1.6;
        }
    }
}

// A backoff of initial 100 ms doubling up to `max`, stable after 500 ms (the reconnector tests').
static backoff_policy doubling_backoff(milliseconds max) {
    backoff_policy p;
    p.initial = 100ms;
    p.multiplier = 2.0;
    p.max = max;
    p.stable_after = 500ms;
    return p;
}

BOOST_AUTO_TEST_CASE(reconnector_grows_on_failure_and_resets_only_after_stable) {
    manual_service svc;
    const backoff_policy p = doubling_backoff(1000ms);
    std::vector<duration> attempts;
    reconnector r(svc, p, [&] { attempts.push_back(svc.since_start()); }, [] { return 0.5; });
    r.start();
    BOOST_TEST((attempts == std::vector<duration>{0ms}));
    r.failed(); // wait 100
    svc.step_by(100ms);
    BOOST_TEST_REQUIRE(attempts.size() == 2u);
    BOOST_TEST((attempts[1] == 100ms));
    r.connected();
    svc.step_by(50ms);
    r.disconnected(); // connect-then-drop: a failure, wait 200
    BOOST_TEST((r.last_delay() == 200ms));
    svc.step_by(200ms);
    BOOST_TEST((attempts.back() == 350ms));
    r.failed(); // wait 400, but cut short
    BOOST_TEST((r.last_delay() == 400ms));
    svc.step_by(10ms);
    r.reconnect_now();
    BOOST_TEST((attempts.back() == 360ms));
    r.connected();
    svc.step_by(600ms); // connected, but the peer never proved itself: not stable
    BOOST_TEST((r.state() == reconnector::phase::connected));
    r.proven();
    svc.step_by(499ms);
    r.proven(); // once: stability is timed from the first proof
    BOOST_TEST((r.state() == reconnector::phase::connected));
    svc.step_by(1ms); // stable_after from the proof: the backoff resets
    BOOST_TEST((r.state() == reconnector::phase::stable));
    r.disconnected();
    BOOST_TEST((r.last_delay() == 100ms));
    r.stop();
    svc.step_by(1s);
    BOOST_TEST(attempts.size() == 4u); // nothing after stop
}

BOOST_AUTO_TEST_CASE(reconnector_comes_back_within_the_window_a_draining_server_names) {
    manual_service svc;
    backoff_policy p = doubling_backoff(10s);
    p.jitter = 0; // the backoff's own delays exact; the random source draws the leaving delays
    double next = 0.25;
    std::vector<duration> attempts;
    reconnector r(svc, p, [&] { attempts.push_back(svc.since_start()); }, [&] { return next; });
    r.start();
    r.failed(); // one failure: the backoff is at 200 ms next
    svc.step_by(100ms);
    r.connected();
    r.leaving(2000ms); // BYE draining 2000
    svc.step_by(10ms);
    r.disconnected();
    BOOST_TEST((r.last_delay() == 500ms)); // a quarter into the window, not the backoff's 200
    svc.step_by(499ms);
    BOOST_TEST(attempts.size() == 2u);
    svc.step_by(1ms);
    BOOST_TEST((attempts.back() == 610ms));
    r.connected();
    r.disconnected(); // an ordinary drop afterwards: the backoff, which the leaving did not grow
    BOOST_TEST((r.last_delay() == 200ms));
    next = 0.999;
    r.leaving(1000ms);
    svc.step_by(200ms);
    r.connected();
    r.disconnected();
    BOOST_TEST((r.last_delay() == 999ms)); // never beyond the window
}

BOOST_AUTO_TEST_CASE(reconnector_backoff_grows_against_a_peer_that_only_its_kernel_answers) {
    // A frozen server: every connect succeeds (its kernel answers), nothing ever arrives, and each
    // link is dropped by the client's liveness after 2 s. Without proof the backoff keeps growing.
    manual_service svc;
    const backoff_policy p = doubling_backoff(100s);
    reconnector r(svc, p, [] {}, [] { return 0.5; });
    r.start();
    std::vector<milliseconds> delays;
    for (int i = 0; i < 5; ++i) {
        r.connected();
        svc.step_by(2s);
        r.disconnected();
        delays.push_back(r.last_delay());
        svc.step_by(r.last_delay());
    }
    BOOST_TEST((delays == std::vector<milliseconds>{100ms, 200ms, 400ms, 800ms, 1600ms}));
}

BOOST_AUTO_TEST_CASE(connection_limits_handshake_and_age) {
    manual_service svc;
    server_limits l;
    l.handshake_timeout = 50ms;
    l.max_age = 1000ms;
    l.max_age_jitter = 0.1;
    std::vector<std::pair<std::string, duration>> ev;
    struct notes final : activity_timer::listener {
        heartwheel::timer_scheduler* svc = nullptr;
        connection_limits* limits = nullptr;
        std::function<void(const char*)> note;
        heartwheel::timer_scheduler& scheduler() const noexcept override { return *svc; }
        void on_expired(activity_timer& t, bool) override {
            note(limits->expired(t) == connection_limits::deadline::handshake ? "handshake" : "age");
        }
    } listener;
    listener.svc = &svc;
    listener.note = [&](const char* what) { ev.emplace_back(what, svc.since_start()); };
    connection_limits c(l, listener, nullptr, [] { return 1.0; });
    listener.limits = &c;
    c.handshake_started(l, listener, nullptr);
    svc.step_by(49ms);
    BOOST_TEST(ev.empty());
    svc.step_by(1ms);
    BOOST_TEST_REQUIRE(ev.size() == 1u);
    BOOST_TEST((ev[0] == std::pair<std::string, duration>("handshake", 50ms)));
    // The age (not scaling) is a deadline its owner's node waits for: +10 %, the top of the jitter
    // range, from when the limits were made; the limits fire nothing for it themselves.
    BOOST_TEST((c.age_due() == t0 + 1100ms));
    svc.step_by(1300ms, 10ms);
    BOOST_TEST(ev.size() == 1u);
    c.stop();
    BOOST_TEST((c.age_due() == heartwheel::time_point::max()));
}

// The liveness's one node waits for the earliest of the idle kinds and the age: the reader-idle
// events come every period, activity moves them on but not the age, and the age closes on time,
// once; its goodbye's linger is the connection's.
BOOST_AUTO_TEST_CASE(max_age_and_idle_share_the_liveness_node) {
    asio::io_context io;
    manual_service svc;
    liveness_config cfg;
    cfg.limits.handshake_timeout = 0ms;
    cfg.limits.max_age = 1000ms;
    cfg.limits.max_age_jitter = 0;
    cfg.idle.reader_idle = 300ms;
    liveness_recorder h(io.get_executor());
    std::vector<duration> closed_at;
    h.also = [&](close_reason) { closed_at.push_back(svc.since_start()); };
    connection_liveness live(svc, cfg, h);
    BOOST_TEST(svc.wheel().size() == 1u);
    svc.step_by(250ms);
    live.on_read(false); // not idle activity: the reader idle still counts from 0
    svc.step_by(50ms);
    BOOST_TEST_REQUIRE(h.closes.size() == 1u); // reader idle at 300 ms closes (close_on_idle)
    BOOST_TEST((h.closes[0] == close_reason::reader_idle));
    BOOST_TEST((closed_at[0] == 300ms));
    BOOST_TEST(svc.wheel().empty());

    // Reader idle repeating without closing, the age closing at 1,000 ms whatever the reads.
    struct no_idle_close final : liveness_handler {
        explicit no_idle_close(asio::any_io_executor e) : ex(std::move(e)) {}
        asio::any_io_executor ex;
        std::vector<std::pair<duration, close_reason>> closes;
        std::vector<duration> idles;
        manual_service* svc = nullptr;
        void on_policy_close(close_reason why) override { closes.emplace_back(svc->since_start(), why); }
        void on_idle(idle_event) override { idles.push_back(svc->since_start()); }
        bool close_on_idle() const noexcept override { return false; }
        asio::any_io_executor completion_executor() override { return ex; }
    } n(io.get_executor());
    manual_service svc2;
    n.svc = &svc2;
    connection_liveness live2(svc2, cfg, n);
    svc2.step_by(400ms);
    live2.on_read(); // idle activity at 400 ms: the next reader idle at 700
    svc2.step_by(700ms);
    BOOST_TEST((n.idles == std::vector<duration>{300ms, 700ms}));
    BOOST_TEST_REQUIRE(n.closes.size() == 1u);
    BOOST_TEST((n.closes[0] == std::pair<duration, close_reason>{1000ms, close_reason::max_age}));
    BOOST_TEST(svc2.wheel().empty());
}

// A connection's liveness reads its policies from settings shared by the connections made from an
// equal config (detail/liveness_settings.hpp): equal configs share, and a config that differs in any
// one field of any policy, or in a scalable timeout's minimum, or only in having an overload scale,
// gets settings of its own that hold the changed value.
BOOST_AUTO_TEST_CASE(settings_are_shared_only_between_equal_configs) {
    namespace d = heartwheel::net::detail;
    liveness_config base;
    base.idle.reader_idle = 4321ms;
    const d::settings_ref a = d::intern(base, false);
    const liveness_config copy = base;
    BOOST_TEST(d::intern(copy, false).get() == a.get());
    BOOST_TEST(d::intern(base, true).get() != a.get());
    BOOST_TEST(d::intern(base, false).get() == a.get()); // still remembered

    std::size_t fields = 0, mins = 0;
    base.for_each_policy([&](const policy_description& pd, const void* bp) {
        const auto offset = static_cast<const char*>(bp) - reinterpret_cast<const char*>(&base);
        for (const field_description& f : pd.fields) {
            liveness_config changed = base;
            void* cp = reinterpret_cast<char*>(&changed) + offset;
            const double was = f.get(cp);
            bool set = false;
            for (const double v : {f.lo, f.hi, (f.lo + f.hi) / 2, was + 1}) {
                if (v == was) continue;
                f.set(cp, v);
                if (f.get(cp) != was) {
                    set = true;
                    break;
                }
            }
            BOOST_TEST_REQUIRE(set, pd.table << "." << f.name);
            const d::settings_ref c = d::intern(changed, false);
            BOOST_TEST(c.get() != a.get(), pd.table << "." << f.name << " changed, the settings shared");
            const void* held = reinterpret_cast<const char*>(&c->config) + offset;
            BOOST_TEST(f.get(held) == f.get(cp), pd.table << "." << f.name);
            ++fields;
            if (!f.scalable()) continue;
            liveness_config with_min = base;
            void* mp = reinterpret_cast<char*>(&with_min) + offset;
            f.min_at(mp)->fraction = 0.5;
            BOOST_TEST(d::intern(with_min, false).get() != a.get(), pd.table << "." << f.name << "_min");
            ++mins;
        }
    });
    BOOST_TEST(fields >= 30u);
    BOOST_TEST(mins >= 6u);
}

// Livenesses made one after the other from configs that differ judge each by its own.
BOOST_AUTO_TEST_CASE(livenesses_from_configs_that_differ_judge_by_their_own) {
    asio::io_context io;
    manual_service svc;
    liveness_config shorter, longer;
    shorter.idle.reader_idle = 300ms;
    longer.idle.reader_idle = 500ms;
    liveness_recorder hs(io.get_executor()), hl(io.get_executor());
    std::vector<duration> at_s, at_l;
    hs.also = [&](close_reason) { at_s.push_back(svc.since_start()); };
    hl.also = [&](close_reason) { at_l.push_back(svc.since_start()); };
    auto first = std::make_unique<connection_liveness>(svc, shorter, hs);
    connection_liveness second(svc, longer, hl);
    connection_liveness third(svc, shorter, hs);
    first.reset(); // its settings stay with the third
    svc.step_by(600ms);
    BOOST_TEST((at_s == std::vector<duration>{300ms}));
    BOOST_TEST((at_l == std::vector<duration>{500ms}));
}

BOOST_AUTO_TEST_CASE(request_timeouts_say_queued_or_sent) {
    asio::io_context io;
    manual_service svc;
    request_policy p;
    p.timeout = 100ms;
    request_tracker<> t(svc, io.get_executor(), p);
    std::map<int, std::pair<std::error_code, request_state>> done;
    auto rec = [&](int id) { return [&, id](std::error_code ec, request_state s) { done[id] = {ec, s}; }; };
    t.track(1, rec(1));
    t.track(2, rec(2));
    t.track(3, 300ms, rec(3));
    t.mark_sent(2);
    t.mark_sent(3);
    t.track(2, rec(99)); // duplicate id
    svc.step_by(99ms);
    io.poll();
    BOOST_TEST(done.size() == 1u);
    BOOST_TEST((done[99].first == heartwheel::net::errc::duplicate_request));
    svc.step_by(1ms);
    io.poll();
    BOOST_TEST((done[1].first == heartwheel::net::errc::timed_out));
    BOOST_TEST((done[1].second == request_state::queued));
    BOOST_TEST((done[2].first == heartwheel::net::errc::timed_out));
    BOOST_TEST((done[2].second == request_state::sent));
    BOOST_TEST(t.complete(3)); // the response arrived in time
    BOOST_TEST(!t.complete(3));
    io.poll();
    BOOST_TEST(!done[3].first);
    BOOST_TEST(svc.wheel().empty()); // its timer was cancelled
}

namespace {
/// A liveness's surroundings for the request tests: requests time out after 10 s.
struct requests_fixture {
    asio::io_context io;
    manual_service svc;
    liveness_config cfg;
    liveness_recorder handler{io.get_executor()};
    requests_fixture() { cfg.request.timeout = 10s; }
};
} // namespace

BOOST_FIXTURE_TEST_CASE(requests_fail_at_once_on_close, requests_fixture) {
    std::vector<std::error_code> results;
    liveness_counters counters;
    {
        connection_liveness live(svc, cfg, handler, &counters);
        for (std::uint64_t i = 0; i < 5; ++i)
            live.requests().track(i, [&](std::error_code ec, request_state) { results.push_back(ec); });
        live.close();
        BOOST_TEST(live.requests().outstanding() == 0u);
        // Tracked after the close: completes at once, while the liveness still lives, with no timer.
        live.requests().track(5, [&](std::error_code ec, request_state) { results.push_back(ec); });
        BOOST_TEST(live.requests().outstanding() == 0u);
        BOOST_TEST(svc.wheel().empty());
        io.poll();
        BOOST_TEST(results.size() == 6u);
    }
    io.poll();
    BOOST_TEST(results.size() == 6u);
    for (auto ec : results) BOOST_TEST((ec == heartwheel::net::errc::connection_closed));
    BOOST_TEST(counters.snapshot().requests_failed_on_close == 5u);
    BOOST_TEST(counters.snapshot().requests == 5u); // the late one never started
    BOOST_TEST(handler.closes.empty()); // closed by its owner: no policy decided it
    BOOST_TEST(svc.wheel().empty());
}

// A liveness closed before its requests were first used: the tracker made afterwards is closed too.
BOOST_FIXTURE_TEST_CASE(requests_first_used_after_close_fail_at_once, requests_fixture) {
    connection_liveness live(svc, cfg, handler);
    live.close();
    std::vector<std::error_code> results;
    live.requests().track(1, [&](std::error_code ec, request_state) { results.push_back(ec); });
    BOOST_TEST(live.requests().outstanding() == 0u);
    BOOST_TEST(svc.wheel().empty());
    io.poll();
    BOOST_TEST_REQUIRE(results.size() == 1u);
    BOOST_TEST((results[0] == heartwheel::net::errc::connection_closed));
}

BOOST_AUTO_TEST_CASE(liveness_closes_with_a_reason_and_counts) {
    asio::io_context io;
    manual_service svc;
    liveness_config cfg;
    cfg.idle.reader_idle = 300ms;
    cfg.heartbeat.interval = 100ms;
    cfg.heartbeat.timeout = 50ms;
    cfg.heartbeat.misses = 2;
    liveness_counters counters;
    liveness_recorder handler(io.get_executor());
    const auto& why = handler.closes;
    const int& pings = handler.pings;
    connection_liveness live(svc, cfg, handler, &counters);
    live.set_ping_writer(&handler);
    svc.step_by(1s, 5ms);
    BOOST_TEST_REQUIRE(why.size() == 1u);
    BOOST_TEST((why[0] == close_reason::heartbeat_timeout)); // dead at 250 ms, before reader idle at 300
    BOOST_TEST(pings == 2);
    const auto s = counters.snapshot();
    BOOST_TEST(s.heartbeat_misses == 2u);
    BOOST_TEST(s.deaths == 1u); // judged on the step that reached its deadline: not late
    BOOST_TEST(s.death_lateness_max_us == 0u);
    BOOST_TEST(s.deaths_judged_late == 0u);
    BOOST_TEST(s.closes_total() == 0u); // closes are counted by the close path (net::connection), once
    BOOST_TEST(svc.wheel().empty()); // nothing left after the close
}

// A ping goes from the heartbeat to the writer the liveness names, and nowhere else: the writer can
// change (a connection names its application once TLS's handshake is done) and be taken back (the
// close); a ping with no writer is not written nor counted, and still judged — a peer silent that
// long is dead whether or not we could ask it.
BOOST_AUTO_TEST_CASE(a_ping_goes_to_the_writer_named_and_is_judged_without_one) {
    asio::io_context io;
    manual_service svc;
    liveness_config cfg;
    cfg.heartbeat.interval = 100ms;
    cfg.heartbeat.timeout = 50ms;
    cfg.heartbeat.misses = 3;
    cfg.heartbeat.jitter = 0;
    liveness_counters counters;
    liveness_recorder handler(io.get_executor()), other(io.get_executor());
    connection_liveness live(svc, cfg, handler, &counters);
    svc.step_by(160ms, 5ms); // the first ping, unwritten, judged missed at 150
    BOOST_TEST(handler.pings == 0);
    BOOST_TEST(counters.snapshot().pings_sent == 0u);
    BOOST_TEST(counters.snapshot().heartbeat_misses == 1u);
    live.set_ping_writer(&handler);
    svc.step_by(100ms, 5ms); // the second, at 200
    BOOST_TEST(handler.pings == 1);
    live.set_ping_writer(&other);
    svc.step_by(60ms, 5ms); // the third, at 300, to the writer named now
    BOOST_TEST(handler.pings == 1);
    BOOST_TEST(other.pings == 1);
    BOOST_TEST(counters.snapshot().pings_sent == 2u);
    BOOST_TEST(handler.closes.empty());
    svc.step_by(40ms, 5ms); // its miss is the third: dead at 350
    BOOST_TEST_REQUIRE(handler.closes.size() == 1u);
    BOOST_TEST((handler.closes[0] == close_reason::heartbeat_timeout));
}

BOOST_AUTO_TEST_CASE(heartbeat_death_lateness_counts_from_the_missed_deadline) {
    // Time moves in 7 ms steps: the ping goes out at 105 ms (the first step past the interval), its
    // deadline is 155 ms, and the step that judges it lands at 161 ms: 6 ms late.
    asio::io_context io;
    manual_service svc;
    liveness_config cfg;
    cfg.heartbeat.interval = 100ms;
    cfg.heartbeat.timeout = 50ms;
    cfg.heartbeat.misses = 1;
    liveness_counters counters;
    liveness_recorder handler(io.get_executor());
    connection_liveness live(svc, cfg, handler, &counters);
    svc.step_by(154ms, 7ms);
    BOOST_TEST(counters.snapshot().deaths == 0u);
    svc.step_by(7ms, 7ms);
    BOOST_TEST_REQUIRE(handler.closes.size() == 1u);
    const auto s = counters.snapshot();
    BOOST_TEST(s.deaths == 1u);
    BOOST_TEST(s.death_lateness_max_us == 6000u);
    BOOST_TEST(s.death_lateness_total_us == 6000u);
    BOOST_TEST(s.deaths_judged_early == 0u);
    BOOST_TEST(s.deaths_judged_late == 1u); // 6 ms after the deadline, past the 1 ms tick's rounding
    BOOST_TEST(heartwheel::net::death_lateness_bucket_bounds[6] == 0.01); // the bucket 5 ms < x <= 10 ms
    for (std::size_t i = 0; i < s.death_lateness_buckets.size(); ++i)
        BOOST_TEST(s.death_lateness_buckets[i] == (i == 6 ? 1u : 0u));
}

BOOST_AUTO_TEST_CASE(toml_loads_policies_and_names_bad_keys) {
    const auto c = parse_liveness_config(R"(
[idle]
reader_idle = 30000
write_progress_is_activity = false
[heartbeat]
interval = 10000
timeout = 5000
misses = 4
jitter = 0.1
trigger = "outbound"
[backoff]
strategy = "decorrelated"
max = 60000
)");
    BOOST_TEST(c.idle.reader_idle.count() == 30000);
    BOOST_TEST(!c.idle.write_progress_is_activity);
    BOOST_TEST(c.heartbeat.misses == 4u);
    BOOST_TEST(c.heartbeat.jitter == 0.1);
    BOOST_TEST((c.heartbeat.trigger == heartbeat_trigger::outbound));
    BOOST_TEST((liveness_config{}.heartbeat.trigger == heartbeat_trigger::inbound)); // the default
    BOOST_TEST((c.backoff.strategy == backoff_strategy::decorrelated));
    BOOST_TEST(c.backoff.max.count() == 60000);
    auto error_of = [](const char* text) -> std::string {
        try {
            parse_liveness_config(text);
        } catch (const config_error& e) {
            return e.what();
        }
        return "no error";
    };
    BOOST_TEST(error_of("[idle]\nreader_idel = 5").find("idle.reader_idel") != std::string::npos);
    BOOST_TEST(error_of("[idle]\nreader_idle = \"100\"").find("with a unit") != std::string::npos); // a string needs its unit
    BOOST_TEST(error_of("[idle]\nreader_idle = true").find("idle.reader_idle") != std::string::npos);
    BOOST_TEST(error_of("[heartbeat]\ninterval = 1000\nmisses = 0").find("heartbeat.misses = 0") != std::string::npos);
    // A value that does not even fit the field names the policy's range, not the field type's.
    BOOST_TEST(error_of("[heartbeat]\nmisses = -1") == "heartbeat.misses = -1 is out of range: accepted 1..1000 (in config)");
    BOOST_TEST(error_of("[request]\nmax_outstanding = 99999999999").find("1..16777216") != std::string::npos);
    BOOST_TEST(error_of("[backoff]\nstrategy = \"random\"").find("grpc, full, equal or decorrelated") != std::string::npos);
    BOOST_TEST(error_of("[heartbeat]\ntrigger = \"sideways\"") ==
               "heartbeat.trigger = \"sideways\" is not valid: accepted inbound or outbound (in config)");
    BOOST_TEST(error_of("[heartbeat]\ntrigger = 1").find("heartbeat.trigger") != std::string::npos);
    BOOST_TEST(error_of("[nonsense]\nx = 1").find("nonsense") != std::string::npos);
    BOOST_TEST(error_of("[idle\nx=").find("valid TOML") != std::string::npos);
    BOOST_CHECK_THROW(load_liveness_config("/nonexistent/heartwheel.toml"), config_error);
}

namespace {
std::string error_text(const std::function<void()>& f) {
    try {
        f();
    } catch (const config_error& e) {
        return e.what();
    }
    return "no error";
}
bool has(const std::string& text, const char* part) { return text.find(part) != std::string::npos; }
} // namespace

BOOST_AUTO_TEST_CASE(durations_take_units_everywhere) {
    BOOST_TEST(parse_duration("30s", "f").count() == 30000);
    BOOST_TEST(parse_duration("500ms", "f").count() == 500);
    BOOST_TEST(parse_duration("2m", "f").count() == 120000);
    BOOST_TEST(parse_duration("1h", "f").count() == 3600000);
    BOOST_TEST(parse_duration("1.5s", "f").count() == 1500);
    BOOST_TEST(parse_duration("250", "f").count() == 250); // a bare number: milliseconds
    BOOST_TEST(parse_duration("7", "f", std::chrono::seconds(1)).count() == 7000);
    BOOST_CHECK_THROW(parse_duration("250", "f", milliseconds(0)), config_error); // unit required
    for (const char* bad : {"", "s", "1.5", "10x", "1.0005s", "ms5", "1e3", " 5"})
        BOOST_CHECK_THROW(parse_duration(bad, "f"), config_error);
    BOOST_TEST(has(error_text([] { parse_duration("abc", "idle.reader_idle"); }), "idle.reader_idle"));

    const auto c = parse_liveness_config(R"(
[idle]
reader_idle = "30s"
all_idle = 45000
[heartbeat]
interval = "2m"
timeout = "1.5s"
[keepalive]
enabled = true
idle = "1m"
interval = 10
user_timeout = "30s"
)");
    BOOST_TEST(c.idle.reader_idle.count() == 30000);
    BOOST_TEST(c.idle.all_idle.count() == 45000);
    BOOST_TEST(c.heartbeat.interval.count() == 120000);
    BOOST_TEST(c.heartbeat.timeout.count() == 1500);
    BOOST_TEST(c.keepalive.idle.count() == 60);
    BOOST_TEST(c.keepalive.interval.count() == 10); // a bare number is the field's unit: seconds here
    BOOST_TEST(c.keepalive.user_timeout.count() == 30000);
    BOOST_TEST(has(error_text([] { parse_liveness_config("[keepalive]\nidle = \"1500ms\""); }), "whole number of seconds"));
}

// A heartbeat timeout longer than the interval (Dubbo's default is 3 x), and a config that sets only
// the interval (the default timeout, 10 s, is longer), are valid.
BOOST_AUTO_TEST_CASE(heartbeat_timeout_independent_of_interval) {
    BOOST_CHECK_NO_THROW(parse_liveness_config("[heartbeat]\ninterval = 2000"));
    const auto c = parse_liveness_config("[heartbeat]\ninterval = \"1s\"\ntimeout = \"3s\"");
    BOOST_TEST(c.heartbeat.timeout.count() == 3000);
}

// backoff.max alone below the default initial (1 s) lowers initial to it; set both and the error
// names the initial the user gave.
BOOST_AUTO_TEST_CASE(backoff_max_alone_merges_with_defaults) {
    const auto c = parse_liveness_config("[backoff]\nmax = 500");
    BOOST_TEST(c.backoff.max.count() == 500);
    BOOST_TEST(c.backoff.initial.count() == 500);
    const auto bigger = parse_liveness_config("[backoff]\nmax = \"5s\"");
    BOOST_TEST(bigger.backoff.initial.count() == 1000); // the default stays when it fits
    const auto msg = error_text([] { parse_liveness_config("[backoff]\nmax = 500\ninitial = 800"); });
    BOOST_TEST(has(msg, "backoff.max = 500 ms"));
    BOOST_TEST(has(msg, "backoff.initial, which is 800 ms"));
}

// The liveness tables can come from an application's own, larger document.
BOOST_AUTO_TEST_CASE(liveness_tables_from_a_larger_document) {
    const toml::table doc = toml::parse(R"(
[server]
port = 7000
name = "kv"
[heartbeat]
interval = "10s"
[idle]
reader_idle = "1m"
[liveness.heartbeat]
interval = "3s"
)");
    const auto c = parse_liveness_config(doc, "app.toml", {"server", "liveness"});
    BOOST_TEST(c.heartbeat.interval.count() == 10000);
    BOOST_TEST(c.idle.reader_idle.count() == 60000);
    const auto nested = parse_liveness_config(*doc["liveness"].as_table(), "app.toml [liveness]");
    BOOST_TEST(nested.heartbeat.interval.count() == 3000);
    const auto msg = error_text([&] { parse_liveness_config(doc, "app.toml"); }); // no keys of its own
    BOOST_TEST(has(msg, "(unknown key) is not valid")); // [server] or [liveness], whichever comes first
    BOOST_TEST(has(msg, "app.toml"));
    // A misspelled liveness table is refused, naming it and what is accepted, the application's own too.
    const toml::table typo = toml::parse("[server]\nport = 7000\n[heartbaet]\ninterval = \"10s\"\n");
    const auto t = error_text([&] { parse_liveness_config(typo, "app.toml", {"server"}); });
    BOOST_TEST(t == "heartbaet = (unknown key) is not valid: accepted idle, heartbeat, request, backoff, limits, "
                    "keepalive, overload, connection, output, timeouts, server (in app.toml)");
    liveness_config over; // applied over values already set
    over.heartbeat.misses = 7;
    apply_liveness_tables(over, doc, "app.toml", {"server", "liveness"});
    BOOST_TEST(over.heartbeat.misses == 7u);
    BOOST_TEST(over.heartbeat.interval.count() == 10000);
    BOOST_TEST(is_liveness_table("heartbeat"));
    BOOST_TEST(!is_liveness_table("server"));
}

BOOST_AUTO_TEST_CASE(config_files_that_are_not_files_are_named) {
    BOOST_TEST(has(error_text([] { load_liveness_config("/nonexistent/heartwheel.toml"); }), "No such file"));
    BOOST_TEST(has(error_text([] { load_liveness_config("/tmp"); }), "is a directory"));
    BOOST_TEST(has(error_text([] { load_liveness_config("/dev/null"); }), "not a regular file"));
    const std::string empty = "/tmp/heartwheel-empty-" + std::to_string(::getpid()) + ".toml";
    { std::ofstream(empty) << "\n  \n"; }
    BOOST_TEST(has(error_text([&] { load_liveness_config(empty); }), "empty"));
    { std::ofstream(empty) << "[idle]\nreader_idle = \"x\"\n"; }
    const auto msg = error_text([&] { load_liveness_config(empty); });
    BOOST_TEST(has(msg, "idle.reader_idle"));
    BOOST_TEST(has(msg, empty.c_str())); // names the file
    std::remove(empty.c_str());
}

// A program's defaults (a heartbeat on) survive a file that sets only other tables: the file is
// read over them, not over the library's (where a file holding only [output] turned the heartbeat off).
BOOST_AUTO_TEST_CASE(a_partial_file_is_read_over_the_programs_defaults) {
    const std::string path = "/tmp/heartwheel-partial-" + std::to_string(::getpid()) + ".toml";
    { std::ofstream(path) << "[output]\nhard_limit = \"4MiB\"\n"; }
    liveness_config defaults;
    defaults.heartbeat.interval = std::chrono::seconds(30);
    defaults.heartbeat.timeout = std::chrono::seconds(10);
    defaults.idle.reader_idle = std::chrono::minutes(5);
    const auto merged = load_liveness_config(path, defaults);
    BOOST_TEST(merged.heartbeat.interval.count() == 30000);
    BOOST_TEST(merged.heartbeat.timeout.count() == 10000);
    BOOST_TEST(merged.idle.reader_idle.count() == 300000);
    BOOST_TEST(merged.output.hard_limit == std::size_t{4} << 20);
    BOOST_TEST(!load_liveness_config(path).heartbeat.enabled()); // the library's own defaults: off
    { std::ofstream(path) << "[heartbeat]\nmisses = 0\n"; } // over the defaults, still validated
    const auto msg = error_text([&] { load_liveness_config(path, defaults); });
    BOOST_TEST(has(msg, "heartbeat"), msg);
    BOOST_TEST(has(msg, path.c_str()), msg);
    std::remove(path.c_str());
}

// gRPC A18: with keepalive on, a TCP_USER_TIMEOUT below the probe interval kills a healthy connection
// after one lost probe.
BOOST_AUTO_TEST_CASE(keepalive_user_timeout_below_probe_interval_is_refused) {
    keepalive_options k;
    k.enabled = true;
    k.interval = std::chrono::seconds(10);
    k.user_timeout = 5000ms;
    const auto msg = error_text([&] { k.validate(); });
    BOOST_TEST(has(msg, "keepalive.user_timeout = 5000 ms"));
    BOOST_TEST(has(msg, "keepalive.interval (10 s"));
    k.user_timeout = 30000ms;
    BOOST_CHECK_NO_THROW(k.validate());
    k.interval = std::chrono::seconds(0); // the kernel's default probe interval: 75 s
    BOOST_TEST(has(error_text([&] { k.validate(); }), "75 s"));
    k.enabled = false; // no probes: nothing to compare with
    BOOST_CHECK_NO_THROW(k.validate());
}

// Every documented counter is counted: requests started, timed out and failed on close; reconnect
// attempts and failures.
// when_idle: called once, when the last outstanding request is done (answered or timed out), after
// its completion was posted: what a connection asked to leave waits for.
BOOST_AUTO_TEST_CASE(when_idle_is_called_once_after_the_last_request_is_done) {
    asio::io_context io;
    manual_service svc;
    request_policy p;
    p.timeout = 100ms;
    request_tracker<> t(svc, io.get_executor(), p);
    std::vector<std::string> order;
    t.track(1, [&](std::error_code, request_state) { order.push_back("done 1"); });
    t.track(2, 300ms, [&](std::error_code, request_state) { order.push_back("done 2"); });
    t.when_idle([&] { asio::post(io, [&] { order.push_back("idle"); }); });
    BOOST_TEST(t.complete(1));
    io.poll();
    BOOST_TEST((order == std::vector<std::string>{"done 1"})); // one still outstanding
    svc.step_by(300ms); // the other times out
    io.poll();
    BOOST_TEST((order == std::vector<std::string>{"done 1", "done 2", "idle"})); // behind its completion
    t.track(3, [&](std::error_code, request_state) {});
    BOOST_TEST(t.complete(3));
    io.poll();
    BOOST_TEST(order.size() == 3u); // once
}

BOOST_AUTO_TEST_CASE(request_and_reconnect_counters) {
    asio::io_context io;
    manual_service svc;
    liveness_counters counters;
    request_policy rp;
    rp.timeout = 100ms;
    {
        request_tracker<int> t(svc, io.get_executor(), rp, &counters);
        for (int i = 0; i < 3; ++i) t.track(i, [](std::error_code, request_state) {});
        t.complete(0);
        svc.step_by(100ms); // 1 and 2 time out
        t.track(7, [](std::error_code, request_state) {});
        t.track(8, 0ms, [](std::error_code, request_state) {}); // no deadline
        t.fail_all();
    }
    io.poll();
    auto s = counters.snapshot();
    BOOST_TEST(s.requests == 5u);
    BOOST_TEST(s.request_timeouts == 2u);
    BOOST_TEST(s.requests_failed_on_close == 2u);

    backoff_policy bp;
    bp.initial = 10ms;
    int attempts = 0;
    reconnector r(svc, bp, [&] { ++attempts; }, [] { return 0.5; }, &counters);
    r.start(); // the first connect is not a reconnect
    r.failed();
    svc.step_by(50ms);
    r.failed();
    svc.step_by(50ms);
    r.connected();
    s = counters.snapshot();
    BOOST_TEST(attempts == 3);
    BOOST_TEST(s.reconnect_attempts == 2u);
    BOOST_TEST(s.reconnect_failures == 2u);
}

// The write queue: tiny messages coalesce into one write, bytes keep their order, a write in flight
// never sees later appends and is at most one chunk of whole messages, memory is the bytes held (no
// per-message overhead). The bounds on it are the connection's (connection_test).
BOOST_AUTO_TEST_CASE(write_queue_coalesces_and_accounts_bytes) {
    write_queue_limits lim;
    lim.chunk_bytes = 300;
    lim.keep_capacity = 4096;
    write_queue q(lim);
    for (int i = 0; i < 500; ++i) q.append("\n"); // 500 one-byte lines
    BOOST_TEST(q.queued() == 500u);
    BOOST_TEST(q.memory() < 2048u); // bytes, not 500 strings
    auto first = q.next_bytes();
    BOOST_TEST(first.size() == 300u); // one write for 300 of them: a chunk
    BOOST_TEST(q.writing());
    q.append({"ab", "c\n"});
    BOOST_TEST(q.next_bytes().size() == 300u); // the write in flight is unchanged by appends
    BOOST_TEST(!q.consumed(100));              // partial: progress
    BOOST_TEST(q.next_bytes().size() == 200u);
    q.drop_pending(); // goodbye: keep the rest of the write in flight, drop the other 200 lines and "abc"
    BOOST_TEST(q.queued() == 200u);
    q.append({"BYE", "\n"});
    BOOST_TEST(q.consumed(200));
    BOOST_TEST(q.next_bytes() == "BYE\n");
    BOOST_TEST(q.consumed(4));
    BOOST_TEST(q.empty());
    std::string all; // order, across chunks, with a message larger than a chunk
    const std::string big(1000, 'y');
    for (const char* m : {"one\n", "two\n"}) q.append(m);
    q.append({big, "\n"});
    q.append("three\n");
    BOOST_TEST(q.queued() == 1015u); // "one\n" "two\n", 1,000 + "\n", "three\n"
    while (!q.empty()) {
        auto b = q.next_bytes();
        BOOST_TEST(b.size() <= std::max<std::size_t>(lim.chunk_bytes, big.size() + 1));
        all += b;
        q.consumed(b.size());
    }
    BOOST_TEST(all == "one\ntwo\n" + big + "\nthree\n");
    BOOST_TEST(q.empty());
    BOOST_TEST(q.memory() <= lim.keep_capacity); // a burst does not pin its memory
    write_queue idle; // the default: an empty queue holds nothing
    idle.append("hello\n");
    idle.consumed(idle.next_bytes().size());
    BOOST_TEST(idle.memory() == 0u);
    // A message given as an array of parts (an HTTP serializer's buffers): one message, whole.
    write_queue parts_q;
    const std::string body(1000, 'b');
    const std::string_view parts[] = {"HTTP/1.1 200 OK\r\n", "Content-Length: 1000\r\n\r\n", body};
    parts_q.append(parts, 3);
    const std::string want = std::string(parts[0]) + std::string(parts[1]) + body;
    BOOST_TEST(parts_q.queued() == want.size());
    BOOST_TEST(parts_q.next_bytes() == want);
}

BOOST_AUTO_TEST_CASE(closes_text_lists_the_reasons_with_a_count) {
    liveness_counters c;
    BOOST_TEST(c.snapshot().closes_text() == "none");
    c.closed(close_reason::peer_closed);
    c.closed(close_reason::reader_idle);
    c.closed(close_reason::peer_closed);
    c.closed(close_reason::slow_consumer);
    BOOST_TEST(c.snapshot().closes_text() == "reader-idle:1,peer-closed:2,slow-consumer:1");
}

// The slow-consumer bound of any queue (net::connection's bytes, the WebSocket layer's messages), on a
// manual clock: past the hard limit at once; above the soft limit for its whole time; drained under it
// in time, it starts over; a refused producer is owed one on_writable at the low-water mark.
BOOST_AUTO_TEST_CASE(output_bound_judges_hard_soft_and_water_marks) {
    manual_service svc;
    output_policy p;
    p.high_water = 100;
    p.low_water = 40;
    p.soft_limit = 200;
    p.soft_limit_time = milliseconds(50);
    p.hard_limit = 1000;
    std::size_t queued = 0;
    int soft_closes = 0;
    output_bound b(p);
    const auto grew = [&](std::size_t q, bool over_count = false) {
        queued = q;
        return b.grew(q, svc, [&] { return [&] { soft_closes += b.soft_time_up(queued) ? 1 : 0; }; }, over_count);
    };

    BOOST_TEST(!grew(90));
    BOOST_TEST(b.writable(queued));
    BOOST_TEST(!grew(150)); // above high water: not writable, on_writable owed
    BOOST_TEST(!b.writable(queued));
    BOOST_TEST(!b.drained(60)); // not yet at low water
    BOOST_TEST(b.drained(40));  // once
    BOOST_TEST(!b.drained(0));

    BOOST_TEST(!grew(300)); // above the soft limit: its timer
    svc.step_by(milliseconds(30));
    BOOST_TEST(!b.drained(150)); // under it in time: the bound starts over
    svc.step_by(milliseconds(60));
    BOOST_TEST(soft_closes == 0);

    BOOST_TEST(!grew(300)); // above it for its whole time: the owner closes
    svc.step_by(milliseconds(49));
    BOOST_TEST(soft_closes == 0);
    svc.step_by(milliseconds(3));
    BOOST_TEST(soft_closes == 1);

    BOOST_TEST(!b.slow());
    BOOST_TEST(grew(1001)); // past the hard limit: slow at once
    BOOST_TEST(b.slow());

    output_bound counted(p);
    BOOST_TEST(counted.grew(1, svc, [] { return [] {}; }, true)); // the owner's own count limit
    BOOST_TEST(counted.slow());

    p.low_water = 500; // above high water: refused, naming the field
    BOOST_CHECK_THROW(output_bound{p}, config_error);
}

// A whole number in a range, for counts and flags in a fixed unit: anything else names the field and
// the range (no sign, no exponent, no trailing text, no wrap-around of a negative).
BOOST_AUTO_TEST_CASE(parse_count_takes_whole_numbers_in_range_only) {
    BOOST_TEST(parse_count("0", "--n", 0, 10) == 0u);
    BOOST_TEST(parse_count("10", "--n", 0, 10) == 10u);
    BOOST_TEST(parse_count("4294967296", "--n", 0, 1ull << 32) == (1ull << 32));
    for (const char* bad : {"", "-1", "+1", " 1", "1 ", "1e3", "0x10", "ten", "11", "18446744073709551616"}) {
        try {
            parse_count(bad, "--n", 0, 10);
            BOOST_ERROR("accepted '" << bad << "'");
        } catch (const config_error& e) {
            BOOST_TEST(e.field() == "--n");
            BOOST_TEST(std::string(e.what()).find("0..10") != std::string::npos, e.what());
        }
    }
}
