// timeout_scale_test.cpp — timeouts that shrink under overload, on a manual clock: the scaled
// deadline at several pressures (to the tick), never before min, prompt re-judgement when the
// pressure rises, back to max when it falls, activity while queued, a scale change that touches
// one head per range whatever the number of timers, and the overload config.
#define BOOST_TEST_MODULE timeout_scale
#include <boost/test/unit_test.hpp>

#include <asio/io_context.hpp>
#include <heartwheel/net/policies/connection_liveness.hpp>
#include <heartwheel/net/policies/idle_state.hpp>
#include <heartwheel/net/config/liveness_toml.hpp>
#include <heartwheel/net/policies/timeout_scale.hpp>

#include "liveness_recorder.hpp"
#include "manual_service.hpp"

#include <memory>
#include <optional>

using namespace hwtest;
using namespace heartwheel::net;

namespace {

// One reader-idle timer of max 10 s, min 2 s (range 8 s), recording when it fires.
struct scaled_reader final : idle_state::listener {
    scaled_reader(manual_service& svc, timeout_scale& scale, milliseconds max = 10s, scaled_min min = {2s, 0.0})
        : idle_state::listener(svc, &scale), svc(&svc) {
        p.reader_idle = max;
        p.reader_idle_min = min;
        idle = std::make_unique<idle_state>(p, *this, &scale);
    }
    void close_for(close_reason) override {} // idle_state closes nothing itself
    bool input_waiting() override { return false; }
    void on_idle(idle_event) override { fired.push_back(svc->since_start()); }
    manual_service* svc;
    idle_policy p;
    std::vector<duration> fired;
    std::unique_ptr<idle_state> idle;
};

} // namespace

BOOST_AUTO_TEST_CASE(scale_follows_pressure_above_the_threshold) {
    BOOST_TEST(scale_for_pressure(0.0, 0.8) == 1.0);
    BOOST_TEST(scale_for_pressure(0.8, 0.8) == 1.0);
    BOOST_TEST(scale_for_pressure(0.9, 0.8) == 0.5, boost::test_tools::tolerance(1e-9));
    BOOST_TEST(scale_for_pressure(1.0, 0.8) == 0.0);
    BOOST_TEST(scale_for_pressure(7.0, 0.8) == 0.0);
    manual_service svc;
    timeout_scale scale(svc, 0.5);
    scale.set_pressure(0.75);
    BOOST_TEST(scale.scale() == 0.5);
    BOOST_TEST((scale.scaled(2s, 10s) == 6s));
    scale.set_pressure(-3); // clamped
    BOOST_TEST(scale.pressure() == 0.0);
    BOOST_TEST(!scale.scaled());
}

BOOST_AUTO_TEST_CASE(scaled_deadline_at_several_pressures) {
    // threshold 0.5: pressure 0.3 -> scale 1 (10 s), 0.75 -> 0.5 (6 s), 0.875 -> 0.25 (4 s), 1 -> 0 (2 s)
    for (auto [pressure, expected] : {std::pair{0.3, 10s}, {0.75, 6s}, {0.875, 4s}, {1.0, 2s}}) {
        manual_service svc(10ms);
        timeout_scale scale(svc, 0.5);
        scale.set_pressure(pressure);
        scaled_reader r(svc, scale);
        svc.step_by(expected - 10ms, 10ms);
        BOOST_TEST(r.fired.empty(), "pressure " << pressure);
        svc.step_by(10ms, 10ms);
        BOOST_TEST_REQUIRE(r.fired.size() == 1u, "pressure " << pressure);
        BOOST_TEST((r.fired[0] == expected), "pressure " << pressure);
    }
}

BOOST_AUTO_TEST_CASE(never_before_min_however_high_the_pressure) {
    manual_service svc;
    timeout_scale scale(svc, 0.5);
    scaled_reader r(svc, scale);
    svc.step_by(1s);
    scale.set_pressure(1.0); // full scaling while the timer still waits its min
    svc.step_by(999ms);
    BOOST_TEST(r.fired.empty());
    svc.step_by(1ms);
    BOOST_TEST_REQUIRE(r.fired.size() == 1u);
    BOOST_TEST((r.fired[0] == 2s)); // min, exactly
    // A min given as a fraction of the max: 25 % of 10 s.
    manual_service svc2;
    timeout_scale full(svc2);
    full.set_scale(0.0);
    scaled_reader f(svc2, full, 10s, scaled_min{0ms, 0.25});
    svc2.step_by(2499ms);
    BOOST_TEST(f.fired.empty());
    svc2.step_by(1ms);
    BOOST_TEST(f.fired.size() == 1u);
}

