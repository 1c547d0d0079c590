// http_server_test — heartwheel/beast/http_server.hpp on real sockets, its wheel's clock moved by the
// test: a kept-alive connection quiet past the eager read's grace is parked (its connection freed, one
// block left besides Asio's), made again when its client's next request comes — the requests it
// served counting on toward max_requests — and otherwise closed keepalive-timeout at the deadline it
// had, never before. A parked connection is still one of its context's: a drain or a server's stop
// closes it with their reason, and a client's end of stream while parked is read as peer-closed. A
// connection its application still holds (an answer to come) is not parked, nor one whose liveness
// judges more than the keep-alive. Each close counted once. And the thread-pool model: connections
// on a strand of a two-thread io_context park and wake, and a stop from another thread closes them.
#include <heartwheel/asio_wheel.hpp>
#include <heartwheel/beast/http_server.hpp>
#include <heartwheel/testing/manual_scheduler.hpp>

#define BOOST_TEST_MODULE http_server
#include <boost/test/unit_test.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http.hpp>

#include "heap_count.hpp"
#include "run_until.hpp"

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

namespace asio = boost::asio;
namespace net = heartwheel::net;
namespace http = heartwheel::http;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;
using request = bhttp::request<bhttp::string_body>;
using connection = http::http_connection<tcp::socket>;

namespace {

// The application: answers each request at once; with `hold` it also keeps the connection (to
// send to it later, say).
struct app_state {
    std::vector<std::string> read;
    bool hold = false;
    std::shared_ptr<connection> held;
};
struct app {
    app_state* s;
    void operator()(connection& c, request&& req) const {
        s->read.push_back(std::string(req.target()));
        if (s->hold) s->held = std::shared_ptr<connection>(c.connection().shared_from_this(), &c);
        bhttp::response<bhttp::string_body> res(bhttp::status::ok, req.version());
        res.body() = "hi\n";
        c.send(res);
    }
};

struct fixture {
    asio::io_context io;
    heartwheel::testing::manual_scheduler clock;
    net::liveness_counters counters;
    net::connection_context ctx;
    app_state state;
    http::server<tcp::socket, app> server;
    tcp::acceptor acceptor{io, {asio::ip::make_address("127.0.0.1"), 0}};
    tcp::socket client{io};

    explicit fixture(http::http_policy p = policy(), net::liveness_config config = {})
        : ctx(clock, std::move(config), &counters), server(ctx, p, app{&state}) {
        acceptor.async_accept([this](boost::system::error_code ec, tcp::socket s) {
            BOOST_REQUIRE(!ec);
            server.serve(std::move(s));
        });
        client.connect(acceptor.local_endpoint());
        io_turns();
    }
    static http::http_policy policy() {
        http::http_policy p;
        p.keepalive_timeout = 1000ms;
        return p;
    }
    std::size_t closes(net::close_reason r) const { return counters.snapshot().closes[static_cast<std::size_t>(r)]; }
    std::size_t closes() const { return counters.snapshot().closes_total(); }
    void io_turns() {
        io.restart();
        io.run_for(30ms);
    }
    void get(const std::string& target) { asio::write(client, asio::buffer("GET " + target + " HTTP/1.1\r\nHost: t\r\n\r\n")); }
    // The client reads an answer, the server running meanwhile (bounded).
    bhttp::response<bhttp::string_body> answered() {
        boost::beast::flat_buffer buf;
        bhttp::response<bhttp::string_body> res;
        std::optional<boost::system::error_code> done;
        bhttp::async_read(client, buf, res, [&](boost::system::error_code ec, std::size_t) { done = ec; });
        hwtest::run_until(io, [&] { return done.has_value(); });
        BOOST_TEST(!*done);
        return res;
    }
    // A request answered, then quiet past the eager read's grace: parked if it may be.
    void request_then_quiet(const std::string& target) {
        get(target);
        io_turns();
        answered();
        io_turns();
        clock.step_by(3ms);
        io_turns();
    }
    // The client sees the server's end: a silent close (FIN, nothing said), within 5 s.
    void sees_silent_close() {
        char c;
        std::optional<boost::system::error_code> done;
        client.async_read_some(asio::buffer(&c, 1), [&](boost::system::error_code ec, std::size_t) { done = ec; });
        hwtest::run_until(io, [&] { return done.has_value(); });
        BOOST_TEST(*done == asio::error::eof);
    }
};

} // namespace

