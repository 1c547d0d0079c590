// memory_stream_test.cpp — heartwheel::testing::memory_stream, the in-memory stream pair users run a
// net::connection over in their own tests, and the connection's judgements over it on the manual
// clock: no socket, no sleeping, exact times. First the pipe's own promises (order, the end of the
// stream, a close, the capacity a non-reading peer fills, completions never inside their call, an
// io_context's shutdown letting go of a pending handler), then a connection's: reader idle, the write
// timeout and the soft limit against a peer that does not read, a dead peer's goodbye, last words.
#include <boost/test/unit_test.hpp>

#include <heartwheel/net/connection/connection.hpp>
#include <heartwheel/testing/manual_scheduler.hpp>
#include <heartwheel/testing/memory_stream.hpp>

#include "test_asio.hpp"

#include <array>
#include <functional>
#include <memory>
#include <string>
#include <vector>

using namespace std::chrono_literals;
namespace net = heartwheel::net;
using heartwheel::testing::make_memory_pair;
using heartwheel::testing::manual_scheduler;
using heartwheel::testing::memory_stream;

namespace {

struct pipe_fixture {
    asio::io_context io;
    void poll() {
        io.restart();
        io.poll();
    }
    /// Everything the end holds now, read without blocking; `ec`: what stopped the reading.
    static std::string drain(memory_stream& s, error_code& ec) {
        std::string got;
        std::array<char, 256> buf;
        for (std::size_t n; (n = s.read_some(asio::buffer(buf), ec)) > 0;) got.append(buf.data(), n);
        return got;
    }
};

} // namespace

BOOST_AUTO_TEST_SUITE(memory_stream_suite)

// Bytes arrive in order; a read completes on a later turn on its handler's executor, never inside the
// call; a pending read completes when bytes come.
BOOST_FIXTURE_TEST_CASE(bytes_flow_in_order_and_complete_on_a_later_turn, pipe_fixture) {
    auto [a, b] = make_memory_pair(io.get_executor());
    asio::write(a, asio::buffer(std::string("hello ")));
    std::array<char, 64> buf;
    std::string got;
    bool done = false;
    b.async_read_some(asio::buffer(buf), [&](error_code ec, std::size_t n) {
        BOOST_TEST(!ec);
        got.assign(buf.data(), n);
        done = true;
    });
    BOOST_TEST(!done); // not inside the call
    poll();
    BOOST_TEST(got == "hello ");
    // A read waiting for bytes, on a strand: completed by the peer's write, inside the strand.
    auto strand = asio::make_strand(io);
    bool in_strand = false;
    done = false;
    b.async_read_some(asio::buffer(buf), asio::bind_executor(strand, [&](error_code ec, std::size_t n) {
                          in_strand = strand.running_in_this_thread();
                          got.assign(buf.data(), ec ? 0 : n);
                          done = true;
                      }));
    poll();
    BOOST_TEST(!done);
    a.async_write_some(asio::buffer(std::string("world")), [](error_code ec, std::size_t n) {
        BOOST_TEST(!ec);
        BOOST_TEST(n == 5u);
    });
    poll();
    BOOST_TEST(done);
    BOOST_TEST(in_strand);
    BOOST_TEST(got == "world");
}

// shutdown_send is the peer's end of stream once it has read what came before; writing after it is
// broken_pipe. close() aborts the end's own pending read, drops what it held, and the peer's writes
// are refused connection_reset; a closed end answers bad_descriptor.
BOOST_FIXTURE_TEST_CASE(shutdown_and_close_are_the_peers_end_of_stream, pipe_fixture) {
    auto [a, b] = make_memory_pair(io.get_executor());
    asio::write(a, asio::buffer(std::string("last")));
    a.shutdown(asio::socket_base::shutdown_send);
    error_code ec;
    BOOST_TEST(b.available() == 4u);
    BOOST_TEST(drain(b, ec) == "last");
    BOOST_TEST((ec == asio::error::eof));
    a.write_some(asio::buffer("x", 1), ec);
    BOOST_TEST((ec == asio::error::broken_pipe));

    auto [c, d] = make_memory_pair(io.get_executor());
    error_code read_ec;
    std::array<char, 8> buf;
    c.async_read_some(asio::buffer(buf), [&](error_code e, std::size_t) { read_ec = e; });
    asio::write(c, asio::buffer(std::string("unread by c's peer")));
    c.close();
    poll();
    BOOST_TEST((read_ec == asio::error::operation_aborted));
    BOOST_TEST(!c.is_open());
    c.available(ec);
    BOOST_TEST((ec == asio::error::bad_descriptor));
    BOOST_TEST(drain(d, ec) == "unread by c's peer"); // sent before the close: still read
    BOOST_TEST((ec == asio::error::eof));
    d.write_some(asio::buffer("x", 1), ec);
    BOOST_TEST((ec == asio::error::connection_reset));
}

