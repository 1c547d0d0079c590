// arrival_test.cpp — a peer's silence counts from when its bytes arrived (the kernel's receive stamp,
// net/detail/arrival_stamp.hpp), not from when a busy loop read them. The wall-to-steady conversion
// is never early, whatever steps the wall clock takes (a step forward between a segment's arrival and
// its read drops the stamp; a step back only makes it late); on a real socket, a byte read 80 ms
// after it came reports when it came; the heartbeat's next ping and its round trip count from that
// (manual clock), and a pong arriving before its ping's due time is not timed by that due time; and
// a net::connection with a heartbeat asks its socket for stamps, so a peer whose
// byte waited out a stall is pinged an interval after the byte, not after the stall (real clock,
// bounded margins). Part of unread_input_test (the same question: what the peer did while we stalled).
#include <boost/test/unit_test.hpp>

#include <heartwheel/asio_wheel.hpp>
#include <heartwheel/net/connection/connection.hpp>
#include <heartwheel/net/detail/arrival_stamp.hpp>

#include "liveness_recorder.hpp"
#include "manual_service.hpp"

#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using namespace hwtest;
using namespace heartwheel::net;
using namespace std::chrono_literals;
using tcp = asio::ip::tcp;
using steady = std::chrono::steady_clock;

namespace {
time_point at(int ms) { return time_point{} + std::chrono::hours(1) + std::chrono::milliseconds(ms); }
std::int64_t ns(time_point t) { return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count(); }
/// The wall clock's reading at steady time t, the wall clock being `offset` ns ahead.
std::int64_t wall(time_point t, std::int64_t offset) { return ns(t) + offset; }
constexpr std::int64_t five_s = 5'000'000'000;
} // namespace

BOOST_AUTO_TEST_CASE(a_stamp_converts_exactly_and_a_wall_clock_step_never_makes_it_early) {
    detail::wall_offset_guard g;
    const std::int64_t off = 1'700'000'000'000'000'000; // the wall clock in 2023, the steady one at boot
    // Nothing is trusted before the guard first saw the offset: a step could have come before.
    BOOST_TEST((detail::arrival_from_wall(wall(at(10), off), wall(at(20), off), at(20), g) == no_arrival));
    // Then a stamp converts to its steady time exactly, and never to after the reading.
    BOOST_TEST((detail::arrival_from_wall(wall(at(25), off), wall(at(30), off), at(30), g) == at(25)));
    BOOST_TEST((detail::arrival_from_wall(wall(at(31), off), wall(at(30), off), at(30), g) == at(30)));
    // The wall clock stepped forward 5 s between an arrival (at 40) and its read (at 50): converted
    // with the new offset it would be 5 s early. Dropped — and so is one stamped before the step
    // but read later still.
    const std::int64_t forward = off + five_s;
    BOOST_TEST((detail::arrival_from_wall(wall(at(40), off), wall(at(50), forward), at(50), g) == no_arrival));
    BOOST_TEST((detail::arrival_from_wall(wall(at(45), off), wall(at(60), forward), at(60), g) == no_arrival));
    // What arrived after the step was seen is exact again.
    BOOST_TEST((detail::arrival_from_wall(wall(at(65), forward), wall(at(70), forward), at(70), g) == at(65)));
    // Stepped back 5 s: a stamp from before the step converts late — to the read at the latest.
    const auto back = detail::arrival_from_wall(wall(at(80), forward), wall(at(90), off), at(90), g);
    BOOST_TEST((back == no_arrival || (back >= at(80) && back <= at(90))));
}

namespace {
struct observer final : stream_observer {
    std::vector<time_point> arrivals;
    void on_bytes_read(std::size_t, time_point arrived) override { arrivals.push_back(arrived); }
    void on_write_started() override {}
    void on_bytes_written(std::size_t, std::size_t) override {}
    std::error_code close_error() const noexcept override { return {}; }
};
} // namespace

