// idle_heartbeat_test.cpp — idle state, read/write timeouts and heartbeats on a manual clock: exact
// firing ticks, first/repeat flags, lazy re-arm, never early with a stale clock, jitter bounds.
#define BOOST_TEST_MODULE idle_heartbeat
#include <boost/test/unit_test.hpp>

#include <heartwheel/net/policies/heartbeat.hpp>
#include <heartwheel/net/policies/connection_liveness.hpp>

#include "idle_listener.hpp"
#include "manual_service.hpp"

#include <cstdint>
#include <limits>
#include <random>

using namespace hwtest;
using namespace heartwheel::net;

namespace {
struct recorded {
    duration at;
    idle_event e;
};
} // namespace

BOOST_AUTO_TEST_CASE(reader_idle_fires_at_its_tick_then_repeats) {
    manual_service svc;
    std::vector<recorded> got;
    idle_policy p;
    p.reader_idle = 100ms;
    idle_listener on(svc, [&](idle_event e) { got.push_back({svc.since_start(), e}); });
    connection_liveness idle(svc, idle_only(p), on);
    svc.step_by(99ms);
    BOOST_TEST(got.empty());
    svc.step_by(1ms);
    BOOST_TEST_REQUIRE(got.size() == 1u);
    BOOST_TEST((got[0].at == 100ms));
    BOOST_TEST((got[0].e.kind == idle_kind::reader));
    BOOST_TEST(got[0].e.first);
    svc.step_by(100ms);
    BOOST_TEST_REQUIRE(got.size() == 2u);
    BOOST_TEST((got[1].at == 200ms));
    BOOST_TEST(!got[1].e.first); // still idle: a repeat
    svc.step_by(10ms);
    idle.on_read(); // activity at 210 ms
    svc.step_by(99ms);
    BOOST_TEST(got.size() == 2u);
    svc.step_by(1ms);
    BOOST_TEST_REQUIRE(got.size() == 3u);
    BOOST_TEST((got[2].at == 310ms));
    BOOST_TEST(got[2].e.first); // first again after activity
}

BOOST_AUTO_TEST_CASE(recording_activity_does_not_reschedule) {
    manual_service svc;
    idle_policy p;
    p.reader_idle = 50ms;
    p.all_idle = 80ms;
    int events = 0;
    idle_listener on(svc, [&](idle_event) { ++events; });
    connection_liveness idle(svc, idle_only(p), on);
    const auto schedules = svc.schedule_count();
    for (int i = 0; i < 1000; ++i) idle.on_read();
    BOOST_TEST(svc.schedule_count() == schedules); // a store, no timer work
    svc.step_by(40ms);
    idle.on_read();
    svc.step_by(50ms); // one node: at 50 re-filed lazily for the reader's 90; at 90 the reader
                       // fires, and the node is filed for the all kind's 120
    BOOST_TEST(events == 1);
    BOOST_TEST(svc.schedule_count() == schedules + 2u);
    BOOST_TEST(svc.wheel().size() == 1u);
}

BOOST_AUTO_TEST_CASE(writer_and_all_idle_and_write_progress) {
    for (bool progress_counts : {true, false}) {
        manual_service svc;
        std::vector<recorded> got;
        idle_policy p;
        p.writer_idle = 30ms;
        p.all_idle = 50ms;
        p.write_progress_is_activity = progress_counts;
        idle_listener on(svc, [&](idle_event e) { got.push_back({svc.since_start(), e}); });
        connection_liveness idle(svc, idle_only(p), on);
        // A slow write: a few bytes every 20 ms, never completing.
        for (int i = 0; i < 4; ++i) {
            svc.step_by(20ms);
            idle.on_write_progress();
        }
        if (progress_counts) {
            BOOST_TEST(got.empty()); // slow but draining: never writer- or all-idle
        } else {
            BOOST_TEST_REQUIRE(got.size() >= 2u);
            BOOST_TEST((got[0].at == 30ms));
            BOOST_TEST((got[0].e.kind == idle_kind::writer));
            BOOST_TEST((got[1].at == 50ms));
            BOOST_TEST((got[1].e.kind == idle_kind::all));
        }
    }
}

BOOST_AUTO_TEST_CASE(zero_disables) {
    manual_service svc;
    int events = 0;
    idle_listener on(svc, [&](idle_event) { ++events; });
    connection_liveness idle(svc, idle_only(idle_policy{}), on);
    BOOST_TEST(svc.wheel().empty());
    svc.step_by(1s, 10ms);
    BOOST_TEST(events == 0);
}

BOOST_AUTO_TEST_CASE(never_early_with_a_stale_cached_clock) {
    manual_service svc;
    svc.set_stamp_lag(7ms); // stamps are up to 7 ms behind real time
    idle_policy p;
    p.reader_idle = 100ms;
    std::vector<duration> at;
    idle_listener on(svc, [&](idle_event) { at.push_back(svc.since_start()); });
    connection_liveness idle(svc, idle_only(p), on);
    svc.step_by(20ms);
    idle.on_read(); // real time 20 ms, stamped 13 ms
    svc.step_by(150ms);
    BOOST_TEST_REQUIRE(!at.empty());
    BOOST_TEST((at[0] >= 120ms)); // a full 100 ms after the real read
    BOOST_TEST((at[0] <= 120ms + 7ms + 1ms)); // late by at most the stamp's uncertainty and a tick
}

