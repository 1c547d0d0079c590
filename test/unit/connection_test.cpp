// connection_test.cpp — net::connection over real sockets on 127.0.0.1, for what only a socket shows:
// Asio's associators through the stream's operations, the goodbye and the FIN in one segment, no
// cork on a framing layer's goodbye, backpressure against the kernel's buffers, keepalive options,
// read errors as the kernel reports them, and the TLS handshake under its deadline. The judgements
// of time over a connection (idle, write timeout, soft limit, phase deadlines, a dead peer's close)
// are in memory_stream_test.cpp, on the manual clock. Every run here is bounded in time.
#define BOOST_TEST_MODULE connection
#include <boost/test/unit_test.hpp>

#include <heartwheel/asio_wheel.hpp>
#include <heartwheel/net/connection/connection.hpp>
#include <heartwheel/net/connection/connection_with.hpp>
#include <heartwheel/net/connection/framed_output.hpp>
#include <heartwheel/net/tls/ssl_stream.hpp>

#include "tcp_segments.hpp"

#include "test_asio.hpp"

#include <memory>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
namespace net = heartwheel::net;
using tcp = asio::ip::tcp;

namespace {

struct fixture {
    asio::io_context io;
    heartwheel::asio_wheel wheel{io.get_executor()};
    net::liveness_counters counters;
    tcp::acceptor acceptor{io, {asio::ip::make_address("127.0.0.1"), 0}};
    tcp::socket peer{io}; ///< the other end, driven by the test

    /// Our side of a fresh connection (accepted), with `peer` connected to it.
    tcp::socket accept_one() {
        peer.connect(acceptor.local_endpoint());
        return acceptor.accept();
    }
    template <class Stream = tcp::socket, template <class> class Output = net::byte_output>
    std::shared_ptr<net::connection<Stream, net::connection_liveness, Output>> make(Stream s, const net::liveness_config& cfg,
                                                                                 net::connection_hooks hooks = {}) {
        auto c = std::make_shared<net::connection<Stream, net::connection_liveness, Output>>(
            std::move(s), net::connection_context(wheel, cfg, &counters));
        c->set_hooks(std::move(hooks));
        return c;
    }
    /// `cfg` with a linger of `l` ([connection] linger): 100 ms ends a close whose peer never ends its side.
    static net::liveness_config lingering(net::liveness_config cfg, std::chrono::milliseconds l = 100ms) {
        cfg.connection.linger = l;
        return cfg;
    }
    std::uint64_t closes(net::close_reason r) const { return counters.snapshot().closes[static_cast<std::size_t>(r)]; }
    /// Runs the loop for `d` (restarting it if it ran out of work before).
    void run_for(std::chrono::milliseconds d) {
        io.restart();
        io.run_for(d);
    }
    void poll() {
        io.restart();
        io.poll();
    }
    void run_until(const std::function<bool()>& done, std::chrono::milliseconds limit = 5000ms) {
        const auto end = std::chrono::steady_clock::now() + limit;
        while (!done() && std::chrono::steady_clock::now() < end) run_for(5ms);
        BOOST_TEST_REQUIRE(done(), "not done within the time limit");
    }
};

} // namespace