BOOST_AUTO_TEST_CASE(a_byte_read_late_reports_when_it_arrived) {
    for (bool stamps : {true, false}) {
        asio::io_context io;
        tcp::acceptor acceptor{io, {asio::ip::make_address("127.0.0.1"), 0}};
        tcp::socket peer{io};
        peer.connect(acceptor.local_endpoint());
        observer obs;
        liveness_stream<tcp::socket> s(obs, acceptor.accept());
        BOOST_TEST_REQUIRE(s.enable_arrival_stamps() == true);
        // The first socket of the system to ask turns the kernel's stamping on a moment later (a
        // deferred static key): until then segments arrive unstamped, and reads report no arrival.
        std::this_thread::sleep_for(20ms);
        if (!stamps) { // the control: the same socket read without asking for the stamp
            const int off = 0;
            BOOST_TEST_REQUIRE(::setsockopt(s.lowest_layer().native_handle(), SOL_SOCKET, SO_TIMESTAMPNS, &off, sizeof off) == 0);
        }
        time_point read_at{};
        s.async_receive([&](std::error_code ec, read_chunk c) {
            BOOST_TEST(!ec);
            BOOST_TEST(c.size() == 1u);
            read_at = steady::now();
        });
        io.poll(); // the receive waits
        const time_point sent = steady::now();
        asio::write(peer, asio::buffer("x", 1));
        const time_point written = steady::now();
        std::this_thread::sleep_for(80ms); // the loop is busy elsewhere: the byte waits in the socket
        for (int i = 0; i < 200 && read_at == time_point{}; ++i) io.run_one_for(10ms);
        BOOST_TEST_REQUIRE(obs.arrivals.size() == 1u);
        const time_point a = obs.arrivals[0];
        if (!stamps) {
            BOOST_TEST((a == no_arrival));
            continue;
        }
        BOOST_TEST_REQUIRE((a != no_arrival));
        BOOST_TEST((a >= sent)); // never before the peer sent it
        BOOST_TEST((a <= written + 20ms));
        BOOST_TEST((read_at - a >= 70ms)); // the read came after the stall; the stamp did not
    }
}

namespace {
/// A connection_liveness on a clock moved by hand, with an exact heartbeat: one miss, no jitter, no
/// round-trip floor.
struct exact_heartbeat {
    exact_heartbeat(std::chrono::milliseconds interval, std::chrono::milliseconds timeout, duration tick = 1ms)
        : svc(tick), live(svc, config(interval, timeout), handler, &counters) {
        live.set_ping_writer(&handler);
    }
    static liveness_config config(std::chrono::milliseconds interval, std::chrono::milliseconds timeout) {
        liveness_config cfg;
        cfg.heartbeat.interval = interval;
        cfg.heartbeat.timeout = timeout;
        cfg.heartbeat.misses = 1;
        cfg.heartbeat.jitter = 0;
        cfg.heartbeat.rtt_factor = 0;
        return cfg;
    }
    asio::io_context io;
    manual_service svc;
    liveness_recorder handler{io.get_executor()};
    liveness_counters counters;
    connection_liveness live;
};
} // namespace

BOOST_AUTO_TEST_CASE(a_heartbeat_counts_the_peers_silence_from_its_bytes_arrival) {
    exact_heartbeat f(100ms, 40ms);
    BOOST_TEST(!f.live.wants_arrival_stamps()); // a clock moved by hand is not the kernel's
    f.svc.step_by(50ms);
    f.live.on_read(true, at(20)); // read at 50, arrived at 20: the next ping is due at 120, not 150
    f.svc.step_by(69ms);
    BOOST_TEST(f.handler.pings == 0);
    f.svc.step_by(1ms);
    BOOST_TEST(f.handler.pings == 1); // at 120
    f.svc.step_by(15ms);
    f.live.on_read(false, at(125)); // the pong arrived at 125, read at 135
    f.live.on_pong();
    BOOST_TEST(f.counters.snapshot().rtt_samples == 1u);
    BOOST_TEST(f.counters.snapshot().rtt_total_us == 5000u); // 120 -> 125: the read's 10 ms is ours
    f.svc.step_by(89ms); // 224: the next ping counts from the pong's arrival, due at 225
    BOOST_TEST(f.handler.pings == 1);
    f.svc.step_by(1ms);
    BOOST_TEST(f.handler.pings == 2);
    f.svc.step_by(39ms); // unanswered: dead at 225 + 40 = 265, never before
    BOOST_TEST(f.handler.closes.empty());
    f.svc.step_by(1ms);
    BOOST_TEST_REQUIRE(f.handler.closes.size() == 1u);
    BOOST_TEST((f.handler.closes[0] == close_reason::heartbeat_timeout));
}