// A client quiet past the grace is parked: the connection is gone, one block held (the parked
// connection with Asio's wait in it). Its next request makes it again and is answered, and — its
// client found quiet — it parks again at the answer, with no grace, keeping nothing of the request.
// A client quick again is read eagerly and parked after the grace; the keep-alive deadline counts
// from its answer however late the grace's end was seen: not a moment before, closed
// keepalive-timeout after it, once.
BOOST_AUTO_TEST_CASE(a_quiet_kept_alive_connection_is_parked_made_again_by_its_next_request_and_closed_at_its_time) {
    fixture f;
    f.request_then_quiet("/0"); // parked once: the wheel's storage for such deadlines is made
    BOOST_TEST(f.server.parked() == 1u);

    f.clock.step_by(3ms); // the client pauses past the grace
    f.io_turns();
    f.get("/1");
    const auto cycle = hwtest::measure_heap([&] { f.io_turns(); }); // woken, answered, parked again
    BOOST_TEST(f.server.parked() == 1u);
    BOOST_TEST(cycle.allocations == cycle.frees); // nothing of the request kept
    auto res = f.answered();
    BOOST_TEST(res.body() == "hi\n");
    BOOST_TEST(res.keep_alive());

    f.get("/2"); // at once: busy again
    f.io_turns();
    res = f.answered();
    BOOST_TEST(res.keep_alive());
    f.io_turns();
    BOOST_TEST(f.server.parked() == 0u);
    const auto t0 = f.clock.now(); // the answer
    const auto parking = hwtest::measure_heap([&] {
        f.clock.advance_by(5ms); // the grace's end seen late
        f.io_turns();
    });
    BOOST_TEST(f.server.parked() == 1u);
    BOOST_TEST(net::connections_of(f.io.get_executor()) == 1u); // still one of the context's
    // The connection's block, its stream core and the read's state went; what came is the parked
    // connection (its socket over any_io_executor and Asio's wait in it: 352 bytes; the example's
    // sockets make it 256) and at most a word of the wheel's storage.
    BOOST_TEST(parking.frees >= 3u);
    BOOST_TEST(parking.allocations <= 2u);
    BOOST_TEST(parking.bytes <= 360u);

    f.clock.advance_to(t0 + 999ms);
    f.io_turns();
    BOOST_TEST(f.closes() == 0u); // not before its keep-alive time
    BOOST_TEST(f.server.parked() == 1u);
    f.clock.advance_to(t0 + 1001ms);
    f.io_turns();
    BOOST_TEST(f.closes(http::keepalive_timeout) == 1u);
    BOOST_TEST(f.closes() == 1u);
    BOOST_TEST(f.server.parked() == 0u);
    BOOST_TEST(net::connections_of(f.io.get_executor()) == 0u);
    f.sees_silent_close();
    BOOST_TEST(f.state.read == (std::vector<std::string>{"/0", "/1", "/2"}), boost::test_tools::per_element());
}

// A parked connection whose client speaks again within the grace of its answer is busy again: made
// again, it reads its next request eagerly instead of parking at the answer.
BOOST_AUTO_TEST_CASE(a_client_quick_again_is_read_eagerly_not_parked_at_its_answer) {
    fixture f;
    f.request_then_quiet("/0"); // parked after the grace
    f.get("/1");                // woken; its client found quiet: parked at the answer
    f.io_turns();
    BOOST_TEST(f.server.parked() == 1u);
    f.answered();
    f.get("/2"); // at once
    f.io_turns();
    f.answered();
    f.io_turns();
    BOOST_TEST(f.server.parked() == 0u);
    BOOST_TEST(http::detail::eager_held == 1); // read eagerly
    f.clock.step_by(3ms); // quiet past the grace again: parked
    f.io_turns();
    BOOST_TEST(f.server.parked() == 1u);
    BOOST_TEST(http::detail::eager_held == 0);
    BOOST_TEST(f.state.read.size() == 3u);
    BOOST_TEST(f.closes() == 0u);
}