// Two kinds due at once: a handler that closes the liveness at the first event hears no second one,
// and nothing is left filed.
BOOST_AUTO_TEST_CASE(closing_from_an_idle_event_stops_the_rest) {
    manual_service svc;
    idle_policy p;
    p.reader_idle = 10ms;
    p.all_idle = 10ms;
    std::unique_ptr<connection_liveness> idle;
    int events = 0;
    idle_listener on(svc, [&](idle_event) {
        ++events;
        idle->close();
    });
    idle = std::make_unique<connection_liveness>(svc, idle_only(p), on);
    svc.step_by(20ms);
    BOOST_TEST(events == 1);
    BOOST_TEST(idle->closed());
    BOOST_TEST(svc.wheel().empty());
}

// Both due at once and the handler closes on neither: both events, at the same time, each once.
BOOST_AUTO_TEST_CASE(kinds_due_together_fire_together) {
    manual_service svc;
    idle_policy p;
    p.reader_idle = 10ms;
    p.all_idle = 10ms;
    std::vector<recorded> got;
    idle_listener on(svc, [&](idle_event e) { got.push_back({svc.since_start(), e}); });
    connection_liveness idle(svc, idle_only(p), on);
    svc.step_by(10ms);
    BOOST_TEST_REQUIRE(got.size() == 2u);
    BOOST_TEST((got[0].e.kind == idle_kind::reader));
    BOOST_TEST((got[1].e.kind == idle_kind::all));
    BOOST_TEST((got[0].at == 10ms && got[1].at == 10ms));
    BOOST_TEST(svc.wheel().size() == 1u); // one node for both
}

// A wake-up many periods late (a stalled process) gives one event per kind, not one per period
// missed, and the next comes at the next whole period after the last activity: no drift either.
BOOST_AUTO_TEST_CASE(a_late_wakeup_gives_one_event_then_the_period_grid) {
    manual_service svc;
    idle_policy p;
    p.reader_idle = 100ms;
    std::vector<recorded> got;
    idle_listener on(svc, [&](idle_event e) { got.push_back({svc.since_start(), e}); });
    connection_liveness idle(svc, idle_only(p), on);
    svc.advance_by(1050ms); // one advance, 10.5 periods in
    BOOST_TEST_REQUIRE(got.size() == 1u);
    BOOST_TEST(got[0].e.first);
    svc.step_by(49ms);
    BOOST_TEST(got.size() == 1u);
    svc.step_by(1ms);
    BOOST_TEST_REQUIRE(got.size() == 2u);
    BOOST_TEST((got[1].at == 1100ms)); // 11 periods after the last activity, not 1050 + 100
    BOOST_TEST(!got[1].e.first);
}

// While the peer's bytes wait unread (a stall), the event waits: looked at again every
// unread_input_recheck, fired once they are gone without a read (a dead peer has none waiting).
BOOST_AUTO_TEST_CASE(an_idle_event_waits_while_input_is_unread) {
    manual_service svc;
    idle_policy p;
    p.reader_idle = 100ms;
    std::vector<recorded> got;
    idle_listener on(svc, [&](idle_event e) { got.push_back({svc.since_start(), e}); });
    on.input = true;
    connection_liveness idle(svc, idle_only(p), on);
    svc.step_by(100ms);
    const auto schedules = svc.schedule_count();
    svc.step_by(30ms);
    BOOST_TEST(got.empty());
    BOOST_TEST(svc.schedule_count() <= schedules + 4u); // a look every 10 ms, not a re-arm every tick
    on.input = false;
    svc.step_by(10ms);
    BOOST_TEST_REQUIRE(got.size() == 1u);
    BOOST_TEST((got[0].at > 130ms && got[0].at <= 140ms));
}

namespace {
// Records what a heartbeat asks of its owner, with the time it asked.
struct hb_log final : heartbeat::listener, ping_writer {
    explicit hb_log(manual_service& s) : heartbeat::listener(s, nullptr), svc(&s) { set_ping_writer(this); }
    manual_service* svc;
    std::function<double()> rnd;      ///< the jitter's source (the default one when empty)
    std::function<void()> after_ping; ///< runs after each ping is recorded
    std::vector<duration> pings, misses;
    std::optional<duration> dead;
    heartbeat_policy policy; ///< make_hb's: a heartbeat reads its policy, which outlives it

    void close_for(close_reason) override {} // a heartbeat closes through on_dead
    bool input_waiting() override { return false; }
    void send_ping() override {
        pings.push_back(svc->since_start());
        if (after_ping) after_ping();
    }
    void on_dead() override { dead = svc->since_start(); }
    void on_miss() override { misses.push_back(svc->since_start()); }
    double uniform() override { return rnd ? rnd() : heartbeat::listener::uniform(); }
};

heartbeat make_hb(hb_log& log, const heartbeat_policy& p) {
    log.policy = p;
    return heartbeat(log.policy, log);
}
/// A policy whose times are the formula's exactly: no jitter, no RTT floor.
heartbeat_policy exact_policy(duration interval, duration timeout, std::uint32_t misses) {
    heartbeat_policy p;
    p.interval = std::chrono::duration_cast<milliseconds>(interval);
    p.timeout = std::chrono::duration_cast<milliseconds>(timeout);
    p.misses = misses;
    p.jitter = 0;
    p.rtt_factor = 0;
    return p;
}
} // namespace