// A ping leaves at the start of the tick it falls due in, so its answer can arrive before the ping's
// due time, where the pinger counts from: the round trip is then the read's, never the due time's.
BOOST_AUTO_TEST_CASE(a_pong_arriving_before_its_pings_due_time_is_not_timed_by_it) {
    exact_heartbeat f(105ms, 50ms, 10ms);
    f.svc.step_by(100ms, 10ms); // due at 105: the ping leaves at its tick's start, 100
    BOOST_TEST(f.handler.pings == 1);
    f.svc.step_by(10ms, 10ms);
    f.live.on_read(false, at(102)); // its pong arrived at 102, read at 110
    f.live.on_pong();
    const auto rtt = f.counters.snapshot().rtt_total_us;
    BOOST_TEST((rtt == 2000u || rtt == 10000u), rtt); // its arrival's or its read's, not 105's
    BOOST_TEST(f.handler.closes.empty());
}

BOOST_AUTO_TEST_CASE(a_connection_pings_an_interval_after_the_bytes_arrived_not_after_a_stall) {
    asio::io_context io;
    heartwheel::asio_wheel wheel(io.get_executor());
    tcp::acceptor acceptor{io, {asio::ip::make_address("127.0.0.1"), 0}};
    tcp::socket peer{io};
    peer.connect(acceptor.local_endpoint());
    liveness_config cfg;
    cfg.heartbeat.interval = 300ms;
    cfg.heartbeat.timeout = 2000ms;
    cfg.heartbeat.jitter = 0;
    connection_hooks hooks;
    std::shared_ptr<connection<tcp::socket>> c;
    hooks.send_ping = [&] { c->send("PING\n"); };
    c = std::make_shared<connection<tcp::socket>>(acceptor.accept(), connection_context(wheel, cfg));
    c->set_hooks(hooks);
    std::function<void()> read_on = [&] {
        c->stream().async_receive([&](std::error_code ec, read_chunk) {
            if (!ec) read_on();
        });
    };
    read_on();
    io.run_for(20ms);
    const time_point wrote = steady::now();
    asio::write(peer, asio::buffer("hello\n", 6));
    std::this_thread::sleep_for(250ms); // a stall: the byte waits; the first ping (due at 300) is not due yet
    // From here the loop runs; the peer notes when the ping comes. Counted from the byte's arrival it
    // is due 300 ms after it — 50 ms after the stall; from the read it would come 300 ms after the stall.
    time_point pinged{};
    std::string got;
    std::thread reader([&] {
        got.resize(5);
        std::error_code ec;
        asio::read(peer, asio::buffer(got), ec);
        pinged = steady::now();
    });
    const auto until = steady::now() + 2s;
    while (pinged == time_point{} && steady::now() < until) io.run_for(5ms);
    reader.join();
    BOOST_TEST(got == "PING\n");
    BOOST_TEST((pinged - wrote >= 299ms)); // an interval after the byte, less the tick at most
    const double ms = std::chrono::duration<double, std::milli>(pinged - wrote).count();
    BOOST_TEST(ms < 450.0, "pinged " << ms << " ms after the byte: counted from the read, not its arrival");
}