// The stream's read_some and write_some are their own operations, not async_compose's: Asio's
// associators reach the application's handler through them — a handler bound to a strand runs inside
// it, a cancellation ends a pending read with operation_aborted and the connection stays open — and
// on a stream already closed both complete on a later turn with the close's error, never inside the
// call (a handler run inside its own initiating call is what Asio's rules forbid).
BOOST_FIXTURE_TEST_CASE(read_some_and_write_some_keep_their_handlers_executor_and_slot, fixture) {
    auto c = make(accept_one(), net::liveness_config{});
    auto strand = asio::make_strand(io);
    char buf[8];
    bool in_strand = false, wrote_in_strand = false;
    std::size_t got = 0;
    c->stream().async_read_some(asio::buffer(buf), asio::bind_executor(strand, [&](error_code ec, std::size_t n) {
        BOOST_TEST(!ec);
        in_strand = strand.running_in_this_thread();
        got = n;
    }));
    c->stream().async_write_some(asio::buffer("w", 1), asio::bind_executor(strand, [&](error_code ec, std::size_t) {
        BOOST_TEST(!ec);
        wrote_in_strand = strand.running_in_this_thread();
    }));
    asio::write(peer, asio::buffer("r", 1));
    run_until([&] { return got == 1 && wrote_in_strand; });
    BOOST_TEST(in_strand);
    BOOST_TEST(buf[0] == 'r');

    asio::cancellation_signal cancel;
    error_code last;
    bool done = false;
    c->stream().async_read_some(asio::buffer(buf), asio::bind_cancellation_slot(cancel.slot(), [&](error_code ec, std::size_t) {
        last = ec;
        done = true;
    }));
    run_for(10ms);
    BOOST_TEST(!done);
    cancel.emit(asio::cancellation_type::terminal);
    run_until([&] { return done; });
    BOOST_TEST((last == asio::error::operation_aborted));
    BOOST_TEST(!c->closing());

    c->abort(net::close_reason::shutdown);
    int completions = 0;
    error_code read_error, write_error;
    c->stream().async_read_some(asio::buffer(buf), [&](error_code ec, std::size_t n) {
        BOOST_TEST(n == 0u);
        read_error = ec;
        ++completions;
    });
    c->stream().async_write_some(asio::buffer("w", 1), [&](error_code ec, std::size_t n) {
        BOOST_TEST(n == 0u);
        write_error = ec;
        ++completions;
    });
    BOOST_TEST(completions == 0); // not inside the calls
    run_until([&] { return completions == 2; });
    BOOST_TEST((read_error == net::errc::connection_closed));
    BOOST_TEST((write_error == net::errc::connection_closed));
}

// A framing layer that writes its goodbye itself (a WebSocket close frame) holds the close with
// goodbye_in_flight() until goodbye_written(): no FIN before it, the linger still bounds it, and the
// reason is counted once. Its connection (framed_output) has no byte queue and never corks.
using framed_connection = net::connection<tcp::socket, net::connection_liveness, net::framed_output>;
static_assert(sizeof(framed_connection) < sizeof(net::connection<tcp::socket>), "framed_output carries no byte queue");
BOOST_FIXTURE_TEST_CASE(a_framing_layers_goodbye_holds_the_close_until_written, fixture) {
    net::liveness_config cfg;
    std::shared_ptr<framed_connection> c;
    net::connection_hooks hooks;
    int corked = -1;
    hooks.last_words = [&](net::close_reason) {
        c->goodbye_in_flight();
        // The goodbye may wait for the peer before our FIN: its bytes must not sit corked (200 ms).
        socklen_t len = sizeof corked;
        ::getsockopt(c->lowest_layer().native_handle(), IPPROTO_TCP, TCP_CORK, &corked, &len);
    };
    // The peer below never ends its side: the linger (200 ms) ends the close.
    c = make<tcp::socket, net::framed_output>(accept_one(), lingering(cfg, 200ms), hooks);
    c->close(net::close_reason::shutdown);
    run_for(50ms);
    BOOST_TEST(c->closing());
    BOOST_TEST(!c->closed()); // without the hold it would have closed at once: nothing of its own to write
    BOOST_TEST(corked == 0);
    peer.non_blocking(true);
    char byte = 0;
    error_code ec;
    peer.read_some(asio::buffer(&byte, 1), ec);
    BOOST_TEST((ec == asio::error::would_block)); // no FIN yet
    // The layer's own bytes, then its word that they are out: the FIN follows at once.
    asio::write(c->stream().next_layer(), asio::buffer("bye", 3));
    c->goodbye_written();
    peer.non_blocking(false);
    std::string got;
    asio::read(peer, asio::dynamic_buffer(got), ec);
    BOOST_TEST((ec == asio::error::eof));
    BOOST_TEST(got == "bye");
    run_until([&] { return c->closed(); }); // the peer's end is not read here: the linger ends it
    BOOST_TEST(closes(net::close_reason::shutdown) == 1u);

    // A goodbye that never says it is written is bounded by the linger.
    std::shared_ptr<framed_connection> d;
    net::connection_hooks quiet;
    quiet.last_words = [&](net::close_reason) { d->goodbye_in_flight(); };
    peer = tcp::socket(io);
    d = make<tcp::socket, net::framed_output>(accept_one(), lingering(cfg, 100ms), quiet);
    const auto start = std::chrono::steady_clock::now();
    d->close(net::close_reason::shutdown);
    run_until([&] { return d->closed(); });
    BOOST_TEST((std::chrono::steady_clock::now() - start >= 100ms));
    BOOST_TEST(closes(net::close_reason::shutdown) == 2u);
    BOOST_TEST(counters.snapshot().closes_total() == 2u);
}