BOOST_AUTO_TEST_CASE(heartbeat_pings_after_outbound_silence_and_closes_after_misses) {
    manual_service svc;
    hb_log log(svc);
    heartbeat_policy p;
    p.trigger = heartbeat_trigger::outbound; // timed by writes (the inbound default: below)
    p.interval = 100ms;
    p.timeout = 40ms;
    p.misses = 3;
    auto hb = make_hb(log, p);
    svc.step_by(50ms);
    hb.on_write(svc.stamp()); // outbound traffic at 50: the first ping moves to 150
    svc.step_by(100ms);
    BOOST_TEST_REQUIRE(log.pings.size() == 1u);
    BOOST_TEST((log.pings[0] == 150ms));
    svc.step_by(40ms);
    BOOST_TEST_REQUIRE(log.misses.size() == 1u);
    BOOST_TEST((log.misses[0] == 190ms));
    svc.step_by(200ms); // pings at 250, 350; misses at 290, 390 -> dead at the third
    BOOST_TEST((log.pings == std::vector<duration>{150ms, 250ms, 350ms}));
    BOOST_TEST_REQUIRE(log.dead.has_value());
    BOOST_TEST((*log.dead == 390ms)); // (misses - 1) * interval + timeout after the first ping
}

BOOST_AUTO_TEST_CASE(heartbeat_inbound_trigger_pings_after_inbound_silence_while_we_keep_sending) {
    // The default trigger (gRPC's keepalive): a busy sender whose peer froze still pings it and
    // finds it dead; reads, not writes, put the ping off.
    manual_service svc;
    hb_log log(svc);
    heartbeat_policy p; // trigger inbound: the default
    p.interval = 100ms;
    p.timeout = 40ms;
    p.misses = 2;
    auto hb = make_hb(log, p);
    svc.step_by(50ms);
    hb.on_read(svc.stamp()); // a byte received at 50: the first ping moves to 150
    for (int i = 0; i < 40; ++i) {
        svc.step_by(10ms);
        hb.on_write(svc.stamp()); // we send every 10 ms; the peer says nothing more
    }
    BOOST_TEST((log.pings == std::vector<duration>{150ms, 250ms}));
    BOOST_TEST((log.misses == std::vector<duration>{190ms, 290ms}));
    BOOST_TEST_REQUIRE(log.dead.has_value());
    BOOST_TEST((*log.dead == 290ms)); // P + (misses - 1) * interval + timeout, P = last byte received + interval

    // The outbound trigger, the same traffic: the writes keep putting the ping off, so the frozen
    // peer is never pinged (why inbound is the default).
    manual_service svc2;
    hb_log log2(svc2);
    p.trigger = heartbeat_trigger::outbound;
    auto hb2 = make_hb(log2, p);
    for (int i = 0; i < 45; ++i) {
        svc2.step_by(10ms);
        hb2.on_write(svc2.stamp());
    }
    BOOST_TEST(log2.pings.empty());
    BOOST_TEST(!log2.dead.has_value());
}

BOOST_AUTO_TEST_CASE(heartbeat_pings_stay_on_their_grid_whatever_the_tick) {
    // A 105 ms interval on a 10 ms tick, a silent peer: each ping fires at the start of the tick it
    // falls due in. The next is timed from when this one fell due, not from when its tick ran, so
    // the rounding does not add up: the k-th ping goes out within the tick before k * 105 ms (once,
    // each drifted up to a tick more than the last), and the death the formula gives within a tick
    // after it, never before.
    manual_service svc(10ms);
    hb_log log(svc);
    heartbeat_policy p;
    p.interval = 105ms;
    p.timeout = 50ms;
    p.misses = 11;
    auto hb = make_hb(log, p);
    svc.step_by(1300ms, 10ms);
    BOOST_TEST_REQUIRE(log.pings.size() == 11u);
    for (std::size_t k = 0; k < log.pings.size(); ++k) {
        const auto ideal = (k + 1) * 105ms;
        BOOST_TEST((log.pings[k] <= ideal), k << ": " << log.pings[k].count());
        BOOST_TEST((log.pings[k] > ideal - 10ms), k << ": " << log.pings[k].count());
    }
    BOOST_TEST_REQUIRE(log.dead.has_value()); // P + (misses - 1) * interval + timeout = 1,205 ms, within a tick
    BOOST_TEST((*log.dead >= 1205ms));
    BOOST_TEST((*log.dead < 1215ms + 10ms));
}

// The activity clock bounds a stamp by the span of the batches since it (here 3 ms: manual_service's
// lag). A ping's base is an exact time, not a stamp: the next ping must be due at base + interval,
// not 3 ms later ping after ping (before: 100, 203, 306, 409 ms — the drift the peers saw as ~1 ms
// per ping in a busy server).
BOOST_AUTO_TEST_CASE(an_exact_ping_base_is_not_bounded_like_a_stamp) {
    manual_service svc;
    svc.set_stamp_lag(3ms);
    hb_log log(svc);
    heartbeat_policy p;
    p.interval = 100ms;
    p.timeout = 50ms;
    p.misses = 5;
    p.rtt_factor = 0;
    auto hb = make_hb(log, p);
    svc.step_by(700ms);
    BOOST_TEST_REQUIRE(log.pings.size() == 5u);
    // The first counts from the stamp taken at the start (now - 3 ms, bounded by + 3 ms): at 100.
    for (std::size_t k = 0; k < log.pings.size(); ++k)
        BOOST_TEST((log.pings[k] == (k + 1) * 100ms), k << ": " << log.pings[k].count());
    BOOST_TEST_REQUIRE(log.dead.has_value());
    BOOST_TEST((*log.dead == 550ms)); // P + (misses - 1) * interval + timeout
}

