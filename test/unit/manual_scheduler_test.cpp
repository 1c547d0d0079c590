// manual_scheduler_test.cpp — heartwheel::testing::manual_scheduler, the manual clock users test their
// liveness logic with: time moves only when told, timers fire at their tick (never before), the
// stamp's lag is what the driver's contract allows, and a connection_liveness runs on it as on a
// real driver (the scenario docs/liveness.md shows). A whole net::connection on it, over an
// in-memory stream pair: memory_stream_test.cpp.
#include <heartwheel/net/policies/connection_liveness.hpp>
#include <heartwheel/testing/manual_scheduler.hpp>

#include <asio/io_context.hpp>

#include <boost/test/unit_test.hpp>

#include <memory>
#include <string>
#include <vector>

namespace {

using namespace std::chrono_literals;
using heartwheel::duration;
using heartwheel::time_point;
using heartwheel::testing::manual_scheduler;

struct stamped final : heartwheel::timer_node {
    explicit stamped(manual_scheduler& s) : clock(&s) {}
    manual_scheduler* clock;
    std::vector<duration> fired;
    void on_expire() override { fired.push_back(clock->since_start()); }
};

// What docs/liveness.md's snippet checks: a peer that answers pings and then goes silent.
struct peer final : heartwheel::net::liveness_handler, heartwheel::net::ping_writer {
    explicit peer(asio::any_io_executor e, manual_scheduler& c) : ex(std::move(e)), clock(&c) {}
    asio::any_io_executor ex;
    manual_scheduler* clock;
    std::vector<duration> pings;
    std::vector<std::pair<duration, heartwheel::net::close_reason>> closes;
    void send_ping() override { pings.push_back(clock->since_start()); }
    void on_policy_close(heartwheel::net::close_reason why) override { closes.emplace_back(clock->since_start(), why); }
    asio::any_io_executor completion_executor() override { return ex; }
};

} // namespace

BOOST_AUTO_TEST_SUITE(manual_scheduler_suite)

BOOST_AUTO_TEST_CASE(time_moves_only_forward_and_timers_fire_at_their_tick) {
    manual_scheduler clock(10ms);
    stamped a(clock), b(clock);
    clock.schedule(a, clock.now() + 25ms); // rounds up to the tick ending at 30 ms
    clock.schedule(b, clock.now() + 5s);
    BOOST_TEST(clock.pending() == 2u);
    BOOST_TEST(clock.advance_by(29ms) == 0u);
    BOOST_TEST(clock.advance_to(clock.start()) == 0u); // earlier: ignored
    BOOST_TEST((clock.since_start() == 29ms));
    BOOST_TEST(clock.advance_by(1ms) == 1u);
    BOOST_TEST((a.fired == std::vector<duration>{30ms}));
    // run_for goes straight to each wake-up the wheel asks for, and ends at the limit.
    BOOST_TEST(clock.run_for(10s) == 1u);
    BOOST_TEST((b.fired == std::vector<duration>{5000ms}));
    BOOST_TEST((clock.since_start() == 10030ms));
    BOOST_TEST(clock.pending() == 0u);
}

// A wheel that fires at most one timer per advance (wheel_config::max_fires_per_advance): run_for
// advances again at the same time until everything due has fired, as a driver does.
BOOST_AUTO_TEST_CASE(run_for_keeps_advancing_while_timers_are_due_past_the_budget) {
    heartwheel::wheel_config one_at_a_time;
    one_at_a_time.max_fires_per_advance = 1;
    manual_scheduler clock(one_at_a_time);
    stamped a(clock), b(clock), c(clock);
    for (stamped* t : {&a, &b, &c}) clock.schedule(*t, clock.now() + 10ms);
    BOOST_TEST(clock.run_for(1s) == 3u);
    for (stamped* t : {&a, &b, &c}) BOOST_TEST((t->fired == std::vector<duration>{10ms}));
    BOOST_TEST((clock.since_start() == 1s));
}

BOOST_AUTO_TEST_CASE(step_by_observes_each_firing_at_the_first_step_past_it) {
    manual_scheduler clock(10ms);
    stamped a(clock);
    clock.schedule(a, clock.now() + 25ms);
    BOOST_TEST(clock.step_by(100ms) == 1u); // steps of one tick
    BOOST_TEST((a.fired == std::vector<duration>{30ms}));
    clock.schedule(a, clock.now() + 25ms);
    BOOST_TEST(clock.step_by(100ms, 40ms) == 1u); // a driver waking every 40 ms sees it at 140
    BOOST_TEST((a.fired == std::vector<duration>{30ms, 140ms}));
}

// A driver's cached clock lags real time between refreshes; code must count its deadlines from the
// latest time a stamp may stand for, never from the stamp (deadline_after does).
BOOST_AUTO_TEST_CASE(a_stamp_lags_by_what_the_test_sets_and_deadlines_count_from_the_latest_time) {
    manual_scheduler clock;
    clock.advance_by(1s);
    clock.set_stamp_lag(7ms);
    BOOST_TEST((clock.stamp() == clock.now() - 7ms));
    BOOST_TEST((clock.latest_possible(clock.stamp()) == clock.now()));
    BOOST_TEST((clock.deadline_after(30s) == clock.now() + 30s));
}

