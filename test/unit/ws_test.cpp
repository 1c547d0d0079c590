// ws_test — heartwheel/beast/websocket.hpp against Beast's own client, on real sockets: a broadcast
// shares one buffer among its recipients (queued by reference, freed when the last has written it); a
// session that owns its ws_connection and is its handler is freed by io.stop(); ws_options are
// validated against the output bound they will be queued under; a peer judged dead gets its close
// frame and the FIN in one segment, never before its silence warrants.
#include <heartwheel/asio_wheel.hpp>
#include <heartwheel/beast/websocket.hpp>

#define BOOST_TEST_MODULE ws
#include <boost/test/unit_test.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/websocket.hpp>

#include "tcp_segments.hpp"

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace asio = boost::asio;
namespace net = heartwheel::net;
namespace ws = heartwheel::ws;
namespace websocket = boost::beast::websocket;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

struct fixture {
    asio::io_context io;
    std::unique_ptr<heartwheel::asio_wheel> wheel = std::make_unique<heartwheel::asio_wheel>(io.get_executor());
    net::liveness_counters counters;
    net::connection_context ctx{*wheel, net::liveness_config{}, &counters};
    tcp::acceptor acceptor{io, {asio::ip::make_address("127.0.0.1"), 0}};

    /// A client that upgrades and keeps every message it reads.
    struct client {
        websocket::stream<tcp::socket> s;
        std::vector<std::string> got;
        explicit client(asio::io_context& io) : s(io) {}
    };
    std::shared_ptr<client> connect_client() {
        auto c = std::make_shared<client>(io);
        c->s.next_layer().connect(acceptor.local_endpoint());
        asio::co_spawn(io, [c]() -> asio::awaitable<void> {
            if (auto [ec] = co_await c->s.async_handshake("localhost", "/", use_tuple); ec) co_return;
            for (;;) {
                boost::beast::flat_buffer b;
                auto [ec, n] = co_await c->s.async_read(b, use_tuple);
                if (ec) co_return;
                c->got.push_back(boost::beast::buffers_to_string(b.data()));
            }
        }, asio::detached);
        return c;
    }
    template <class F>
    void run_until(F done) {
        for (int i = 0; i < 300 && !done(); ++i) io.run_for(10ms);
    }
};

} // namespace

BOOST_AUTO_TEST_CASE(a_broadcast_shares_one_buffer_among_its_recipients) {
    fixture f;
    std::vector<std::shared_ptr<fixture::client>> clients;
    std::vector<std::shared_ptr<ws::ws_connection<tcp::socket>>> members;
    for (int i = 0; i < 3; ++i) {
        clients.push_back(f.connect_client());
        auto m = ws::ws_connection<tcp::socket>::create(f.acceptor.accept(), f.ctx);
        asio::co_spawn(f.io, [m]() -> asio::awaitable<void> { co_await m->async_accept(use_tuple); }, asio::detached);
        members.push_back(m);
    }
    const ws::shared_message message = ws::make_message(std::string(1000, 'x'));
    for (auto& m : members) m->send(message);
    BOOST_TEST(message.use_count() == 4); // queued by reference: no copy per recipient
    for (auto& m : members) BOOST_TEST(m->queued() == 1000u + ws::message_overhead);
    f.run_until([&] {
        for (auto& c : clients)
            if (c->got.empty()) return false;
        return true;
    });
    for (auto& c : clients) {
        BOOST_REQUIRE(c->got.size() == 1u);
        BOOST_TEST(c->got[0] == *message);
    }
    BOOST_TEST(message.use_count() == 1); // every queue let it go once written
    for (auto& m : members) BOOST_TEST(m->queued() == 0u);
}

BOOST_AUTO_TEST_CASE(a_flood_of_tiny_messages_fills_the_bound_by_what_it_holds) {
    // 20,000 one-byte messages to a reader that never reads: 20 KB of text, ~1.3 MB held. Counted
    // with their overhead they pass a 1 MiB hard limit: slow-consumer.
    fixture f;
    net::liveness_config cfg;
    cfg.output.hard_limit = 1 << 20;
    cfg.output.soft_limit = 0;
    cfg.output.high_water = 512 << 10;
    cfg.output.low_water = 256 << 10;
    net::connection_context ctx(*f.wheel, cfg, &f.counters);
    auto c = f.connect_client();
    auto m = ws::ws_connection<tcp::socket>::create(f.acceptor.accept(), ctx);
    for (int i = 0; i < 20000; ++i) m->send(std::string_view("x"));
    f.run_until([&] { return m->connection().closing(); });
    BOOST_TEST(m->connection().closing());
    BOOST_TEST(f.counters.snapshot().closes[static_cast<std::size_t>(net::close_reason::slow_consumer)] == 1u);
    BOOST_TEST(f.counters.snapshot().slow_consumers[static_cast<std::size_t>(net::slow_bound::hard_limit)] == 1u);
}