// The requests served before parking count on: with max_requests 3 the third answer says
// "Connection: close" though the connection was parked twice on the way.
BOOST_AUTO_TEST_CASE(a_connection_made_again_goes_on_counting_its_requests) {
    auto p = fixture::policy();
    p.max_requests = 3;
    fixture f(p);
    f.request_then_quiet("/1");
    BOOST_TEST(f.server.parked() == 1u);
    f.request_then_quiet("/2");
    BOOST_TEST(f.server.parked() == 1u);
    f.get("/3");
    f.io_turns();
    const auto res = f.answered();
    BOOST_TEST(!res.keep_alive());
    f.io_turns();
    BOOST_TEST(f.closes(http::max_requests) == 1u);
    BOOST_TEST(f.closes() == 1u);
    f.sees_silent_close();
}

// A client that leaves while parked: its end of stream wakes the parked connection, and the
// connection made again reads it (peer-closed, once).
BOOST_AUTO_TEST_CASE(a_client_leaving_while_parked_is_closed_peer_closed) {
    fixture f;
    f.request_then_quiet("/1");
    BOOST_TEST(f.server.parked() == 1u);
    f.client.shutdown(tcp::socket::shutdown_send);
    f.io_turns();
    BOOST_TEST(f.server.parked() == 0u);
    BOOST_TEST(f.closes(net::close_reason::peer_closed) == 1u);
    BOOST_TEST(f.closes() == 1u);
    BOOST_TEST(net::connections_of(f.io.get_executor()) == 0u);
}

// A drain asks every connection of the context to leave: a parked one closes at once (draining);
// a server's stop closes the rest with its reason (shutdown).
BOOST_AUTO_TEST_CASE(a_drain_and_a_stop_close_parked_connections_with_their_reasons) {
    fixture f;
    f.request_then_quiet("/1");
    BOOST_TEST(f.server.parked() == 1u);
    std::optional<std::size_t> left;
    net::async_drain(f.io.get_executor(), 100ms, [&](boost::system::error_code, std::size_t n) { left = n; });
    f.io_turns();
    BOOST_TEST(f.closes(net::draining_reason()) == 1u);
    BOOST_TEST(f.closes() == 1u);
    f.sees_silent_close();

    fixture g;
    g.request_then_quiet("/1");
    BOOST_TEST(g.server.parked() == 1u);
    BOOST_TEST(net::close_connections(g.io.get_executor(), net::close_reason::shutdown) == 1u);
    g.io_turns();
    BOOST_TEST(g.closes(net::close_reason::shutdown) == 1u);
    BOOST_TEST(g.closes() == 1u);
    BOOST_TEST(g.server.parked() == 0u);
    g.sees_silent_close();
}

// What must not park: a connection its application holds to answer later, and one whose liveness
// judges more than the keep-alive (reader idle here). Both wait as before and are answered.
BOOST_AUTO_TEST_CASE(a_held_connection_or_one_judged_by_more_than_its_keepalive_is_not_parked) {
    fixture f;
    f.state.hold = true;
    f.request_then_quiet("/1");
    BOOST_REQUIRE(f.state.held != nullptr);
    BOOST_TEST(f.server.parked() == 0u); // its application holds it
    f.get("/2");
    f.io_turns();
    BOOST_TEST(f.answered().body() == "hi\n");
    f.state.held.reset();

    net::liveness_config idle;
    idle.idle.reader_idle = 60s;
    fixture g(fixture::policy(), idle);
    g.request_then_quiet("/1");
    BOOST_TEST(g.server.parked() == 0u);
    g.get("/2");
    g.io_turns();
    BOOST_TEST(g.answered().body() == "hi\n");
    BOOST_TEST(g.closes() == 0u);
}