// The whole liveness on the manual clock: pings after 10 s of inbound silence; the peer answers the
// first two within 20 ms, then goes silent. The first unanswered ping goes 10 s after the last
// answer; with 5 s to answer and two misses allowed, the peer is closed heartbeat-timeout
// (misses - 1) * interval + timeout = 15 s after that ping, 25 s after its last answer — never
// before. No sleep anywhere: the test takes microseconds.
BOOST_AUTO_TEST_CASE(a_connection_liveness_runs_on_the_manual_clock) {
    asio::io_context io;
    manual_scheduler clock;
    heartwheel::net::liveness_config config;
    config.heartbeat.interval = 10s;
    config.heartbeat.timeout = 5s;
    config.heartbeat.misses = 2;
    config.heartbeat.jitter = 0;
    peer p(io.get_executor(), clock);
    heartwheel::net::connection_liveness live(clock, config, p);
    live.set_ping_writer(&p);
    for (int answered = 0; answered < 2; ++answered) {
        const std::size_t pings = p.pings.size();
        clock.run_for(10s);
        BOOST_TEST_REQUIRE(p.pings.size() == pings + 1);
        clock.advance_by(20ms);
        live.on_read(); // answered 20 ms later: the pong's bytes, then the pong
        live.on_pong();
    }
    const duration last_answer = clock.since_start();
    BOOST_TEST((p.pings == std::vector<duration>{10s, 20020ms}));
    clock.run_for(25s - 1ms);
    BOOST_TEST(p.closes.empty());
    BOOST_TEST((p.pings == std::vector<duration>{10s, 20020ms, 30040ms, 40040ms}));
    clock.run_for(1ms);
    BOOST_TEST_REQUIRE(p.closes.size() == 1u);
    BOOST_TEST((p.closes[0].first - last_answer == 25s));
    BOOST_TEST((p.closes[0].second == heartwheel::net::close_reason::heartbeat_timeout));
}

// A handshake (TLS, a WebSocket upgrade) cannot carry a ping: while it lasts the heartbeat is off and
// the handshake's deadline judges that phase; the ping schedule starts when it ends. A peer 5 s into
// a handshake with a 1 s heartbeat (dead after two misses, 2 s of silence) is not closed
// heartbeat-timeout; once the handshake is done it is pinged a second later and, never answering,
// closed 3 s after the handshake's end. (With the heartbeat running through the handshake it was
// closed heartbeat-timeout 2 s after it began.)
// A connection's liveness with a 1 s heartbeat (dead after two misses) and a 10 s handshake deadline,
// its handshake begun at time 0.
struct mid_handshake {
    static heartwheel::net::liveness_config config() {
        heartwheel::net::liveness_config c;
        c.heartbeat.interval = 1s;
        c.heartbeat.timeout = 1s;
        c.heartbeat.misses = 2;
        c.heartbeat.jitter = 0;
        c.limits.handshake_timeout = 10s;
        return c;
    }
    mid_handshake() {
        live.set_ping_writer(&p);
        live.handshake_started();
    }
    asio::io_context io;
    manual_scheduler clock;
    const heartwheel::net::liveness_config cfg = config();
    peer p{io.get_executor(), clock};
    heartwheel::net::connection_liveness live{clock, cfg, p};
};

BOOST_FIXTURE_TEST_CASE(no_heartbeat_judges_a_peer_mid_handshake, mid_handshake) {
    clock.run_for(5s);
    BOOST_TEST(p.closes.empty());
    BOOST_TEST(p.pings.empty());
    live.handshake_done();
    clock.run_for(1s);
    BOOST_TEST((p.pings == std::vector<duration>{6s}));
    clock.run_for(2s - 1ms);
    BOOST_TEST(p.closes.empty());
    clock.run_for(1ms);
    BOOST_TEST_REQUIRE(p.closes.size() == 1u);
    BOOST_TEST((p.closes[0].first == 8s));
    BOOST_TEST((p.closes[0].second == heartwheel::net::close_reason::heartbeat_timeout));
}

// A handshake that never ends is the handshake deadline's, whatever the heartbeat says.
BOOST_FIXTURE_TEST_CASE(a_stalled_handshake_is_closed_by_its_deadline_not_the_heartbeat, mid_handshake) {
    clock.run_for(11s);
    BOOST_TEST_REQUIRE(p.closes.size() == 1u);
    BOOST_TEST((p.closes[0].first == 10s));
    BOOST_TEST((p.closes[0].second == heartwheel::net::close_reason::handshake_timeout));
}

// An activity that only pushes a deadline later is a store: the scheduler counts no filing for it.
BOOST_AUTO_TEST_CASE(schedule_count_shows_that_a_read_costs_no_timer_work) {
    asio::io_context io;
    manual_scheduler clock;
    heartwheel::net::liveness_config config;
    config.idle.reader_idle = 30s;
    peer p(io.get_executor(), clock);
    heartwheel::net::connection_liveness live(clock, config, p);
    clock.advance_by(1s);
    const auto before = clock.schedule_count();
    for (int i = 0; i < 100; ++i) {
        clock.advance_by(10ms);
        live.on_read();
    }
    BOOST_TEST(clock.schedule_count() == before);
    clock.run_for(30s);
    BOOST_TEST_REQUIRE(p.closes.size() == 1u);
    BOOST_TEST((p.closes[0].first == 2s + 30s));
    BOOST_TEST((p.closes[0].second == heartwheel::net::close_reason::reader_idle));
}

BOOST_AUTO_TEST_SUITE_END()