// A receive capacity is a peer that does not read: writes move what fits and then wait, and go on
// when the peer reads; a wait for writability waits with them.
BOOST_FIXTURE_TEST_CASE(a_full_capacity_holds_the_writer_until_the_peer_reads, pipe_fixture) {
    auto [a, b] = make_memory_pair(io.get_executor());
    b.set_receive_capacity(10);
    const std::string sixteen(16, 'z');
    std::size_t written = 0;
    a.async_write_some(asio::buffer(sixteen), [&](error_code ec, std::size_t n) { written = ec ? 0 : n; });
    poll();
    BOOST_TEST(written == 10u); // a partial write: what fitted
    bool writable = false;
    a.async_wait(asio::socket_base::wait_write, [&](error_code ec) { writable = !ec; });
    error_code ec;
    a.write_some(asio::buffer(sixteen), ec);
    BOOST_TEST((ec == asio::error::would_block));
    poll();
    BOOST_TEST(!writable); // full: nothing read yet
    std::array<char, 4> buf;
    BOOST_TEST(b.read_some(asio::buffer(buf)) == 4u);
    poll();
    BOOST_TEST(writable);
    BOOST_TEST(a.write_some(asio::buffer(sixteen)) == 4u);
}

// An io_context destroyed with a read pending lets go of its handler, as it does a socket's: a
// handler that owns its stream's owner (a session's shared_ptr) is no leak.
BOOST_AUTO_TEST_CASE(a_context_shut_down_lets_go_of_a_pending_handler) {
    struct session {
        explicit session(memory_stream s) : stream(std::move(s)) {}
        memory_stream stream;
        std::array<char, 8> buf{};
    };
    std::weak_ptr<session> watch;
    std::unique_ptr<memory_stream> peer;
    {
        asio::io_context io;
        auto [a, b] = make_memory_pair(io.get_executor());
        peer = std::make_unique<memory_stream>(std::move(b));
        auto s = std::make_shared<session>(std::move(a));
        watch = s;
        s->stream.async_read_some(asio::buffer(s->buf), [s](error_code, std::size_t) {});
        io.poll();
        BOOST_TEST(!watch.expired()); // held by its own pending read
    }
    BOOST_TEST(watch.expired());
    peer.reset();
}

BOOST_AUTO_TEST_SUITE_END()

// --- a net::connection over a memory pair, on the manual clock ------------------------------------

namespace {

using memory_connection = net::connection<memory_stream>;

struct connection_fixture {
    asio::io_context io;
    manual_scheduler clock; // a 1 ms tick; time stands still until the test moves it
    net::liveness_counters counters;
    memory_stream peer{io}; // the other end of the connection make() makes
    std::vector<net::close_reason> closed;
    std::string read_by_server;
    error_code read_error;

    /// A connection whose peer is `peer`, reading for ever what comes (recorded), its closes recorded.
    std::shared_ptr<memory_connection> make(const net::liveness_config& cfg, net::connection_hooks hooks = {}) {
        auto [ours, theirs] = make_memory_pair(io.get_executor());
        peer = std::move(theirs);
        auto c = std::make_shared<memory_connection>(std::move(ours), net::connection_context(clock, cfg, &counters));
        if (!hooks.on_close) hooks.on_close = [this](net::close_reason r) { closed.push_back(r); };
        c->set_hooks(std::move(hooks));
        read_forever(c.get());
        return c;
    }
    void read_forever(memory_connection* c) {
        auto buf = std::make_shared<std::array<char, 256>>();
        c->stream().async_read_some(asio::buffer(*buf), [this, c, buf](error_code ec, std::size_t n) {
            read_by_server.append(buf->data(), n);
            if (ec) {
                read_error = ec;
                return c->read_failed(ec);
            }
            read_forever(c);
        });
    }
    void poll() {
        io.restart();
        io.poll();
    }
    /// Moves the manual clock by `d` and runs what it made ready.
    void advance(std::chrono::milliseconds d) {
        clock.run_for(d);
        poll();
    }
    std::string peer_reads(error_code& ec) { return pipe_fixture::drain(peer, ec); }
    std::uint64_t closes(net::close_reason r) const { return counters.snapshot().closes[static_cast<std::size_t>(r)]; }
};

} // namespace