// A pong is timed exactly (the connection reads a fresh clock for it: one read per ping round, not per
// read), so the next ping counts from the pong itself, not from its batch's bound. Batch-bounded pongs
// gave every connection read in one batch the same ping time, round after round: thousands of peers
// pinged in lockstep, each burst delaying the next round's pongs (bench/ws_idle: death seen 9.8 ms
// late at the median, 4.3 with exact pongs). A stamped read in the same batch, before or after the
// pong (its bytes), does not undo the exact time.
BOOST_AUTO_TEST_CASE(the_ping_after_a_pong_counts_from_the_pong_exactly) {
    manual_service svc;
    svc.set_stamp_lag(3ms); // a batch's bound: a stamp is up to 3 ms before the read
    hb_log log(svc);
    heartbeat_policy p;
    p.interval = 100ms;
    p.timeout = 50ms;
    p.misses = 2;
    p.rtt_factor = 0;
    auto hb = make_hb(log, p);
    svc.step_by(107ms); // the first ping (from the start's stamp, bounded), then 7 ms of waiting
    BOOST_TEST_REQUIRE(log.pings.size() == 1u);
    const auto pong_at = svc.since_start();
    hb.on_read(svc.stamp()); // the pong's bytes, stamped with the batch
    hb.on_pong(svc.now());   // the pong, at a fresh clock
    hb.on_read(svc.stamp()); // another read later in the same batch
    svc.step_by(120ms);
    BOOST_TEST_REQUIRE(log.pings.size() == 2u);
    BOOST_TEST((log.pings[1] == pong_at + 100ms), log.pings[1].count() << " vs " << (pong_at + 100ms).count());
}

// timeout == interval: the next ping falls due in the same tick as the last one's judgement. The
// judgement must still happen (it once did not: the ping re-armed the miss check first, so a silent
// peer was pinged forever and never closed); the ping goes out right after it, in the same tick.
BOOST_AUTO_TEST_CASE(heartbeat_timeout_equal_to_interval_still_counts_misses) {
    for (bool silent_write : {false, true}) {
        manual_service svc;
        hb_log log(svc);
        heartbeat_policy p;
        p.interval = 100ms;
        p.timeout = 100ms;
        p.misses = 2;
        std::optional<heartbeat> hb;
        log.after_ping = [&] {
            if (silent_write) hb->on_write(svc.stamp()); // the ping is a write
        };
        hb.emplace(p, log);
        svc.step_by(350ms);
        BOOST_TEST((log.misses == std::vector<duration>{200ms, 300ms}));
        BOOST_TEST((log.pings == std::vector<duration>{100ms, 200ms}));
        BOOST_TEST_REQUIRE(log.dead.has_value());
        BOOST_TEST((*log.dead == 300ms)); // P + (misses - 1) * interval + timeout, P = 100
    }
}

BOOST_AUTO_TEST_CASE(heartbeat_answered_pings_keep_it_alive_and_give_rtt) {
    manual_service svc;
    hb_log log(svc);
    heartbeat_policy p;
    p.trigger = heartbeat_trigger::outbound; // timed by writes (the inbound default: below)
    p.interval = 100ms;
    p.timeout = 50ms;
    p.misses = 2;
    auto hb = make_hb(log, p);
    svc.step_by(100ms); // first ping at 100
    std::optional<duration> rtt;
    for (int i = 0; i < 10; ++i) {
        svc.step_by(5ms);
        rtt = hb.on_pong(svc.stamp()); // answered 5 ms after each ping
        svc.step_by(95ms);
    }
    BOOST_TEST(log.pings.size() == 11u);
    BOOST_TEST(log.misses.empty());
    BOOST_TEST(!log.dead);
    BOOST_TEST_REQUIRE(rtt.has_value());
    BOOST_TEST((*rtt == 5ms));
    BOOST_TEST(hb.on_pong(svc.stamp()).has_value()); // the 11th ping's answer
    BOOST_TEST(!hb.on_pong(svc.stamp()).has_value()); // a second pong answers no ping: no sample
}

BOOST_AUTO_TEST_CASE(heartbeat_any_read_resets_misses) {
    manual_service svc;
    hb_log log(svc);
    heartbeat_policy p;
    p.trigger = heartbeat_trigger::outbound; // timed by writes (the inbound default: below)
    p.interval = 100ms;
    p.timeout = 50ms;
    p.misses = 2;
    auto hb = make_hb(log, p);
    svc.step_by(150ms); // ping at 100, miss at 150
    BOOST_TEST(hb.consecutive_misses() == 1u);
    svc.step_by(20ms);
    hb.on_read(svc.stamp()); // some data (not a pong) at 170
    svc.step_by(80ms);       // ping at 200, nothing after it: a miss, but the count restarted
    svc.step_by(50ms);
    BOOST_TEST(hb.consecutive_misses() == 1u);
    BOOST_TEST(!log.dead);
    svc.step_by(100ms); // ping at 300, miss at 350: second consecutive
    BOOST_TEST(log.dead.has_value());
}