// close_after_sent: what is queued (more than the kernel takes: the peer is not reading yet) is all
// written before the close, which close() would have dropped; the connection stays open meanwhile.
BOOST_FIXTURE_TEST_CASE(close_after_sent_writes_everything_queued_first, fixture) {
    const auto done_talking = net::define_close_reason("test-done-talking");
    net::liveness_config cfg;
    peer.open(tcp::v4());
    peer.set_option(asio::socket_base::receive_buffer_size(16384));
    auto s = accept_one();
    s.set_option(asio::socket_base::send_buffer_size(16384));
    auto c = make(std::move(s), cfg);
    const std::string part(300 * 1024, 'x');
    for (int i = 0; i < 5; ++i) c->send(part);
    c->close_after_sent(done_talking);
    run_for(50ms);
    BOOST_TEST(!c->closing()); // the peer has not read: most of it is still queued
    BOOST_TEST(c->queued() > 0u);
    std::string got;
    error_code ec;
    std::atomic<bool> read_all{false};
    std::thread reader([&] {
        asio::read(peer, asio::dynamic_buffer(got), ec);
        read_all = true;
    });
    run_until([&] { return read_all.load(); });
    reader.join();
    BOOST_TEST((ec == asio::error::eof));
    BOOST_TEST(got.size() == 5 * part.size());
    run_until([&] { return c->closed(); });
    BOOST_TEST(closes(done_talking) == 1u);
    BOOST_TEST(counters.snapshot().closes_total() == 1u);
}

// The goodbye and the FIN leave in one segment: a close costs the peer (and, on loopback, the sender,
// who pays for the receiver's softirq) one transmit and one receive, not two. Counted on the wire
// with TCP_INFO while the connection lingers (the peer has not closed its end).
BOOST_FIXTURE_TEST_CASE(last_words_and_fin_share_one_segment, fixture) {
    net::liveness_config cfg;
    std::shared_ptr<net::connection<tcp::socket>> c;
    net::connection_hooks hooks;
    hooks.last_words = [&](net::close_reason r) { c->send(std::string("BYE ") + net::to_string(r) + "\n"); };
    c = make(accept_one(), lingering(cfg, 10s), hooks); // the socket stays open for TCP_INFO after the FIN
    const int fd = c->lowest_layer().native_handle();
    run_for(20ms); // the handshake's last acknowledgement is behind us
    const auto before = tcp_segments_sent(fd);
    c->close(net::close_reason::shutdown);
    std::string got;
    error_code ec;
    run_until([&] { return tcp_segments_sent(fd) != before; }); // the first segment after the close
    run_for(20ms);                                                // and any that follows it
    asio::read(peer, asio::dynamic_buffer(got), ec);
    BOOST_TEST((ec == asio::error::eof));
    BOOST_TEST(got == "BYE shutdown\n");
    BOOST_TEST_REQUIRE(!c->closed()); // still lingering: the count below is this socket's
    BOOST_TEST(tcp_segments_sent(fd) - before == 1u);
}

// A slow consumer fed by others (a fan-out server): send() is bounded whatever the producer. Past
// the hard limit the queued bytes go at once, later sends are ignored, and the close follows on the
// next turn (not inside send(): a broadcast loop stays valid), counted slow-consumer, with last words.
BOOST_FIXTURE_TEST_CASE(hard_limit_closes_a_slow_consumer_outside_send, fixture) {
    net::liveness_config cfg;
    cfg.output.high_water = 64 << 10;
    cfg.output.low_water = 16 << 10;
    cfg.output.hard_limit = 256 << 10;
    cfg.output.soft_limit = 0;
    std::vector<std::string> words;
    net::connection_hooks hooks;
    auto c = make(accept_one(), cfg, hooks);
    hooks.last_words = [&, raw = c.get()](net::close_reason r) {
        words.push_back(net::to_string(r));
        raw->send("BYE\n");
    };
    c->set_hooks(hooks);
    peer.set_option(asio::socket_base::receive_buffer_size(4096));
    const std::string msg(4096, 'x');
    std::size_t sent = 0;
    while (!c->closing() && sent < (64u << 20)) { // a producer that ignores writable()
        c->send(msg);
        sent += msg.size();
        BOOST_TEST_REQUIRE(!c->closing()); // never inside send()
        if (c->queued() == 0 || c->output_memory() < (8u << 10)) break; // dropped: past the limit
    }
    BOOST_TEST(c->output_memory() < (128u << 10)); // the backlog went at once
    for (int i = 0; i < 100; ++i) c->send(msg);        // ignored until the close
    BOOST_TEST(c->output_memory() < (128u << 10));
    run_until([&] { return c->closing(); });
    BOOST_TEST((c->reason() == net::close_reason::slow_consumer));
    BOOST_TEST((words == std::vector<std::string>{"slow-consumer"}));
    BOOST_TEST(closes(net::close_reason::slow_consumer) == 1u);
    BOOST_TEST(counters.snapshot().slow_consumers[static_cast<std::size_t>(net::slow_bound::hard_limit)] == 1u);
    BOOST_TEST(sent < (2u << 20)); // stopped near the hard limit, not after 64 MiB
}