BOOST_AUTO_TEST_CASE(a_count_bound_says_so) {
    // 100 queued messages against max_queued_messages 50: slow-consumer, counted as the count's.
    fixture f;
    net::connection_context ctx(*f.wheel, net::liveness_config{}, &f.counters);
    auto c = f.connect_client();
    ws::ws_options o;
    o.max_queued_messages = 50;
    auto m = ws::ws_connection<tcp::socket>::create(f.acceptor.accept(), ctx, nullptr, o);
    for (int i = 0; i < 100; ++i) m->send(std::string_view("x"));
    f.run_until([&] { return m->connection().closing(); });
    const auto by_bound = f.counters.snapshot().slow_consumers;
    BOOST_TEST(by_bound[static_cast<std::size_t>(net::slow_bound::message_count)] == 1u);
    BOOST_TEST(by_bound[static_cast<std::size_t>(net::slow_bound::hard_limit)] == 0u);
}

BOOST_AUTO_TEST_CASE(options_are_validated_against_the_output_bound) {
    net::output_policy out;
    out.hard_limit = 1 << 20;
    ws::ws_options o;
    o.max_message = 2 << 20; // one such message would close every reader it went to
    try {
        o.validate(out);
        BOOST_FAIL("no error");
    } catch (const net::config_error& e) {
        BOOST_TEST(e.field() == "websocket.max_message");
        BOOST_TEST(std::string(e.what()).find("hard limit") != std::string::npos, e.what());
    }
    o.max_message = 64 << 10;
    o.validate(out);
    o.max_queued_messages = 0;
    BOOST_CHECK_THROW(o.validate(out), net::config_error);
}

// A session that owns its ws_connection and is its handler: a cycle until the connection closes.
// An application that leaves with io.stop() must not leak it (LeakSanitizer checks in the ASan build).
namespace {
struct session final : net::connection_handler {
    explicit session(bool& gone) : gone(gone) {}
    ~session() override { gone = true; }
    std::shared_ptr<ws::ws_connection<tcp::socket>> ws;
    bool& gone;
};
} // namespace

BOOST_AUTO_TEST_CASE(a_session_owning_its_ws_connection_is_freed_by_io_stop) {
    bool gone[2] = {false, false};
    {
        fixture f;
        std::vector<std::shared_ptr<fixture::client>> clients;
        for (bool& g : gone) {
            clients.push_back(f.connect_client());
            auto s = std::make_shared<session>(g);
            s->ws = ws::ws_connection<tcp::socket>::create(f.acceptor.accept(), f.ctx, s);
            asio::co_spawn(f.io, [w = s->ws]() -> asio::awaitable<void> {
                if (auto [ec] = co_await w->async_accept(use_tuple); ec) co_return;
                boost::beast::flat_buffer b;
                co_await w->async_read(b, use_tuple); // pending when the context stops
            }, asio::detached);
        }
        f.io.run_for(100ms);
        for (bool g : gone) BOOST_TEST_REQUIRE(!g); // open: held by the cycle and the pending read
        f.io.stop();
        clients.clear();
        f.wheel.reset(); // the wheel before the io_context, as an application tears down
    }
    for (bool g : gone) BOOST_TEST(g);
}

// A client that writes its upgrade and its first frames in one segment, pings with a payload, and
// closes with its own code: the two messages come out whole (the bytes behind the request and behind
// the first message are kept for the next reads), the ping is answered with its payload, and the
// close is answered with the client's code before the connection closes peer-closed.
BOOST_AUTO_TEST_CASE(pipelined_frames_a_ping_and_a_close_are_answered_in_order) {
    fixture f;
    const auto masked = [](unsigned op, std::string_view payload) {
        std::string out{static_cast<char>(0x80 | op), static_cast<char>(0x80 | payload.size()), 1, 2, 3, 4};
        for (std::size_t i = 0; i < payload.size(); ++i) out.push_back(static_cast<char>(payload[i] ^ (1 + i % 4)));
        return out;
    };
    std::string answer;
    std::thread peer([&, port = f.acceptor.local_endpoint().port()] {
        asio::io_context io;
        tcp::socket s(io);
        s.connect({asio::ip::make_address("127.0.0.1"), port});
        const std::string upgrade = "GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
                                    "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n";
        asio::write(s, asio::buffer(upgrade + masked(1, "first") + masked(9, "hi") + masked(1, "second") +
                                    masked(8, std::string("\x0F\xA0", 2))));
        boost::system::error_code ec;
        char buf[512];
        for (std::size_t n; (n = s.read_some(asio::buffer(buf), ec)) > 0 && !ec;) answer.append(buf, n);
    });
    auto m = ws::ws_connection<tcp::socket>::create(f.acceptor.accept(), f.ctx);
    std::vector<std::string> got;
    boost::system::error_code last;
    asio::co_spawn(f.io, [&]() -> asio::awaitable<void> {
        if (auto [ec] = co_await m->async_accept(use_tuple); ec) co_return;
        for (;;) {
            boost::beast::flat_buffer b;
            auto [ec, n] = co_await m->async_read(b, use_tuple);
            if (ec) {
                last = ec;
                co_return;
            }
            got.push_back(boost::beast::buffers_to_string(b.data()));
        }
    }, asio::detached);
    f.run_until([&] { return m->connection().closed(); });
    peer.join();
    BOOST_TEST(got == (std::vector<std::string>{"first", "second"}), boost::test_tools::per_element());
    BOOST_TEST((last == websocket::error::closed), last.message());
    const auto body = answer.substr(answer.find("\r\n\r\n") + 4);
    BOOST_TEST(answer.find("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=") != std::string::npos, answer);
    BOOST_TEST(body == std::string("\x8A\x02hi\x88\x02\x0F\xA0", 8)); // the pong, then the close echoing 4000
    BOOST_TEST(f.counters.snapshot().closes[static_cast<std::size_t>(net::close_reason::peer_closed)] == 1u);
}