BOOST_AUTO_TEST_CASE(heartbeat_jitter_stays_in_bounds_with_a_seeded_source) {
    manual_service svc;
    hb_log log(svc);
    heartbeat_policy p;
    p.interval = 1000ms;
    p.timeout = 100ms;
    p.misses = 1000;
    p.jitter = 0.2;
    std::mt19937_64 engine(99);
    log.rnd = [&] { return std::uniform_real_distribution<double>(0, 1)(engine); };
    auto hb = make_hb(log, p);
    svc.step_by(60s, 1ms);
    BOOST_TEST_REQUIRE(log.pings.size() > 40u);
    bool varied = false;
    for (std::size_t i = 1; i < log.pings.size(); ++i) {
        const auto gap = log.pings[i] - log.pings[i - 1];
        BOOST_TEST((gap >= 800ms));
        BOOST_TEST((gap <= 1201ms));
        if (gap != log.pings[1] - log.pings[0]) varied = true;
    }
    BOOST_TEST(varied);
}

// timeout > interval (Dubbo's default is 3 x interval): one ping outstanding at a time, so against a
// silent peer the pings are `timeout` apart and death comes at P + misses * timeout.
BOOST_AUTO_TEST_CASE(heartbeat_timeout_longer_than_interval_judges_every_ping) {
    manual_service svc;
    hb_log log(svc);
    heartbeat_policy p;
    p.interval = 1000ms;
    p.timeout = 2000ms;
    p.misses = 3;
    auto hb = make_hb(log, p);
    svc.step_by(8s, 10ms);
    BOOST_TEST((log.pings == std::vector<duration>{1000ms, 3000ms, 5000ms}));
    BOOST_TEST((log.misses == std::vector<duration>{3000ms, 5000ms, 7000ms}));
    BOOST_TEST_REQUIRE(log.dead.has_value());
    BOOST_TEST((*log.dead == 7000ms)); // P + misses * timeout, P = 1000
}

// timeout > interval and a peer that answers: the next ping follows the answer's interval, it does
// not wait for the (cancelled) judgement; a ping that fell due while one was outstanding goes out
// as soon as the answer arrives.
BOOST_AUTO_TEST_CASE(heartbeat_answered_ping_frees_the_next_one) {
    manual_service svc;
    hb_log log(svc);
    heartbeat_policy p;
    p.trigger = heartbeat_trigger::outbound; // timed by writes (the inbound default: below)
    p.interval = 100ms;
    p.timeout = 300ms;
    p.misses = 1;
    p.rtt_factor = 0; // the scheduling alone; the RTT floor has its own test
    auto hb = make_hb(log, p);
    svc.step_by(105ms); // ping at 100
    hb.on_pong(svc.stamp());
    svc.step_by(95ms); // the next at 200: an interval after the last ping
    BOOST_TEST((log.pings == std::vector<duration>{100ms, 200ms}));
    svc.step_by(150ms); // due at 300 but 200's is outstanding: held back
    BOOST_TEST(log.pings.size() == 2u);
    const auto rtt = hb.on_pong(svc.stamp()); // answered late, at 350: the held-back ping goes out now
    BOOST_TEST((log.pings == std::vector<duration>{100ms, 200ms, 350ms}));
    // From here nobody answers. The ping due at 450 waits for the 350 ping's judgement at 650, which
    // finds it missed: the pong read at 350 was handled before that ping left, so it cannot be its
    // answer, though its stamp is the ping's instant (judged by stamps it was given a round more).
    svc.step_by(650ms, 5ms);
    BOOST_TEST((log.pings == std::vector<duration>{100ms, 200ms, 350ms}));
    BOOST_TEST((log.misses == std::vector<duration>{650ms}));
    BOOST_TEST_REQUIRE(log.dead.has_value());
    BOOST_TEST((*log.dead == 650ms));
    BOOST_TEST_REQUIRE(rtt.has_value());
    BOOST_TEST((*rtt == 150ms));
}

// A ping that fell due while the previous one was outstanding goes out at that one's judgement —
// unless activity since has put it off: the trigger's silence counts from the activity (the heartbeat
// asks when the next ping is due as it judges, rather than remembering that one fell due). Then the
// streak goes on as the formula says.
BOOST_AUTO_TEST_CASE(activity_during_a_judgement_puts_the_held_back_ping_off) {
    manual_service svc;
    hb_log log(svc);
    auto hb = make_hb(log, exact_policy(100ms, 300ms, 3)); // inbound: timed by reads
    svc.step_by(100ms); // ping at 100, judged at 400; the next falls due at 200 and is held back
    BOOST_TEST((log.pings == std::vector<duration>{100ms}));
    svc.step_by(250ms);
    hb.on_read(svc.stamp()); // at 350, not an answer: the next ping is due at 450 now
    svc.step_by(50ms);       // the judgement at 400: no miss (a read), and no ping yet
    BOOST_TEST(log.misses.empty());
    BOOST_TEST((log.pings == std::vector<duration>{100ms}));
    svc.step_by(50ms); // 450: the ping
    BOOST_TEST((log.pings == std::vector<duration>{100ms, 450ms}));
    // Silent from here: 450 judged at 750 (the ping due at 550 goes then), 750 at 1050, 1050 at 1350.
    svc.step_by(1s, 5ms);
    BOOST_TEST((log.pings == std::vector<duration>{100ms, 450ms, 750ms, 1050ms}));
    BOOST_TEST((log.misses == std::vector<duration>{750ms, 1050ms, 1350ms}));
    BOOST_TEST_REQUIRE(log.dead.has_value());
    BOOST_TEST((*log.dead == 1350ms)); // P + (misses - 1) * max(interval, timeout) + timeout, P = 450
}