BOOST_AUTO_TEST_SUITE(connection_over_memory)

// Bytes every 20 s keep a 30 s reader idle away; 30 s of silence later — not 1 ms before — the
// pending read completes timed_out, the close is counted once, and the peer reads the end of stream.
BOOST_FIXTURE_TEST_CASE(reader_idle_is_judged_at_its_time, connection_fixture) {
    net::liveness_config cfg;
    cfg.idle.reader_idle = 30s;
    auto c = make(cfg);
    for (int i = 0; i < 5; ++i) {
        advance(20s);
        asio::write(peer, asio::buffer("x", 1));
        poll();
    }
    BOOST_TEST(read_by_server == "xxxxx");
    BOOST_TEST(closed.empty());
    advance(30s - 1ms);
    BOOST_TEST(closed.empty()); // never early
    advance(1ms);
    BOOST_TEST((read_error == net::errc::timed_out));
    BOOST_TEST((closed == std::vector<net::close_reason>{net::close_reason::reader_idle}));
    c->close(net::close_reason::shutdown); // later closes change nothing
    c->abort(net::close_reason::io_error);
    poll();
    BOOST_TEST(closes(net::close_reason::reader_idle) == 1u);
    BOOST_TEST(counters.snapshot().closes_total() == 1u);
    BOOST_TEST(closed.size() == 1u);
    error_code ec;
    peer_reads(ec);
    BOOST_TEST((ec == asio::error::eof));
}

// Reads through the stream are recorded however they are made: asio::async_read_until on it works
// unchanged, and a line trickled a byte every 10 s keeps a 15 s reader idle away for 100 s.
BOOST_AUTO_TEST_CASE(a_composed_read_records_every_byte) {
    connection_fixture f;
    net::liveness_config cfg;
    cfg.idle.reader_idle = 15s;
    auto [ours, theirs] = make_memory_pair(f.io.get_executor());
    auto c = std::make_shared<memory_connection>(std::move(ours), net::connection_context(f.clock, cfg, &f.counters));
    std::string line;
    error_code line_ec;
    asio::async_read_until(c->stream(), asio::dynamic_buffer(line), '\n', [&](error_code ec, std::size_t n) {
        line_ec = ec;
        line.resize(n);
    });
    for (char ch : std::string("trickling\n")) {
        f.advance(10s);
        asio::write(theirs, asio::buffer(&ch, 1));
        f.poll();
    }
    BOOST_TEST(!line_ec);
    BOOST_TEST(line == "trickling\n");
    BOOST_TEST(!c->closing());
    f.advance(15s);
    BOOST_TEST((c->reason() == net::close_reason::reader_idle)); // and silence is still judged
}

// A phase deadline (expires_after): re-armed it counts from then, cancelled it never fires; left
// alone it closes with the application's reason at its time (never before), its last words go out,
// and the pending read completes timed_out.
BOOST_FIXTURE_TEST_CASE(a_phase_deadline_closes_with_its_reason_and_last_words, connection_fixture) {
    const auto slow_head = net::define_close_reason("test-slow-head");
    std::shared_ptr<memory_connection> c;
    net::connection_hooks hooks;
    hooks.last_words = [&](net::close_reason r) { c->send(std::string("TIMEOUT ") + net::to_string(r) + "\n"); };
    c = make(net::liveness_config{}, hooks);
    c->expires_after(10s, slow_head);
    advance(6s);
    c->expires_after(10s, slow_head); // a new phase: counted from now
    advance(8s);
    BOOST_TEST(!c->closing());
    c->expires_never();
    advance(60s);
    BOOST_TEST(!c->closing());
    c->expires_after(15s, slow_head);
    advance(15s - 1ms);
    BOOST_TEST(!c->closing()); // never early
    advance(1ms);
    BOOST_TEST((c->reason() == slow_head));
    error_code ec;
    BOOST_TEST(peer_reads(ec) == "TIMEOUT test-slow-head\n");
    BOOST_TEST((ec == asio::error::eof));
    advance(1s); // the linger (the peer does not end its side): then the pending read completes
    BOOST_TEST(c->closed());
    BOOST_TEST((read_error == net::errc::timed_out));
    BOOST_TEST(closes(slow_head) == 1u);
    BOOST_TEST(counters.snapshot().closes_total() == 1u);
}