BOOST_AUTO_TEST_CASE(rising_pressure_rejudges_queued_timers_within_a_tick) {
    manual_service svc;
    timeout_scale scale(svc, 0.5);
    scaled_reader idle_for_long(svc, scale);
    svc.step_by(3s); // min passed at 2 s: queued
    scaled_reader recent(svc, scale); // started at 3 s: min until 5 s
    svc.step_by(4s);                  // 7 s: the first idle for 7 s, the second for 4 s
    BOOST_TEST(idle_for_long.fired.empty());
    scale.set_pressure(0.75); // scale 0.5: 6 s timeouts — the first is overdue, the second not
    svc.step_by(1ms);
    BOOST_TEST_REQUIRE(idle_for_long.fired.size() == 1u);
    BOOST_TEST((idle_for_long.fired[0] == 7001ms)); // the next tick after the change
    BOOST_TEST(recent.fired.empty());
    svc.step_by(1998ms); // the second at 3 s + 6 s = 9 s, on time
    BOOST_TEST(recent.fired.empty());
    svc.step_by(1ms);
    BOOST_TEST_REQUIRE(recent.fired.size() == 1u);
    BOOST_TEST((recent.fired[0] == 9s));
    BOOST_TEST(scale.fired_while_scaled() == 2u);
}

BOOST_AUTO_TEST_CASE(falling_pressure_returns_to_max) {
    manual_service svc;
    timeout_scale scale(svc, 0.5);
    scale.set_pressure(1.0);
    scaled_reader r(svc, scale);
    svc.step_by(2500ms);
    BOOST_TEST_REQUIRE(r.fired.size() == 1u); // at scale 0 it fires at its min
    BOOST_TEST((r.fired[0] <= 2001ms));
    svc.step_by(500ms); // 3 s: repeat waits its min again (until 4 s)
    scale.set_pressure(0.75); // 0.5: 6 s
    svc.step_by(1s);          // 4 s: queued (key 4 s), due at 4 + 4 = 8 s
    scale.set_pressure(0.0);  // back to max: due at 4 + 8 = 12 s
    svc.step_by(7999ms);
    BOOST_TEST(r.fired.size() == 1u);
    svc.step_by(1ms);
    BOOST_TEST_REQUIRE(r.fired.size() == 2u);
    BOOST_TEST((r.fired[1] == 12s));
}

BOOST_AUTO_TEST_CASE(activity_while_queued_goes_back_to_min) {
    manual_service svc;
    timeout_scale scale(svc, 0.5);
    scaled_reader r(svc, scale);
    svc.step_by(3s);
    BOOST_TEST(scale.queued() == 1u);
    r.idle->on_read(svc.stamp()); // activity at 3 s: out of the queue, min again
    BOOST_TEST(scale.queued() == 0u);
    scale.set_pressure(1.0); // full scaling: 3 s + min
    svc.step_by(1999ms);
    BOOST_TEST(r.fired.empty());
    svc.step_by(1ms);
    BOOST_TEST_REQUIRE(r.fired.size() == 1u);
    BOOST_TEST((r.fired[0] == 5s));
}

BOOST_AUTO_TEST_CASE(destroying_a_queued_timer_unlinks_it) {
    manual_service svc;
    timeout_scale scale(svc, 0.5);
    auto a = std::make_unique<scaled_reader>(svc, scale);
    scaled_reader b(svc, scale);
    svc.step_by(3s);
    BOOST_TEST(scale.queued() == 2u);
    a.reset();
    BOOST_TEST(scale.queued() == 1u);
    scale.set_pressure(1.0);
    svc.step_by(1ms);
    BOOST_TEST(b.fired.size() == 1u);
}

// The property the design exists for: a scale change costs one head per range, not one re-arm per
// timer. Counted as schedule calls (deterministic); bench/ measures the time.
BOOST_AUTO_TEST_CASE(a_scale_change_touches_one_head_per_range) {
    for (int n : {10, 1000, 20000}) {
        manual_service svc;
        timeout_scale scale(svc, 0.5);
        std::vector<std::unique_ptr<scaled_reader>> queued, waiting;
        for (int i = 0; i < n; ++i) queued.push_back(std::make_unique<scaled_reader>(svc, scale));
        svc.step_by(2500ms, 100ms); // all queued
        for (int i = 0; i < n; ++i) waiting.push_back(std::make_unique<scaled_reader>(svc, scale)); // in their min
        BOOST_TEST(scale.queued() == static_cast<std::size_t>(n));
        const auto before = svc.schedule_count();
        for (double p : {0.6, 0.7, 0.55, 0.65}) scale.set_pressure(p); // none of them due yet
        BOOST_TEST(svc.schedule_count() - before == 4u, "n = " << n);      // one head, four changes
        BOOST_TEST(scale.queues() == 1u);
    }
}