// The output bound is configured once, in the liveness configuration ([output]): the context gives it
// to every connection made with it (no example copies it into the options by hand any more, and one
// that forgot — kv_server once did — validated [output] and then ignored it). Options that name
// another bound are refused, not silently overridden.
BOOST_FIXTURE_TEST_CASE(the_context_gives_its_connections_the_configured_output_bound, fixture) {
    net::liveness_config cfg;
    cfg.output.hard_limit = 300 << 10;
    cfg.output.soft_limit = 0;
    cfg.output.high_water = 100 << 10;
    cfg.output.low_water = 10 << 10;
    const net::connection_context ctx(wheel, cfg, &counters);
    BOOST_TEST((ctx.options.output == cfg.output));
    // And the connection is bounded by it: past the configured hard limit (not the default 8 MiB),
    // slow-consumer.
    auto c = std::make_shared<net::connection<tcp::socket>>(accept_one(), ctx);
    peer.set_option(asio::socket_base::receive_buffer_size(4096));
    const std::string msg(4096, 'h');
    std::size_t sent = 0;
    while (!c->closing() && sent < (64u << 20)) { // nothing is read, nothing polled
        const std::size_t before = c->queued();
        c->send(msg);
        sent += msg.size();
        if (c->queued() < before) break; // the backlog dropped: past the limit
    }
    run_until([&] { return c->closing(); });
    BOOST_TEST((c->reason() == net::close_reason::slow_consumer));
    BOOST_TEST(sent < (4u << 20));
}

// A soft limit below the high-water mark is judged all the same (the bound starts at the lower of
// the two limits, not at the water mark).
BOOST_FIXTURE_TEST_CASE(soft_limit_below_the_high_water_mark_still_closes, fixture) {
    net::liveness_config cfg;
    cfg.output.hard_limit = 0;
    cfg.output.soft_limit = 128 << 10; // the high-water mark stays at 1 MiB
    cfg.output.soft_limit_time = 100ms;
    auto c = make(accept_one(), cfg);
    const std::string msg(64 << 10, 'z');
    while (c->queued() <= (192u << 10)) { // the kernel's buffers full, then above the soft limit
        c->send(msg);
        poll();
    }
    BOOST_TEST(c->writable()); // below the high-water mark
    run_until([&] { return c->closing(); });
    BOOST_TEST((c->reason() == net::close_reason::slow_consumer));
}

BOOST_AUTO_TEST_CASE(output_policy_is_validated_with_its_keys) {
    net::output_policy o;
    o.low_water = o.high_water + 1;
    try {
        o.validate();
        BOOST_FAIL("accepted low_water above high_water");
    } catch (const net::config_error& e) {
        BOOST_TEST(e.field() == "output.low_water");
    }
    o = {};
    o.soft_limit = 16 << 20; // above the 8 MiB hard limit
    BOOST_CHECK_THROW(o.validate(), net::config_error);
    BOOST_TEST(net::parse_size("8MiB", "x") == (8u << 20));
    BOOST_TEST(net::parse_size("64kB", "x") == 64000u);
    BOOST_TEST(net::parse_size("100", "x") == 100u);
    BOOST_CHECK_THROW(net::parse_size("8 parsecs", "x"), net::config_error);
    BOOST_CHECK_THROW(net::parse_size("5GiB", "x"), net::config_error); // past 4 GiB - 1
}