// An idle connection's output holds no queue and no bound: a send makes them, and they go once it is
// written — also after a backlog that held a producer (owed its on_writable first) — so a connection
// that answered once does not keep its output's state while it idles.
BOOST_FIXTURE_TEST_CASE(the_output_keeps_no_state_once_written, connection_fixture) {
    net::liveness_config cfg;
    cfg.output.high_water = 64 << 10;
    cfg.output.low_water = 16 << 10;
    int writable = 0;
    net::connection_hooks hooks;
    hooks.on_writable = [&] { ++writable; };
    auto c = make(cfg, hooks);
    BOOST_TEST(c->output_at_rest());
    c->send("hello\n");
    BOOST_TEST(!c->output_at_rest()); // queued, its write in flight
    poll();
    BOOST_TEST(c->output_at_rest());
    error_code ec;
    BOOST_TEST(peer_reads(ec) == "hello\n");

    peer.set_receive_capacity(4096);
    const std::string chunk(4096, 'x');
    while (c->can_read()) { // a producer held at the high water
        c->send(chunk);
        poll();
    }
    BOOST_TEST(!c->output_at_rest());
    for (int i = 0; i < 200 && !c->output_at_rest(); ++i) { // the peer reads it all
        peer_reads(ec);
        poll();
    }
    BOOST_TEST(writable == 1);
    BOOST_TEST(c->output_at_rest());
    BOOST_TEST(c->queued() == 0u);
    BOOST_TEST(counters.snapshot().closes_total() == 0u);
}

// A peer that stops reading: the connection's writes fill its capacity, the output reaches its high
// water, and the write that cannot finish is closed write-timeout at its time, with no last words —
// with a write timeout configured, and with none (the library's default protects: 30 s; without it
// the connection, its reads stopped by the output bound, would be held for good).
BOOST_AUTO_TEST_CASE(a_peer_that_does_not_read_is_closed_by_the_write_timeout) {
    BOOST_TEST((net::timeout_policy{}.write_timeout == 30s));
    for (const bool configured : {true, false}) {
        connection_fixture f;
        net::liveness_config cfg;
        if (configured) cfg.timeouts.write_timeout = 10s;
        const auto timeout = configured ? 10s : 30s;
        cfg.output.high_water = 64 << 10;
        cfg.output.low_water = 16 << 10;
        bool last_words = false;
        net::connection_hooks hooks;
        hooks.last_words = [&](net::close_reason) { last_words = true; };
        auto c = f.make(cfg, hooks);
        f.peer.set_receive_capacity(4096);
        const std::string chunk(4096, 'x');
        for (std::size_t sent = 0; c->can_read() && sent < (16u << 20); sent += chunk.size()) { // until told to stop
            c->send(chunk);
            f.poll();
        }
        BOOST_TEST(!c->can_read());
        BOOST_TEST(c->queued() <= (64u << 10) + chunk.size()); // bounded by the high water
        f.advance(timeout - 1ms);
        BOOST_TEST(!c->closing()); // never early
        f.advance(1ms);
        BOOST_TEST((c->reason() == net::close_reason::write_timeout));
        BOOST_TEST(!last_words);
        BOOST_TEST(f.closes(net::close_reason::write_timeout) == 1u);
    }
}