// A pong (or activity) after stop() re-arms nothing: a closing connection still reads, and may read
// a pong, after its liveness stopped the heartbeat; so may a heartbeat whose policy is off.
BOOST_AUTO_TEST_CASE(a_pong_after_stop_rearms_nothing) {
    manual_service svc;
    hb_log log(svc);
    auto hb = make_hb(log, exact_policy(100ms, 100ms, 3));
    svc.step_by(150ms); // ping at 100, outstanding
    BOOST_TEST((log.pings == std::vector<duration>{100ms}));
    hb.stop();
    BOOST_TEST(svc.wheel().empty());
    hb.on_read(svc.stamp());
    const auto rtt = hb.on_pong(svc.stamp()); // still a round trip: the ping was answered
    BOOST_TEST(rtt.has_value());
    BOOST_TEST(svc.wheel().empty());
    svc.step_by(1s, 10ms);
    BOOST_TEST((log.pings == std::vector<duration>{100ms}));
    BOOST_TEST(log.misses.empty());

    hb_log off_log(svc);
    auto off = make_hb(off_log, heartbeat_policy{}); // interval 0: off
    svc.step_by(1s, 10ms);
    off.on_pong(svc.stamp());
    svc.step_by(1s, 10ms);
    BOOST_TEST(off_log.pings.empty());
    BOOST_TEST(svc.wheel().empty());
}

BOOST_AUTO_TEST_CASE(heartbeat_validation_names_fields) {
    heartbeat_policy p;
    p.interval = 1000ms;
    p.timeout = 5000ms;
    BOOST_CHECK_NO_THROW(p.validate()); // independent of the interval
    p.timeout = 0ms;
    try {
        p.validate();
        BOOST_FAIL("expected config_error");
    } catch (const config_error& e) {
        const std::string what = e.what();
        BOOST_TEST(what.find("heartbeat.timeout") != std::string::npos);
        BOOST_TEST(what.find("1..") != std::string::npos);
    }
    p.timeout = 100ms;
    p.misses = 0;
    BOOST_CHECK_THROW(p.validate(), config_error);
    p.misses = 3;
    p.jitter = 0.9;
    BOOST_CHECK_THROW(p.validate(), config_error);
    // A heartbeat judges its policy before it converts any of it: an interval past the range (whose
    // nanoseconds would overflow) is a config_error, not undefined behaviour (UBSan's build).
    p.jitter = 0;
    p.interval = milliseconds::max();
    manual_service svc;
    hb_log log(svc);
    BOOST_CHECK_THROW(make_hb(log, p), config_error);
    BOOST_TEST(svc.wheel().empty());
}

// The dead timeout respects the path: RFC 6298's estimator over the pong round trips, and a ping is
// judged no earlier than rtt_factor * (srtt + 4 * rttvar) after it — never shorter than configured.
BOOST_AUTO_TEST_CASE(heartbeat_miss_judged_no_earlier_than_the_rtt_floor) {
    for (double k : {3.0, 0.0}) {
        manual_service svc;
        hb_log log(svc);
        heartbeat_policy p;
        p.trigger = heartbeat_trigger::outbound; // timed by writes
        p.interval = 100ms;
        p.timeout = 50ms;
        p.misses = 1;
        p.rtt_factor = k;
        auto hb = make_hb(log, p);
        BOOST_TEST((hb.effective_timeout() == 50ms)); // no sample yet: as configured
        BOOST_TEST(!hb.srtt().has_value());
        BOOST_TEST((hb.rttvar() == duration::zero()));
        svc.step_by(100ms);                           // ping at 100
        svc.step_by(40ms);
        hb.on_pong(svc.stamp()); // RTT 40: srtt 40, rttvar 20
        BOOST_TEST((*hb.srtt() == 40ms));
        BOOST_TEST((hb.rttvar() == 20ms));
        svc.step_by(60ms); // ping at 200
        svc.step_by(20ms);
        hb.on_pong(svc.stamp()); // RTT 20: rttvar = 15 + 5 = 20, srtt = 35 + 2.5 = 37.5
        BOOST_TEST((hb.rttvar() == 20ms));
        BOOST_TEST((*hb.srtt() == 37500us));
        const auto floor = k > 0 ? std::chrono::duration_cast<duration>(3 * (37500us + 4 * 20ms)) : duration(50ms);
        BOOST_TEST((hb.effective_timeout() == floor)); // 352.5 ms with k = 3
        svc.step_by(80ms); // ping at 300; from here nobody answers
        BOOST_TEST(log.pings.size() == 3u);
        svc.step_by(1s, 1ms);
        BOOST_TEST_REQUIRE(log.dead.has_value());
        const auto expected = k > 0 ? 300ms + 353ms : 350ms; // rounded up to the 1 ms tick
        BOOST_TEST((*log.dead == expected), "k = " << k);
    }
    // A fast path never shortens the configured timeout.
    manual_service svc;
    hb_log log(svc);
    heartbeat_policy p;
    p.interval = 100ms;
    p.timeout = 50ms;
    auto hb = make_hb(log, p);
    svc.step_by(101ms);
    hb.on_pong(svc.stamp()); // RTT 1 ms: floor 3 * (1 + 2) = 9 ms < 50
    BOOST_TEST((hb.effective_timeout() == 50ms));
}