// The linger is held in 32 bits of milliseconds: a negative one, or one past 49 days, is refused by
// name where the context is made ([connection] linger), and by the connection made without one.
BOOST_FIXTURE_TEST_CASE(linger_out_of_range_is_refused_with_its_key, fixture) {
    for (const auto bad : {std::chrono::milliseconds(-1), std::chrono::milliseconds(std::int64_t{1} << 32)}) {
        try {
            make(tcp::socket(io), lingering({}, bad)); // refused before the socket is used
            BOOST_FAIL("accepted a linger of " << bad.count() << " ms");
        } catch (const net::config_error& e) {
            BOOST_TEST(e.field() == "connection.linger");
            BOOST_TEST(e.accepted() == "0..4294967295 ms");
        }
        net::connection_options opts;
        opts.linger = bad;
        const auto own = [this](net::liveness_handler& h) { return net::connection_liveness(wheel, {}, h); };
        BOOST_CHECK_EXCEPTION(net::connection<tcp::socket>(tcp::socket(io), own, nullptr, opts), net::config_error,
                              [](const net::config_error& e) { return e.field() == "linger"; });
    }
    const auto longest = std::chrono::milliseconds(std::numeric_limits<std::uint32_t>::max());
    BOOST_TEST(!make(accept_one(), lingering({}, longest))->closing());
}

// TLS: a peer that never starts the handshake is closed handshake-timeout, one that sends garbage
// handshake-failed, one that closes or resets before a byte (a balancer's health check) peer-closed; each
// counted once, and the handshake's handler says which.
BOOST_FIXTURE_TEST_CASE(tls_handshake_under_its_deadline, fixture) {
    using tls = asio::ssl::stream<tcp::socket>;
    asio::ssl::context ctx(asio::ssl::context::tls_server);
    net::liveness_config cfg;
    cfg.limits.handshake_timeout = 100ms;
    enum class peer_does { nothing, garbage, leaves, resets };
    for (peer_does what : {peer_does::nothing, peer_does::garbage, peer_does::leaves, peer_does::resets}) {
        if (peer.is_open()) peer.close();
        auto c = make<tls>(tls(accept_one(), ctx), cfg);
        error_code got;
        bool done = false;
        c->async_handshake(asio::ssl::stream_base::server, [&](error_code ec) {
            got = ec;
            done = true;
        });
        if (what == peer_does::garbage) asio::write(peer, asio::buffer(std::string("GET / HTTP/1.0\r\n\r\n")));
        if (what == peer_does::leaves) peer.close();
        if (what == peer_does::resets) {
            peer.set_option(asio::socket_base::linger(true, 0)); // RST, as HAProxy's health checks end
            peer.close();
        }
        run_until([&] { return done && c->closed(); });
        if (what == peer_does::garbage) {
            BOOST_TEST((c->reason() == net::close_reason::handshake_failed));
            BOOST_TEST((got != net::errc::timed_out));
            BOOST_TEST(!!got);
        } else if (what == peer_does::leaves || what == peer_does::resets) {
            BOOST_TEST((c->reason() == net::close_reason::peer_closed));
            BOOST_TEST(!!got);
        } else {
            BOOST_TEST((c->reason() == net::close_reason::handshake_timeout));
            BOOST_TEST((got == net::errc::timed_out));
        }
    }
    BOOST_TEST(closes(net::close_reason::handshake_timeout) == 1u);
    BOOST_TEST(closes(net::close_reason::handshake_failed) == 1u);
    BOOST_TEST(closes(net::close_reason::peer_closed) == 2u);
}

// A heartbeat that falls due during a TLS handshake sends nothing: the protocol's ping would be
// written into a session not yet made (its write's end then started the application's read early,
// and a silent peer was closed io-error instead of by its handshake timeout).
BOOST_FIXTURE_TEST_CASE(no_ping_before_the_tls_handshake_is_done, fixture) {
    using tls = asio::ssl::stream<tcp::socket>;
    asio::ssl::context ctx(asio::ssl::context::tls_server);
    net::liveness_config cfg;
    cfg.limits.handshake_timeout = 300ms;
    cfg.heartbeat.interval = 20ms;
    cfg.heartbeat.timeout = 20ms;
    cfg.heartbeat.misses = 100;
    int pings = 0;
    net::connection_hooks hooks;
    hooks.send_ping = [&] { ++pings; };
    auto c = make<tls>(tls(accept_one(), ctx), cfg, hooks);
    bool done = false;
    c->async_handshake(asio::ssl::stream_base::server, [&](error_code) { done = true; });
    run_until([&] { return done && c->closed(); }); // the peer says nothing
    BOOST_TEST(pings == 0);
    BOOST_TEST((c->reason() == net::close_reason::handshake_timeout));
}