// Above the soft limit for soft_limit_time: closed slow-consumer then, not before; a peer that reads
// its backlog within the time is kept, and told writable again.
BOOST_FIXTURE_TEST_CASE(the_soft_limit_closes_at_its_time_a_peer_that_drains_stays, connection_fixture) {
    for (const bool drains : {false, true}) {
        net::liveness_config cfg;
        cfg.output.high_water = 64 << 10;
        cfg.output.low_water = 16 << 10;
        cfg.output.hard_limit = 0;
        cfg.output.soft_limit = 128 << 10;
        cfg.output.soft_limit_time = 5s;
        bool writable_again = false;
        net::connection_hooks hooks;
        hooks.on_writable = [&] { writable_again = true; };
        auto c = make(cfg, hooks);
        peer.set_receive_capacity(64 << 10);
        const std::string msg(64 << 10, 'y');
        while (c->queued() <= (192u << 10)) { // the peer's capacity full, then above the soft limit
            c->send(msg);
            poll();
        }
        BOOST_TEST(!c->writable());
        advance(5s - 1ms);
        BOOST_TEST(!c->closing()); // never early
        if (drains) {
            error_code ec;
            for (int i = 0; i < 100 && c->queued() > 0; ++i) {
                peer_reads(ec);
                poll();
            }
            BOOST_TEST(c->queued() == 0u);
            advance(10s);
            BOOST_TEST(!c->closing());
            BOOST_TEST(writable_again);
            BOOST_TEST(c->writable());
        } else {
            advance(1ms);
            BOOST_TEST((c->reason() == net::close_reason::slow_consumer));
        }
    }
    BOOST_TEST(closes(net::close_reason::slow_consumer) == 1u);
    BOOST_TEST(counters.snapshot().slow_consumers[static_cast<std::size_t>(net::slow_bound::soft_limit)] == 1u);
}

// A peer the heartbeat judges dead gets its goodbye and the end of the stream at once, and the
// connection closes then — not at the end of a 60 s linger, which only a live peer's end of stream
// would cut short.
BOOST_FIXTURE_TEST_CASE(a_peer_judged_dead_gets_its_goodbye_without_the_linger, connection_fixture) {
    net::liveness_config cfg;
    cfg.heartbeat.interval = 5s;
    cfg.heartbeat.timeout = 2s;
    cfg.heartbeat.misses = 1;
    std::shared_ptr<memory_connection> c;
    net::connection_hooks hooks;
    hooks.send_ping = [&] { c->send("PING\n"); };
    hooks.last_words = [&](net::close_reason r) { c->send(std::string("BYE ") + net::to_string(r) + "\n"); };
    hooks.on_close = [&](net::close_reason r) { closed.push_back(r); };
    cfg.connection.linger = 60s;
    c = make(cfg, hooks);
    advance(5s);
    error_code ec;
    BOOST_TEST(peer_reads(ec) == "PING\n");
    advance(2s - 1ms);
    BOOST_TEST(!c->closing()); // never early
    advance(1ms);
    BOOST_TEST(c->closed()); // no linger for the dead
    BOOST_TEST((closed == std::vector<net::close_reason>{net::close_reason::heartbeat_timeout}));
    BOOST_TEST(peer_reads(ec) == "BYE heartbeat-timeout\n");
    BOOST_TEST((ec == asio::error::eof));
}

// A close the application asks for: what was sent goes first, then its last words, then the end of
// stream; the linger waits for the peer's own end of stream, which ends the close at once.
BOOST_FIXTURE_TEST_CASE(last_words_then_the_end_of_stream_then_the_peers_close, connection_fixture) {
    const auto bored = net::define_close_reason("bored"); // a reason of the application's own
    BOOST_TEST(std::string(net::to_string(bored)) == "bored");
    BOOST_TEST((net::define_close_reason("bored") == bored));
    BOOST_TEST((net::define_close_reason("reader-idle") == net::close_reason::reader_idle));
    std::shared_ptr<memory_connection> c;
    net::connection_hooks hooks;
    hooks.last_words = [&](net::close_reason r) { c->send(std::string("BYE ") + net::to_string(r) + "\n"); };
    hooks.on_close = [&](net::close_reason r) { closed.push_back(r); };
    c = make(net::liveness_config{}, hooks);
    c->send("hello\n");
    c->close(bored);
    c->send("refused after the close\n");
    poll();
    error_code ec;
    BOOST_TEST(peer_reads(ec) == "hello\nBYE bored\n");
    BOOST_TEST((ec == asio::error::eof));
    BOOST_TEST(!c->closed()); // lingering: the peer may still be reading
    peer.shutdown(asio::socket_base::shutdown_send);
    poll();
    BOOST_TEST(c->closed());
    BOOST_TEST((closed == std::vector<net::close_reason>{bored}));
    BOOST_TEST(closes(bored) == 1u);
    BOOST_TEST(counters.snapshot().closes_total() == 1u);
}

BOOST_AUTO_TEST_SUITE_END()
