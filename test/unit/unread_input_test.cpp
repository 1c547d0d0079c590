// unread_input_test.cpp — a process stall never makes a talking peer look silent. When a policy's
// judgement falls due while the peer's bytes wait unread for a read already pending (the reactor
// has not got to them yet), the judgement waits and looks again; once they are read it finds the
// peer alive. Manual clock for the policies (reader/writer/all idle, read timeout, heartbeat miss),
// and real sockets with a hand-moved wheel for net::connection asking the kernel (FIONREAD).
#define BOOST_TEST_MODULE unread_input
#include <boost/test/unit_test.hpp>

#include <heartwheel/net/connection/connection.hpp>

#include "liveness_recorder.hpp"
#include "manual_service.hpp"

#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read_until.hpp>
#include <asio/write.hpp>

#include <memory>
#include <array>
#include <string>
#include <thread>

using namespace hwtest;
using namespace heartwheel::net;
using namespace std::chrono_literals;

namespace {
struct policy_fixture {
    asio::io_context io;
    manual_service svc;
    liveness_recorder handler{io.get_executor()};
};
} // namespace

BOOST_AUTO_TEST_CASE(idle_waits_while_input_waits_and_a_read_proves_the_peer_alive) {
    for (auto kind : {idle_kind::reader, idle_kind::writer, idle_kind::all}) {
        policy_fixture f;
        liveness_config cfg;
        (kind == idle_kind::reader ? cfg.idle.reader_idle : kind == idle_kind::writer ? cfg.idle.writer_idle
                                                                                      : cfg.idle.all_idle) = 100ms;
        connection_liveness live(f.svc, cfg, f.handler);
        f.handler.input = true; // the peer's bytes arrived during a stall and wait for the reactor
        f.svc.step_by(150ms);
        BOOST_TEST(f.handler.closes.empty());
        BOOST_TEST(f.handler.idle_events.empty()); // not even reported: the peer is not idle
        BOOST_TEST(f.handler.input_asked >= 5);     // asked at 100 ms, then every 10 ms
        live.on_read();                             // the reactor reads them at 150 ms
        if (kind == idle_kind::writer) live.on_write_complete(); // ... and the echo goes out
        f.handler.input = false;
        f.svc.step_by(99ms);
        BOOST_TEST(f.handler.closes.empty()); // judged again from the read: due at 250 ms
        f.svc.step_by(1ms);
        BOOST_TEST_REQUIRE(f.handler.closes.size() == 1u);
    }
}

BOOST_AUTO_TEST_CASE(a_peer_with_nothing_waiting_is_closed_on_time) {
    // The control: the same policies with no unread input close exactly at their deadline.
    policy_fixture f;
    liveness_config cfg;
    cfg.idle.reader_idle = 100ms;
    connection_liveness live(f.svc, cfg, f.handler);
    f.svc.step_by(99ms);
    BOOST_TEST(f.handler.closes.empty());
    f.svc.step_by(1ms);
    BOOST_TEST_REQUIRE(f.handler.closes.size() == 1u);
    BOOST_TEST((f.handler.closes[0] == close_reason::reader_idle));
}

BOOST_AUTO_TEST_CASE(input_that_never_proves_activity_closes_once_it_is_read) {
    // Bytes that were read but were not a message (reads_are_idle_activity off: a partial line) do
    // not keep the peer: once nothing waits any more, the next look closes it — never before the
    // deadline, and late by the looks' period at most.
    policy_fixture f;
    liveness_config cfg;
    cfg.idle.reader_idle = 100ms;
    cfg.timeouts.read_timeout = 200ms;
    connection_liveness live(f.svc, cfg, f.handler);
    f.handler.input = true;
    f.svc.step_by(130ms);
    BOOST_TEST(f.handler.closes.empty());
    live.on_read(false); // bytes, but no message: liveness for the read timeout, not idle activity
    f.handler.input = false;
    f.svc.step_by(10ms);
    BOOST_TEST_REQUIRE(f.handler.closes.size() == 1u);
    BOOST_TEST((f.handler.closes[0] == close_reason::reader_idle));
    BOOST_TEST((f.svc.since_start() == 140ms));
}

BOOST_AUTO_TEST_CASE(read_timeout_waits_for_unread_input) {
    policy_fixture f;
    liveness_config cfg;
    cfg.timeouts.read_timeout = 100ms;
    connection_liveness live(f.svc, cfg, f.handler);
    f.handler.input = true;
    f.svc.step_by(300ms);
    BOOST_TEST(f.handler.closes.empty());
    f.handler.input = false; // read, but not a byte of it reached the policy: the peer is gone
    f.svc.step_by(10ms);
    BOOST_TEST_REQUIRE(f.handler.closes.size() == 1u);
    BOOST_TEST((f.handler.closes[0] == close_reason::read_timeout));
}