// The configuration's keepalive reaches the socket when the connection is made with a context — no
// call needed (each example once made it by hand); apply_socket_options sets others later; a socket
// not open yet is left alone.
BOOST_FIXTURE_TEST_CASE(keepalive_options_are_applied, fixture) {
    auto keep_idle = [](auto& c) {
        int idle = 0;
        socklen_t len = sizeof idle;
        ::getsockopt(c->lowest_layer().native_handle(), IPPROTO_TCP, TCP_KEEPIDLE, &idle, &len);
        return idle;
    };
    net::liveness_config cfg;
    cfg.keepalive.enabled = true;
    cfg.keepalive.idle = std::chrono::seconds(30);
    cfg.keepalive.interval = std::chrono::seconds(5);
    cfg.keepalive.count = 4;
    auto c = make(accept_one(), cfg);
    asio::socket_base::keep_alive on;
    c->lowest_layer().get_option(on);
    BOOST_TEST(on.value());
    BOOST_TEST(keep_idle(c) == 30);
    net::keepalive_options k = cfg.keepalive;
    k.idle = std::chrono::seconds(40);
    BOOST_TEST(!c->apply_socket_options(k));
    BOOST_TEST(keep_idle(c) == 40);
    auto unopened = make(tcp::socket(io), cfg); // nothing to set yet: no error, no throw
    BOOST_TEST(!unopened->lowest_layer().is_open());
}

// heartwheel assumes three things of Asio beyond its documented interface (heartwheel/asio.hpp lists
// them): each is checked here against the Asio in use, and an Asio outside the range heartwheel knows
// fails this test by name — the library itself then falls back to Asio's own allocation.
BOOST_AUTO_TEST_CASE(the_asio_in_use_is_one_heartwheel_knows) {
#if defined(HEARTWHEEL_BOOST_ASIO)
    const long version = BOOST_ASIO_VERSION;
#else
    const long version = ASIO_VERSION;
#endif
#if !defined(HEARTWHEEL_ASIO_INTERNALS_KNOWN)
    BOOST_FAIL("Asio " << version / 100000 << "." << version / 100 % 1000 << " is not one heartwheel knows: check "
               "the receive's memory (net/detail/stream_core.hpp: asio::detail::reactive_wait_op's template), the strand "
               "types (net/detail/home_executor.hpp) and the TLS truncation's category (net/detail/tls_traits.hpp), "
               "then widen HEARTWHEEL_ASIO_INTERNALS_KNOWN in heartwheel/asio.hpp");
#endif
    BOOST_TEST_MESSAGE("Asio " << version);
    // 1. The wait operation a receive keeps pending fits the stream's memory: no heap block of its own.
#if defined(HEARTWHEEL_ASIO_REACTIVE_WAIT)
    BOOST_TEST(net::detail::stream_core<tcp::socket>::memory_size > 0u);
#endif
    // 2. A strand behind any_io_executor is recognised (the thread-pool model's posting depends on it).
    asio::io_context io;
    BOOST_TEST(net::detail::is_strand_executor(asio::any_io_executor(asio::make_strand(io))));
    BOOST_TEST(net::detail::is_strand_executor(asio::any_io_executor(asio::make_strand(asio::any_io_executor(io.get_executor())))));
    BOOST_TEST(!net::detail::is_strand_executor(asio::any_io_executor(io.get_executor())));
    // 3. The TLS truncation is recognised by its category, from the real error.
    BOOST_TEST(net::detail::is_tls_truncation(error_code(asio::ssl::error::stream_truncated)));
    BOOST_TEST(!net::detail::is_tls_truncation(error_code(asio::error::eof)));
}