// The estimator keeps whole microseconds in 32 bits: a round trip past 71 minutes (a policy of
// hours) saturates it instead of wrapping to a short one, and the round trip itself is exact.
BOOST_AUTO_TEST_CASE(heartbeat_rtt_estimator_saturates_past_its_range) {
    manual_service svc;
    hb_log log(svc);
    heartbeat_policy p;
    p.trigger = heartbeat_trigger::outbound;
    p.interval = std::chrono::hours(1);
    p.timeout = std::chrono::hours(3);
    p.misses = 1;
    auto hb = make_hb(log, p);
    svc.step_by(std::chrono::hours(1)); // ping at 1 h
    BOOST_TEST_REQUIRE(log.pings.size() == 1u);
    svc.step_by(std::chrono::hours(2));
    const auto rtt = hb.on_pong(svc.stamp());
    BOOST_TEST_REQUIRE(rtt.has_value());
    BOOST_TEST((*rtt == std::chrono::hours(2)));
    const std::chrono::microseconds most(std::numeric_limits<std::uint32_t>::max());
    BOOST_TEST((*hb.srtt() == most));    // ~71.6 minutes, not 2 h wrapped to ~48 minutes
    BOOST_TEST((hb.rttvar() == most / 2));
    BOOST_TEST((hb.effective_timeout() == std::chrono::duration_cast<duration>(3 * (most + 4 * (most / 2)))));
    BOOST_TEST(!log.dead);
}

// A ping's deadline is judged at the first wheel wake-up at or after it. With a 10 ms tick: the
// ping leaves at 105 ms (the pinger's tick, 100, woke 5 ms late), so its deadline is 155 ms, inside
// the tick of 150. A wake-up for that tick at 157 ms is past the deadline and judges it there (2 ms
// late, where rounding the deadline up to 160 would make it 5 ms + that wake-up's own delay); one at
// 154 ms is before it: the judgement waits for the deadline itself (schedule_exact), never early.
BOOST_AUTO_TEST_CASE(heartbeat_judged_at_the_first_wakeup_past_its_deadline) {
    for (bool early_wakeup : {false, true}) {
        manual_service svc(10ms);
        hb_log log(svc);
        heartbeat_policy p;
        p.interval = 100ms;
        p.timeout = 50ms;
        p.misses = 1;
        auto hb = make_hb(log, p);
        svc.advance_to(t0 + 105ms);
        BOOST_TEST_REQUIRE(log.pings.size() == 1u);
        BOOST_TEST((hb.judgement_deadline() == t0 + 155ms));
        if (early_wakeup) {
            svc.advance_to(t0 + 154ms); // the tick of 150 wakes before the deadline
            BOOST_TEST(!log.dead.has_value());
            BOOST_TEST((svc.wheel().next_wakeup() == t0 + 155ms)); // the driver wakes at the deadline
            svc.advance_to(t0 + 155ms - 1ns);
            BOOST_TEST(!log.dead.has_value());
            svc.advance_to(t0 + 156ms); // inside the tick: no tick boundary between
            BOOST_TEST_REQUIRE(log.dead.has_value());
            BOOST_TEST((*log.dead == 156ms));
        } else {
            svc.advance_to(t0 + 157ms); // the tick of 150 wakes after the deadline
            BOOST_TEST_REQUIRE(log.dead.has_value());
            BOOST_TEST((*log.dead == 157ms));
        }
        BOOST_TEST(svc.wheel().empty());
    }
}

// Never early as the peer sees it: pings keep their grid (timed from when the previous fell due), so a
// first ping that left late — here a 30 ms stall just as it fell due — would put the last ping, and
// the death, sooner after it than the formula says. The fatal miss waits for P + (misses - 1) *
// interval + timeout from when the first unanswered ping really left (365 ms before: 30 ms early).
BOOST_AUTO_TEST_CASE(heartbeat_death_is_never_early_from_the_first_ping_that_really_left) {
    manual_service svc(1ms);
    hb_log log(svc);
    heartbeat_policy p;
    p.interval = 105ms;
    p.timeout = 50ms;
    p.misses = 3;
    auto hb = make_hb(log, p);
    svc.step_by(104ms);
    svc.advance_by(31ms); // a stall: the first ping (due at 105) leaves at 135
    BOOST_TEST_REQUIRE(log.pings.size() == 1u);
    BOOST_TEST((log.pings[0] == 135ms));
    svc.step_by(400ms);
    BOOST_TEST((log.pings == std::vector<duration>{135ms, 210ms, 315ms})); // back on the grid
    BOOST_TEST_REQUIRE(log.dead.has_value());
    BOOST_TEST((*log.dead >= 135ms + 2 * 105ms + 50ms), log.dead->count()); // 395 ms
    BOOST_TEST((*log.dead <= 396ms), log.dead->count());
}