// A peer judged dead (heartbeat) is told why in a close frame that leaves with the FIN, in one segment
// (counted on the peer's side with TCP_INFO: a second segment for the FIN would cost a transmit and a
// receive more per death), and never before interval + timeout after its last pong.
BOOST_AUTO_TEST_CASE(a_dead_peer_gets_its_close_frame_and_the_fin_in_one_segment) {
    fixture f;
    net::liveness_config cfg;
    cfg.heartbeat.interval = 100ms;
    cfg.heartbeat.timeout = 100ms;
    cfg.heartbeat.misses = 1;
    cfg.heartbeat.jitter = 0;
    net::connection_context ctx{*f.wheel, cfg, &f.counters};
    std::string tail;
    std::uint32_t segments = 0;
    std::chrono::steady_clock::time_point last_pong{}, closed_at{};
    std::thread peer([&, port = f.acceptor.local_endpoint().port()] {
        asio::io_context io;
        tcp::socket s(io);
        s.connect({asio::ip::make_address("127.0.0.1"), port});
        asio::write(s, asio::buffer(std::string("GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
                                                "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")));
        std::string in;
        boost::system::error_code ec;
        char buf[512];
        const auto more = [&] {
            const std::size_t n = s.read_some(asio::buffer(buf), ec);
            in.append(buf, ec ? 0 : n);
            return !ec;
        };
        while (in.find("\r\n\r\n") == std::string::npos && more()) {
        }
        in.erase(0, in.find("\r\n\r\n") + 4);
        static constexpr unsigned char pong[] = {0x8A, 0x80, 0, 0, 0, 0}; // masked, empty
        for (int pings = 0; pings < 3;) { // two answered, the third not
            while (in.size() < 2 && more()) {
            }
            if (in.size() < 2) return;
            const std::size_t len = 2u + (static_cast<unsigned char>(in[1]) & 0x7fu);
            while (in.size() < len && more()) {
            }
            if (in.size() < len) return;
            const bool ping = (static_cast<unsigned char>(in[0]) & 0x0fu) == 0x9u;
            in.erase(0, len);
            if (!ping) continue;
            if (++pings < 3) {
                asio::write(s, asio::buffer(pong));
                last_pong = std::chrono::steady_clock::now();
            }
        }
        const std::uint32_t before = tcp_segments_received(s.native_handle());
        while (more()) {
        }
        closed_at = std::chrono::steady_clock::now();
        segments = tcp_segments_received(s.native_handle()) - before;
        tail = in;
    });
    auto m = ws::ws_connection<tcp::socket>::create(f.acceptor.accept(), ctx);
    asio::co_spawn(f.io, [&]() -> asio::awaitable<void> {
        if (auto [ec] = co_await m->async_accept(use_tuple); ec) co_return;
        for (;;) {
            boost::beast::flat_buffer b;
            if (auto [ec, n] = co_await m->async_read(b, use_tuple); ec) co_return;
        }
    }, asio::detached);
    f.run_until([&] { return m->connection().closed(); });
    peer.join();
    BOOST_TEST_REQUIRE(tail.size() >= 4u);
    BOOST_TEST(static_cast<unsigned char>(tail[0]) == 0x88u); // a close frame
    BOOST_TEST(tail.find("heartbeat-timeout") != std::string::npos, tail);
    BOOST_TEST(segments == 1u); // the close frame and the FIN together
    BOOST_TEST((closed_at - last_pong >= 200ms)); // interval + timeout: never early
    BOOST_TEST(f.counters.snapshot().closes[static_cast<std::size_t>(net::close_reason::heartbeat_timeout)] == 1u);
}