// The connection says what a failed read means: the peer's end of stream (eof, or over TLS a TCP close
// without close_notify) is peer-closed, anything else io-error; on a connection already closing the
// first reason stays.
BOOST_FIXTURE_TEST_CASE(a_failed_read_is_classified_by_the_connection, fixture) {
    const struct {
        error_code ec;
        net::close_reason want;
    } cases[] = {{asio::error::eof, net::close_reason::peer_closed},
                 {asio::ssl::error::stream_truncated, net::close_reason::peer_closed},
                 {asio::error::connection_reset, net::close_reason::io_error},
                 {asio::error::bad_descriptor, net::close_reason::io_error}};
    for (const auto& k : cases) {
        auto c = make(accept_one(), {});
        c->read_failed(k.ec);
        BOOST_TEST(c->closed(), k.ec.message());
        BOOST_TEST((c->reason() == k.want), k.ec.message());
        peer.close();
    }
    BOOST_TEST(closes(net::close_reason::peer_closed) == 2u);
    BOOST_TEST(closes(net::close_reason::io_error) == 2u);

    auto c = make(accept_one(), {});
    c->close(net::close_reason::max_age); // lingering for its goodbye
    c->read_failed(net::make_error_code(net::errc::timed_out));
    BOOST_TEST((c->reason() == net::close_reason::max_age));
    BOOST_TEST(closes(net::close_reason::max_age) == 1u);
    BOOST_TEST(closes(net::close_reason::io_error) == 2u); // counted once, under the first reason
}

// A liveness of the application's own (the echo server's steady_timer baseline is one) is made in
// place by its factory, returned by value though it cannot be moved, and names the wheel the
// connection's own timers go on and the counters its closes are counted in: the connection keeps
// no copy of either.
BOOST_FIXTURE_TEST_CASE(a_liveness_of_ones_own_names_the_wheel_and_the_counters, fixture) {
    struct own_liveness {
        own_liveness(heartwheel::timer_scheduler& s, net::liveness_counters& n) : svc(&s), counters_(&n) {}
        own_liveness(const own_liveness&) = delete;
        own_liveness& operator=(const own_liveness&) = delete;
        void handshake_started() {}
        void handshake_done() {}
        void on_read(bool) { ++reads; }
        void on_write_started() {}
        void on_write_progress() {}
        void on_write_complete(bool) {}
        void on_pong() {}
        void close() { ++closes; }
        heartwheel::timer_scheduler& scheduler() const noexcept { return *svc; }
        net::liveness_counters* counters() const noexcept { return counters_; }
        heartwheel::timer_scheduler* svc;
        net::liveness_counters* counters_;
        int reads = 0, closes = 0;
    };
    net::liveness_counters own;
    using conn = net::connection<tcp::socket, own_liveness>;
    auto c = std::make_shared<conn>(accept_one(), [&](net::liveness_handler&) { return own_liveness(wheel, own); });
    net::connection_hooks hooks;
    hooks.last_words = [&](net::close_reason) { c->send("BYE\n"); };
    c->set_hooks(std::move(hooks));
    c->close(net::close_reason::shutdown, 200ms); // the goodbye lingers on the liveness's wheel
    BOOST_TEST(c->liveness().closes == 1);
    BOOST_TEST(own.snapshot().closes[static_cast<std::size_t>(net::close_reason::shutdown)] == 1u);
    BOOST_TEST(counters.snapshot().closes[static_cast<std::size_t>(net::close_reason::shutdown)] == 0u);
    BOOST_TEST(wheel.size() >= 1u); // the linger
    run_until([&] { return c->closed(); }); // the linger ends it (the peer never ends its side)
}