// timeout >= interval: a ping that falls due while the previous one is outstanding leaves when that
// one is judged, i.e. at the first wake-up past its deadline. Counting its own deadline from when it
// left added each judgement's wait for a wake-up to the next, ping after ping: here on a 10 ms tick
// the death came 5 ms later per ping than P + (misses - 1) * interval + timeout
// (the peers saw 9-28 ms late at a 10 ms tick, 1.4-5.6 ms at 1 ms; here with 6 misses, 790 ms
// instead of 740). Each ping now counts from when it fell due (P = 105 ms: the first leaves at the
// start of its tick, 100), so the death comes within a tick of the formula, and never before it.
// When it fell due is exact, not bounded like a stamp (a 3 ms batch bound added to it put each
// ping's base 3 ms further behind: with 6 misses, the death a whole tick late, at 750 ms, not 740).
BOOST_AUTO_TEST_CASE(waiting_for_wakeups_does_not_add_up_ping_after_ping) {
    for (const duration lag : {duration::zero(), duration(3ms)}) {
        manual_service svc(10ms);
        svc.set_stamp_lag(lag);
        hb_log log(svc);
        heartbeat_policy p;
        p.interval = 105ms;
        p.timeout = 105ms;
        p.misses = 6;
        p.rtt_factor = 0;
        auto hb = make_hb(log, p);
        svc.step_by(1000ms, 10ms); // the driver wakes every 10 ms: every deadline waits for a wake-up
        BOOST_TEST_REQUIRE(log.pings.size() == 6u);
        BOOST_TEST((log.pings[0] == 100ms)); // due at 105, sent at the start of its tick
        BOOST_TEST_REQUIRE(log.dead.has_value());
        BOOST_TEST((*log.dead >= 105ms + 6 * 105ms), log.dead->count());
        BOOST_TEST((*log.dead < 105ms + 6 * 105ms + 10ms), lag.count() << ": " << log.dead->count());
    }
}

// A long batch after a ping (the process starved of its core, on a loaded machine) must not undo
// the miss: the last read happened before the ping left, whatever the activity clock's bound says of
// its stamp now. Judged by the stamp's bound, the read at 100 "could have happened" up to 700 — after
// the ping at 600 — so that ping was not counted and the death came a round late (a CI run saw a busy
// echo_client close a frozen server's link 1.0 s after the formula's time).
BOOST_AUTO_TEST_CASE(a_long_batch_after_a_ping_does_not_undo_its_miss) {
    manual_service svc(1ms);
    hb_log log(svc);
    auto hb = make_hb(log, exact_policy(500ms, 500ms, 2));
    svc.step_by(100ms);
    hb.on_read(svc.stamp()); // the last byte: at 100
    svc.step_by(501ms);      // the first ping, at 600
    BOOST_TEST_REQUIRE(log.pings.size() == 1u);
    svc.set_stamp_lag(600ms); // a batch of 600 ms since: a stamp's bound now reaches 600 ms past it
    svc.step_by(1200ms);
    BOOST_TEST_REQUIRE(log.dead.has_value());
    BOOST_TEST((*log.dead == 1600ms), log.dead->count()); // 100 + 500 + 500 + 500: the formula
    BOOST_TEST((log.misses == std::vector<duration>{1100ms, 1600ms}));
}

// A read handled after the ping left is its answer even in the ping's own instant (one batch, one
// stamp): never a false miss.
BOOST_AUTO_TEST_CASE(a_read_in_the_pings_own_instant_after_it_left_answers_it) {
    manual_service svc(1ms);
    hb_log log(svc);
    auto hb = make_hb(log, exact_policy(100ms, 100ms, 1));
    svc.step_by(100ms);
    BOOST_TEST_REQUIRE(log.pings.size() == 1u);
    hb.on_read(svc.stamp()); // the same stamp as the ping's, handled after it left
    svc.step_by(150ms);
    BOOST_TEST(log.misses.empty());
    BOOST_TEST(!log.dead);
}

// A ping that left long after it fell due (a stall) still gets (nearly) its whole timeout: the base
// it counts from is never more than a tick + heartbeat_lag_forgiven before it left. Without that
// bound, a 500 ms stall made the ping's deadline already past: judged as missed the moment it left.
BOOST_AUTO_TEST_CASE(a_ping_that_left_after_a_stall_gets_its_timeout) {
    manual_service svc(1ms);
    hb_log log(svc);
    heartbeat_policy p;
    p.interval = 100ms;
    p.timeout = 200ms;
    p.misses = 3;
    p.rtt_factor = 0;
    auto hb = make_hb(log, p);
    svc.step_by(99ms);
    svc.advance_by(500ms); // a stall: the first ping (due at 100) leaves at 599
    BOOST_TEST_REQUIRE(log.pings.size() == 1u);
    const auto sent = log.pings[0];
    BOOST_TEST(log.misses.empty());
    svc.step_by(200ms - 1ms - heartbeat_lag_forgiven - 1ms); // not yet: at least 200 ms - tick - forgiven
    BOOST_TEST(log.misses.empty(), "missed " << (log.misses.empty() ? 0 : log.misses[0].count()) << " sent " << sent.count());
    svc.step_by(heartbeat_lag_forgiven + 3ms);
    BOOST_TEST(log.misses.size() == 1u);
}