BOOST_AUTO_TEST_CASE(closes_while_scaled_are_counted) {
    asio::io_context io;
    manual_service svc;
    timeout_scale scale(svc, 0.5);
    liveness_config cfg;
    cfg.idle.reader_idle = 10s;
    cfg.idle.reader_idle_min = {1s, 0.0};
    liveness_counters counters;
    liveness_recorder handler(io.get_executor());
    std::vector<std::unique_ptr<connection_liveness>> conns;
    for (int i = 0; i < 2; ++i) conns.push_back(std::make_unique<connection_liveness>(svc, cfg, handler, &counters, &scale));
    svc.step_by(1500ms);
    BOOST_TEST(handler.closes.empty());
    conns[1]->on_read(); // the healthy one
    scale.set_pressure(1.0);
    svc.step_by(1ms);
    BOOST_TEST_REQUIRE(handler.closes.size() == 1u);
    BOOST_TEST((handler.closes[0] == close_reason::reader_idle));
    BOOST_TEST(counters.snapshot().closes_while_scaled == 1u);
    BOOST_TEST(!conns[1]->closed());
}

BOOST_AUTO_TEST_CASE(handshake_and_max_age_scale) {
    asio::io_context io;
    manual_service svc;
    timeout_scale scale(svc, 0.5);
    liveness_config cfg;
    cfg.limits.handshake_timeout = 10s;
    cfg.limits.max_age = 60s;
    cfg.limits.max_age_jitter = 0;
    cfg.limits.handshake_timeout_min = {2s, 0.0};
    cfg.limits.max_age_min = {0ms, 0.5};
    std::vector<std::pair<duration, close_reason>> closes;
    liveness_recorder handler(io.get_executor());
    handler.also = [&](close_reason r) { closes.push_back({svc.since_start(), r}); };
    auto make = [&] { return std::make_unique<connection_liveness>(svc, cfg, handler, nullptr, &scale); };
    auto shaking = make();
    shaking->handshake_started();
    auto aging = make();
    aging->handshake_started();
    aging->handshake_done();
    scale.set_pressure(0.75); // scale 0.5: handshake 6 s, age 45 s
    svc.step_by(45s, 10ms);
    BOOST_TEST_REQUIRE(closes.size() == 2u);
    BOOST_TEST((closes[0] == std::pair<duration, close_reason>{6s, close_reason::handshake_timeout}));
    BOOST_TEST((closes[1] == std::pair<duration, close_reason>{45s, close_reason::max_age}));
}

BOOST_AUTO_TEST_CASE(overload_config_from_toml) {
    auto c = parse_liveness_config(R"(
[idle]
reader_idle = "30s"
[limits]
max_age = "10m"
[overload]
threshold = 0.7
reader_idle_min = "5s"
max_age_min = "25%"
)");
    BOOST_TEST(c.overload.threshold == 0.7);
    BOOST_TEST((c.idle.reader_idle_min.min == 5s));
    BOOST_TEST(c.limits.max_age_min.fraction == 0.25);
    BOOST_TEST((c.limits.max_age_min.of(c.limits.max_age) == 150s));
    // At the edge of the range: 100 % of the longest timeout is that timeout, not a double rounded up
    // past it and cast back (undefined: UBSan's float-cast-overflow), and a fraction never exceeds it.
    BOOST_TEST((scaled_min{0ms, 1.0}.of(milliseconds::max()) == milliseconds::max()));
    BOOST_TEST((scaled_min{0ms, 0.999999999}.of(milliseconds::max()) <= milliseconds::max()));
    BOOST_TEST((scaled_min{0ms, 0.5}.of(milliseconds(1001)) == milliseconds(500)));
    BOOST_TEST(!c.idle.writer_idle_min.enabled());
    auto fails_with = [](const char* text, const std::string& needle) {
        try {
            parse_liveness_config(text, "f.toml");
        } catch (const config_error& e) {
            BOOST_TEST(std::string(e.what()).find(needle) != std::string::npos, e.what());
            return;
        }
        BOOST_ERROR("accepted: " << text);
    };
    fails_with("[overload]\nthreshold = 1.5", "overload.threshold = 1.5 is out of range: accepted 0..0.99");
    fails_with("[overload]\nreader_idle_min = \"150%\"", "overload.reader_idle_min");
    fails_with("[overload]\nreader_idle_min = \"5\"", "overload.reader_idle_min = \"5\" is not valid");
    fails_with("[idle]\nreader_idle = 1000\n[overload]\nreader_idle_min = 5000",
               "overload.reader_idle_min = 5000 ms is out of range: accepted 1..1000 ms (at most idle.reader_idle, which is 1000 ms)");
    fails_with("[overload]\nbogus = 1", "overload.bogus");
}