BOOST_AUTO_TEST_CASE(write_timeout_and_max_age_do_not_wait_for_input) {
    // A peer that sends but never reads is not made alive by its bytes: the write timeout judges
    // our writes, and max age is a deadline, not silence.
    for (bool age : {false, true}) {
        policy_fixture f;
        liveness_config cfg;
        if (age) {
            cfg.limits.max_age = 100ms;
            cfg.limits.max_age_jitter = 0;
        } else {
            cfg.timeouts.write_timeout = 100ms;
        }
        connection_liveness live(f.svc, cfg, f.handler);
        if (!age) live.on_write_started();
        f.handler.input = true;
        f.svc.step_by(100ms);
        BOOST_TEST_REQUIRE(f.handler.closes.size() == 1u);
        BOOST_TEST((f.handler.closes[0] == (age ? close_reason::max_age : close_reason::write_timeout)));
    }
}

BOOST_AUTO_TEST_CASE(a_heartbeat_miss_waits_for_the_unread_pong) {
    policy_fixture f;
    liveness_config cfg;
    cfg.heartbeat.interval = 100ms;
    cfg.heartbeat.timeout = 50ms;
    cfg.heartbeat.misses = 1;
    cfg.heartbeat.jitter = 0;
    liveness_counters counters;
    connection_liveness live(f.svc, cfg, f.handler, &counters);
    live.set_ping_writer(&f.handler);
    f.svc.step_by(100ms);
    BOOST_TEST(f.handler.pings == 1);
    f.handler.input = true; // the pong arrived in a stall: judged at 150 ms, it waits to be read
    f.svc.step_by(80ms);
    BOOST_TEST(f.handler.closes.empty());
    BOOST_TEST(counters.snapshot().heartbeat_misses == 0u);
    live.on_read(false);
    live.on_pong();
    f.handler.input = false;
    f.svc.step_by(100ms); // the next ping at 180 ms is answered too
    live.on_read(false);
    live.on_pong();
    f.svc.step_by(100ms);
    BOOST_TEST(f.handler.closes.empty());
    BOOST_TEST(counters.snapshot().heartbeat_misses == 0u);

    // A dead peer has nothing waiting: its ping is judged at the deadline as before.
    policy_fixture d;
    connection_liveness dead(d.svc, cfg, d.handler);
    d.svc.step_by(149ms);
    BOOST_TEST(d.handler.closes.empty());
    d.svc.step_by(1ms);
    BOOST_TEST_REQUIRE(d.handler.closes.size() == 1u);
    BOOST_TEST((d.handler.closes[0] == close_reason::heartbeat_timeout));
}

// --- net::connection asks the kernel ------------------------------------------------------------

namespace {
using tcp = asio::ip::tcp;

struct socket_fixture {
    asio::io_context io;
    manual_service svc; ///< the wheel moves by hand; the sockets are real
    tcp::acceptor acceptor{io, {asio::ip::make_address("127.0.0.1"), 0}};
    tcp::socket peer{io};
    std::shared_ptr<connection<tcp::socket>> c;

    explicit socket_fixture(reader_activity activity = reader_activity::bytes) {
        peer.connect(acceptor.local_endpoint());
        liveness_config cfg;
        cfg.idle.reader_idle = 100ms;
        cfg.connection.activity = activity;
        c = std::make_shared<connection<tcp::socket>>(acceptor.accept(), connection_context(svc, cfg));
    }
    /// The peer's bytes are in our kernel receive queue, unread.
    void peer_sends(const std::string& bytes) {
        asio::write(peer, asio::buffer(bytes));
        for (int i = 0; i < 1000 && c->lowest_layer().available() < bytes.size(); ++i) std::this_thread::sleep_for(1ms);
        BOOST_TEST_REQUIRE(c->lowest_layer().available() == bytes.size());
    }
};
} // namespace

BOOST_AUTO_TEST_CASE(a_connection_with_bytes_waiting_for_its_pending_receive_is_not_idle) {
    socket_fixture f;
    bool read = false;
    f.c->stream().async_receive([&](std::error_code ec, read_chunk chunk) { read = !ec && chunk.size() == 6; });
    f.peer_sends("hello\n");
    f.svc.step_by(150ms); // the stall: the reader-idle deadline passed before the reactor ran
    BOOST_TEST(!f.c->closing());
    f.io.poll(); // the reactor reads them (at 150 ms on the manual clock)
    BOOST_TEST(read);
    f.svc.step_by(99ms);
    BOOST_TEST(!f.c->closing()); // idle again from the read
    f.svc.step_by(11ms);         // nothing pending now: closed at 250 ms, the read's deadline (+ a look)
    BOOST_TEST(f.c->closing());
    BOOST_TEST((*f.c->reason() == close_reason::reader_idle));
}