namespace {
// A blocking client of plain POSIX calls, each read bounded by SO_RCVTIMEO (5 s).
struct posix_client {
    int fd = -1;
    explicit posix_client(const tcp::endpoint& to) {
        fd = ::socket(AF_INET, SOCK_STREAM, 0);
        timeval tv{5, 0};
        ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        BOOST_REQUIRE(::connect(fd, to.data(), static_cast<socklen_t>(to.size())) == 0);
    }
    ~posix_client() { ::close(fd); }
    posix_client(const posix_client&) = delete;
    posix_client& operator=(const posix_client&) = delete;
    // Sends a request and reads its answer whole ("hi\n" ends it); false if the server closed or
    // said nothing in time.
    bool round_trip() {
        const std::string req = "GET / HTTP/1.1\r\nHost: t\r\n\r\n";
        if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) return false;
        std::string got;
        char buf[512];
        while (got.size() < 3 || got.compare(got.size() - 3, 3, "hi\n") != 0) {
            const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
            if (n <= 0) return false;
            got.append(buf, static_cast<std::size_t>(n));
        }
        return true;
    }
    // The server's end: a silent close within 5 s.
    bool sees_silent_close() {
        char c;
        return ::recv(fd, &c, 1, 0) == 0;
    }
};
} // namespace

// The thread-pool model: one io_context on two threads, the connections on a strand with its own
// wheel (a real clock). Clients are parked between their requests and made again by each next one;
// the server's stop, from another thread (close_connections), closes the parked ones shutdown — each
// once. Under ThreadSanitizer (CI's sanitize.sh) this is the check that parking, waking and the
// stop's posted close keep to the strand.
BOOST_AUTO_TEST_CASE(connections_on_a_pool_strand_park_wake_and_stop) {
    asio::io_context io(2);
    auto strand = asio::make_strand(io);
    heartwheel::asio_wheel wheel(strand);
    net::liveness_counters counters;
    const net::connection_context ctx(wheel, {}, &counters);
    app_state state;
    http::http_policy long_keepalive = fixture::policy();
    long_keepalive.keepalive_timeout = 30s;
    http::server<tcp::socket, app> srv(ctx, long_keepalive, app{&state});
    tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
    std::function<void()> accept_next = [&] {
        acceptor.async_accept(strand, [&](boost::system::error_code ec, tcp::socket s) {
            if (ec) return;
            asio::post(strand, [&srv, s = std::move(s)]() mutable { srv.serve(std::move(s)); });
            accept_next();
        });
    };
    accept_next();
    auto work = asio::make_work_guard(io);
    std::thread threads[] = {std::thread([&] { io.run(); }), std::thread([&] { io.run(); })};
    auto on_strand = [&](auto f) {
        std::promise<decltype(f())> p;
        asio::post(strand, [&] { p.set_value(f()); });
        return p.get_future().get();
    };

    constexpr int clients = 8;
    std::vector<std::unique_ptr<posix_client>> cs;
    for (int i = 0; i < clients; ++i) cs.push_back(std::make_unique<posix_client>(acceptor.local_endpoint()));
    // Each round: every client answered, then all parked once quiet past the eager read's grace
    // (looked at every 10 ms, for at most 5 s: a busy machine may be slow to get there).
    auto all_parked = [&] {
        for (const auto end = std::chrono::steady_clock::now() + 5s; std::chrono::steady_clock::now() < end;
             std::this_thread::sleep_for(10ms))
            if (on_strand([&] { return srv.parked(); }) == std::size_t{clients}) return true;
        return false;
    };
    for (int round = 0; round < 3; ++round) {
        bool answered = true;
        for (auto& c : cs) answered = c->round_trip() && answered;
        BOOST_TEST(answered);
        BOOST_TEST(all_parked());
    }
    BOOST_TEST(state.read.size() == std::size_t{3 * clients});
    BOOST_TEST(counters.snapshot().closes_total() == 0u);
    BOOST_TEST(net::close_connections(io.get_executor(), net::close_reason::shutdown) == std::size_t{clients});
    bool closed = true;
    for (auto& c : cs) closed = c->sees_silent_close() && closed;
    BOOST_TEST(closed);
    BOOST_TEST(on_strand([&] { return srv.parked(); }) == 0u);
    const auto snap = counters.snapshot();
    BOOST_TEST(snap.closes[static_cast<std::size_t>(net::close_reason::shutdown)] == std::size_t{clients});
    BOOST_TEST(snap.closes_total() == std::size_t{clients});

    acceptor.close();
    work.reset();
    io.stop();
    for (auto& t : threads) t.join();
}