// A write the socket takes at once is not started as a pending write: nothing waits, so nothing is
// timed (a write timeout arms no timer for it) — nginx's way, and the cost of a write watch per
// response gone. A write the socket cannot take now (a peer that does not read) is started, and
// heard as before: its completion, then the drain once the peer reads.
BOOST_FIXTURE_TEST_CASE(only_a_write_the_socket_cannot_take_now_is_started, fixture) {
    struct write_log {
        int started = 0, completed = 0, drained = 0;
    };
    struct logging_liveness {
        logging_liveness(heartwheel::timer_scheduler& s, write_log& l) : svc(&s), log(&l) {}
        logging_liveness(const logging_liveness&) = delete;
        logging_liveness& operator=(const logging_liveness&) = delete;
        void handshake_started() {}
        void handshake_done() {}
        void on_read(bool) {}
        void on_write_started() { ++log->started; }
        void on_write_progress() {}
        void on_write_complete(bool drained) {
            ++log->completed;
            if (drained) ++log->drained;
        }
        void on_pong() {}
        void close() {}
        heartwheel::timer_scheduler& scheduler() const noexcept { return *svc; }
        net::liveness_counters* counters() const noexcept { return nullptr; }
        heartwheel::timer_scheduler* svc;
        write_log* log;
    };
    write_log log;
    using conn = net::connection<tcp::socket, logging_liveness>;
    auto c = std::make_shared<conn>(accept_one(), [&](net::liveness_handler&) { return logging_liveness(wheel, log); });
    c->send("hello\n");
    run_until([&] { return log.drained == 1; });
    BOOST_TEST(log.started == 0); // taken at once
    std::string got(6, '\0');
    asio::read(peer, asio::buffer(got));
    BOOST_TEST(got == "hello\n");

    // The peer stops reading: the kernel's buffers fill, and a write waits.
    const std::string chunk(64 << 10, 'x');
    std::size_t sent = 0;
    for (int i = 0; i < 512 && log.started == 0; ++i) { // 32 MiB at most
        c->send(chunk);
        sent += chunk.size();
        run_until([&] { return log.started > 0 || c->queued() == 0; });
    }
    BOOST_TEST_REQUIRE(log.started >= 1);
    BOOST_TEST(c->queued() > 0u);
    const int drained = log.drained;
    peer.non_blocking(true);
    std::size_t read = 0;
    std::vector<char> sink(1 << 20);
    run_until([&] { // the peer reads it all: the waiting write completes, the output drains
        error_code ec;
        read += peer.read_some(asio::buffer(sink), ec);
        return read == sent && log.drained > drained;
    }, 20000ms);
    BOOST_TEST(read == sent);
    BOOST_TEST(c->queued() == 0u);
}

// make_connection_with: the connection and its handler in one heap block. The handler is made with
// its connection (a reference it keeps), hears the connection's calls, and the connection holds it —
// so the block — while open even when nothing else does; the close lets go, and the block goes once
// its pending read completes. The handler is destroyed first, while its connection still exists.
namespace {
struct joint_session final : net::connection_handler {
    using connection_type = net::connection<tcp::socket>;
    joint_session(connection_type& conn, std::vector<std::string>& log) : c(conn), log(log) {}
    ~joint_session() override { log.push_back(c.closed() ? "destroyed after its close" : "destroyed open"); }
    void last_words(net::close_reason r) override { c.send("BYE " + std::string(net::to_string(r)) + "\n"); }
    void on_close(net::close_reason r) override { log.push_back("closed " + std::string(net::to_string(r))); }
    std::shared_ptr<joint_session> ref() { return {c.shared_from_this(), this}; }
    connection_type& c;
    std::vector<std::string>& log;
};
} // namespace

BOOST_FIXTURE_TEST_CASE(a_connection_made_with_its_handler_holds_it_until_closed, fixture) {
    net::liveness_config cfg;
    cfg.idle.reader_idle = 100ms;
    std::vector<std::string> log;
    auto s = net::make_connection_with<joint_session::connection_type>(
        [&log](joint_session::connection_type& c) { return joint_session(c, log); }, accept_one(),
        net::connection_context(wheel, lingering(cfg), &counters));
    const auto at = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p); };
    BOOST_TEST(at(s.get()) > at(&s->c)); // one block: the handler after its connection
    BOOST_TEST(at(s.get()) < at(&s->c) + sizeof(joint_session::connection_type) + 64);
    BOOST_TEST(s->ref().get() == s.get());
    std::weak_ptr<joint_session> watch = s;
    s.reset(); // the connection holds its handler while open
    run_for(20ms);
    BOOST_TEST(!watch.expired());
    BOOST_TEST(log.empty());
    error_code read_error;
    watch.lock()->c.stream().async_receive([&read_error, keep = watch.lock()->ref()](error_code ec, net::read_chunk) {
        read_error = ec; // a session's read loop: its pending read holds it too
    });
    run_until([&] { return watch.expired(); }); // the reader-idle close, its linger, the read's completion
    BOOST_TEST((read_error == net::errc::timed_out));
    BOOST_TEST(closes(net::close_reason::reader_idle) == 1u);
    BOOST_TEST_REQUIRE(log.size() == 2u);
    BOOST_TEST(log[0] == "closed reader-idle");
    BOOST_TEST(log[1] == "destroyed after its close");
    std::string bye(32, '\0');
    error_code ec;
    const std::size_t n = peer.read_some(asio::buffer(bye), ec);
    BOOST_TEST(bye.substr(0, n) == "BYE reader-idle\n");
}