BOOST_AUTO_TEST_CASE(bytes_no_read_is_waiting_for_do_not_keep_a_connection) {
    // An application that stopped reading does not keep its peer alive by the bytes it leaves.
    socket_fixture f;
    f.peer_sends("hello\n");
    f.svc.step_by(100ms);
    BOOST_TEST(f.c->closing());
}

BOOST_AUTO_TEST_CASE(reads_held_by_the_application_are_not_the_peers_silence) {
    // A producer over its budget stops reading (hold_reads): the peer's silence meanwhile is ours.
    // Reader idle and a phase deadline wait while held; released, the peer is judged again.
    socket_fixture f;
    const auto phase = define_close_reason("phase-deadline");
    f.c->expires_after(50ms, phase);
    f.c->hold_reads(true);
    f.svc.step_by(300ms); // past both deadlines, no read pending, nothing waiting
    BOOST_TEST(!f.c->closing());
    f.c->hold_reads(false);
    f.svc.step_by(20ms); // the next look finds the connection silent of its own
    BOOST_TEST(f.c->closing());
}

BOOST_AUTO_TEST_CASE(a_pending_read_with_nothing_waiting_closes_on_time) {
    socket_fixture f;
    f.c->stream().async_receive([](std::error_code, read_chunk) {});
    f.svc.step_by(100ms);
    BOOST_TEST(f.c->closing());
}

BOOST_AUTO_TEST_CASE(a_read_some_leaves_the_bytes_in_the_kernel_until_its_handler_runs) {
    // Beast reads with async_read_some. After a stall the handler's turn may come after the wheel's
    // (here: its executor is another context, whose turn comes later): until then the bytes must
    // still be where input_waiting() sees them, or a talking peer is judged idle.
    socket_fixture f;
    asio::io_context elsewhere;
    std::array<char, 64> buf{};
    std::size_t got = 0;
    f.c->stream().async_read_some(asio::buffer(buf), asio::bind_executor(elsewhere, [&](std::error_code ec, std::size_t n) {
        got = ec ? 0 : n;
    }));
    f.peer_sends("hello\n");
    f.io.poll(); // the reactor sees the socket readable
    BOOST_TEST(got == 0u);
    f.svc.step_by(150ms); // the reader-idle deadline passes before the handler's turn
    BOOST_TEST(!f.c->closing());
    for (int i = 0; i < 100 && got == 0; ++i) {
        elsewhere.poll();
        f.io.poll();
    }
    BOOST_TEST(got == 6u);
    BOOST_TEST(std::string(buf.data(), got) == "hello\n");
}

BOOST_AUTO_TEST_CASE(a_phase_deadline_waits_for_bytes_waiting_unread) {
    // An HTTP keep-alive wait (expires_after) whose next request arrived during a stall: the request
    // is in the kernel, not late. The deadline looks again once it is read; with nothing waiting it
    // closes at its time.
    socket_fixture f;
    const auto keepalive = define_close_reason("keepalive-timeout");
    f.c->expires_after(50ms, keepalive);
    bool read = false;
    f.c->stream().async_receive([&](std::error_code ec, read_chunk chunk) { read = !ec && chunk.size() == 4; });
    f.peer_sends("GET\n");
    f.svc.step_by(60ms); // the deadline passed before the reactor ran
    BOOST_TEST(!f.c->closing());
    f.io.poll();
    BOOST_TEST(read);
    f.svc.step_by(20ms); // nothing waits now, and nothing moved the deadline: it closes
    BOOST_TEST(f.c->closing());
    BOOST_TEST((*f.c->reason() == keepalive));
}

BOOST_AUTO_TEST_CASE(a_coroutine_style_read_until_counts_as_pending_and_messages_keep_it) {
    // The shape of a coroutine server: async_read_until on stream(), message_received() per line.
    socket_fixture f(reader_activity::messages);
    std::string in;
    int lines = 0;
    std::function<void()> read_line = [&] {
        asio::async_read_until(f.c->stream(), asio::dynamic_buffer(in), '\n', [&](std::error_code ec, std::size_t n) {
            if (ec) return;
            in.erase(0, n);
            ++lines;
            f.c->message_received();
            read_line();
        });
    };
    read_line();
    f.peer_sends("one\ntwo\n");
    f.svc.step_by(150ms);
    BOOST_TEST(!f.c->closing());
    f.io.poll();
    BOOST_TEST(lines == 2);
    f.svc.step_by(99ms);
    BOOST_TEST(!f.c->closing());
    f.svc.step_by(11ms);
    BOOST_TEST(f.c->closing());
}
