// teardown_test.cpp — no pending handler outlives its wheel or its tracker. A coroutine suspended in
// `co_await tracker.track(...)` or `co_await wheel.async_wait(...)` holds its connection (and so the
// tracker) through its frame; when the server stops the io_context and tears down, the wheel goes
// first (it is declared after the io_context). The frame must then be destroyed, not leaked: the
// connection's destructor runs. In the ASan build LeakSanitizer also checks that nothing is left.
#define BOOST_TEST_MODULE teardown
#include <boost/test/unit_test.hpp>

#include <heartwheel/asio_wheel.hpp>
#include <heartwheel/error.hpp>
#include <heartwheel/net/connection/connection.hpp>
#include <heartwheel/net/policies/request_tracker.hpp>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/use_awaitable.hpp>

#include <memory>

using namespace std::chrono_literals;
namespace net = heartwheel::net;

namespace {

struct connection {
    connection(heartwheel::asio_wheel& w, asio::io_context& io, std::chrono::milliseconds timeout, bool& gone)
        : requests(w, io.get_executor(), policy(timeout)), gone(gone) {}
    ~connection() { gone = true; }
    static net::request_policy policy(std::chrono::milliseconds t) {
        net::request_policy p;
        p.timeout = t;
        return p;
    }
    net::request_tracker<int> requests;
    bool& gone;
};

enum class waits_on { request_with_deadline, request_without_deadline, wheel_wait };

// Runs a coroutine that owns a connection and waits; stops and tears down with the wait pending.
// Returns whether the connection (owned only by the coroutine's frame) was destroyed.
bool frame_destroyed_at_teardown(waits_on what, bool& resumed) {
    bool gone = false;
    {
        asio::io_context io;
        auto wheel = std::make_unique<heartwheel::asio_wheel>(io.get_executor());
        auto conn = std::make_shared<connection>(*wheel, io, what == waits_on::request_without_deadline ? 0ms : 10min, gone);
        asio::co_spawn(
            io,
            [conn, what, w = wheel.get(), &resumed]() -> asio::awaitable<void> {
                if (what == waits_on::wheel_wait) co_await w->async_wait(10min, asio::use_awaitable);
                else co_await conn->requests.track(1, asio::use_awaitable);
                resumed = true;
            },
            asio::detached);
        conn.reset();
        io.run_for(20ms); // the coroutine is suspended in its wait
        BOOST_TEST_REQUIRE(!gone);
        io.stop();
        wheel.reset(); // the wheel goes first, then the io_context
    }
    return gone;
}

} // namespace

BOOST_AUTO_TEST_CASE(pending_request_with_deadline_is_not_leaked) {
    bool resumed = false;
    BOOST_TEST(frame_destroyed_at_teardown(waits_on::request_with_deadline, resumed));
    BOOST_TEST(!resumed); // destroyed with the stopped io_context, not resumed
}

BOOST_AUTO_TEST_CASE(pending_request_without_deadline_is_not_leaked) {
    bool resumed = false;
    BOOST_TEST(frame_destroyed_at_teardown(waits_on::request_without_deadline, resumed));
}

BOOST_AUTO_TEST_CASE(pending_wheel_wait_is_not_leaked) {
    bool resumed = false;
    BOOST_TEST(frame_destroyed_at_teardown(waits_on::wheel_wait, resumed));
}

// The wheel stops while the io_context keeps running: the pending request completes with
// wheel_stopped (an error the coroutine sees), and its tracker forgets it.
BOOST_AUTO_TEST_CASE(stopped_wheel_completes_pending_requests) {
    asio::io_context io;
    heartwheel::asio_wheel wheel(io.get_executor());
    bool gone = false;
    connection conn(wheel, io, 0ms, gone);
    std::error_code got;
    conn.requests.track(5, [&](std::error_code ec, net::request_state) { got = ec; });
    io.poll();
    BOOST_TEST(conn.requests.outstanding() == 1u);
    wheel.shutdown();
    io.poll();
    BOOST_TEST((got == heartwheel::errc::wheel_stopped));
    BOOST_TEST(conn.requests.outstanding() == 0u);
}

// A session that owns its connection and is its handler (the shape the connection's docs show): a
// cycle until the connection closes. An application that stops the io_context with such sessions
// open (a read pending, heartbeats on) must not leak them: the io_context's shutdown makes each open
// connection let go of its handler. LeakSanitizer (ASan build) checks that nothing is left either.
namespace {
struct session final : net::connection_handler, std::enable_shared_from_this<session> {
    explicit session(bool& gone) : gone(gone) {}
    ~session() override { gone = true; }
    void start() {
        c->stream().async_receive([self = shared_from_this()](std::error_code ec, net::read_chunk) {
            if (!ec) self->start();
        });
    }
    void send_ping() override { c->send("PING\n"); }
    std::shared_ptr<net::connection<asio::ip::tcp::socket>> c;
    bool& gone;
};
} // namespace

BOOST_AUTO_TEST_CASE(sessions_that_are_their_connections_handler_are_freed_by_io_stop) {
    bool gone[3] = {false, false, false};
    {
        asio::io_context io;
        auto wheel = std::make_unique<heartwheel::asio_wheel>(io.get_executor());
        asio::ip::tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
        std::vector<asio::ip::tcp::socket> peers;
        net::liveness_config cfg;
        cfg.heartbeat.interval = 10min;
        cfg.idle.reader_idle = 10min;
        for (bool& g : gone) {
            peers.emplace_back(io).connect(acceptor.local_endpoint());
            auto s = std::make_shared<session>(g);
            s->c = std::make_shared<net::connection<asio::ip::tcp::socket>>(acceptor.accept(),
                                                                           net::connection_context(*wheel, cfg), s);
            s->start();
        }
        io.run_for(20ms);
        for (bool g : gone) BOOST_TEST_REQUIRE(!g); // open: kept by their pending reads and the cycle
        io.stop();
        wheel.reset(); // the wheel goes first, then the io_context
    }
    for (bool g : gone) BOOST_TEST(g);
}
