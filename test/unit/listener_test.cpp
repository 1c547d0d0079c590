// listener_test.cpp — net::listener: at the descriptor limit it refuses what waits, rests between
// tries (no busy loop), says so once per episode, and accepts again once descriptors free up; its
// async_accept ends only when it is closed, on the acceptor's executor or another one; at an
// admission limit it stops accepting (the backlog holds the newcomers) until a connection closes, or
// refuses them when asked to.
#include <boost/test/unit_test.hpp>

#include <heartwheel/asio_wheel.hpp>
#include <heartwheel/net/connection/connection.hpp>
#include <heartwheel/net/server/listener.hpp>

#include "test_asio.hpp"

#include <sys/resource.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace net = heartwheel::net;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

namespace {

// A soft descriptor limit that leaves exactly `room` descriptors free: the (room+1)-th lowest free
// number (each open takes the lowest), whatever holes lie among the descriptors already open.
std::size_t limit_leaving(std::size_t room) {
    std::vector<int> fds;
    for (std::size_t i = 0; i <= room; ++i) {
        fds.push_back(::open("/dev/null", O_RDONLY | O_CLOEXEC));
        BOOST_TEST_REQUIRE(fds.back() >= 0);
    }
    const auto limit = static_cast<std::size_t>(fds.back());
    for (const int fd : fds) ::close(fd);
    return limit;
}

// Lowers the soft descriptor limit for one test, and puts it back. UBSan's vptr check needs a
// descriptor (a pipe) the first time it meets a polymorphic type at a call site: the error
// categories the listener consults are met here first, while descriptors are plenty.
struct descriptor_limit {
    rlimit saved{};
    explicit descriptor_limit(std::size_t soft) {
        for (const error_code ec : {error_code(asio::error::no_descriptors), error_code(asio::error::connection_aborted)}) {
            const bool seen = ec == asio::error::operation_aborted || ec == asio::error::bad_descriptor ||
                              ec == asio::error::no_descriptors || ec == asio::error::no_buffer_space ||
                              ec == asio::error::no_memory || ec.category() == asio::error::get_system_category();
            BOOST_TEST_REQUIRE((seen || !ec.message().empty()));
            BOOST_TEST_REQUIRE(!ec.message().empty());
        }
        ::getrlimit(RLIMIT_NOFILE, &saved);
        rlimit low = saved;
        low.rlim_cur = soft;
        BOOST_REQUIRE(::setrlimit(RLIMIT_NOFILE, &low) == 0);
    }
    ~descriptor_limit() { ::setrlimit(RLIMIT_NOFILE, &saved); }
};

// How many of the clients read the refusal "BYE busy\n" (without waiting).
std::size_t told_busy(std::vector<tcp::socket>& clients) {
    std::size_t told = 0;
    for (auto& c : clients) {
        char buf[32];
        error_code ec;
        c.non_blocking(true);
        const auto n = c.read_some(asio::buffer(buf), ec);
        if (!ec && std::string(buf, n) == "BYE busy\n") ++told;
    }
    return told;
}

// Accepts into `held` until the listener is closed.
struct accept_loop {
    net::listener& l;
    std::vector<tcp::socket>& held;
    std::optional<error_code> ended;
    void start() {
        l.async_accept([this](error_code ec, tcp::socket s) {
            if (ec) {
                ended = ec;
                return;
            }
            held.push_back(std::move(s));
            start();
        });
    }
};

} // namespace

BOOST_AUTO_TEST_CASE(at_the_descriptor_limit_it_refuses_rests_and_accepts_again) {
    asio::io_context io;
    std::vector<std::string> log;
    net::listener_options o;
    o.pause = 10ms;
    o.refusal = "BYE busy\n";
    o.raise_descriptor_limit = false;
    o.log = [&](std::string_view line) { log.emplace_back(line); };
    net::liveness_counters counters;
    o.counters = &counters;
    net::listener l(io.get_executor(), tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0), o);
    // Twenty clients wait in the backlog before the limit drops; the server may then take three.
    std::vector<tcp::socket> clients;
    for (int i = 0; i < 20; ++i) {
        clients.emplace_back(io);
        clients.back().connect(l.local_endpoint());
    }
    std::vector<tcp::socket> held;
    accept_loop loop{l, held, std::nullopt};
    {
        descriptor_limit limit(limit_leaving(3));
        loop.start();
        const auto began = std::chrono::steady_clock::now();
        for (int i = 0; i < 150 && held.size() + l.refused() < 20u; ++i) io.run_for(20ms);
        io.run_for(200ms); // resting meanwhile
        const auto rested = std::chrono::steady_clock::now() - began;
        // About three taken (the reactor may hold a descriptor more or less); every other one refused.
        BOOST_TEST(held.size() >= 2u);
        BOOST_TEST(held.size() <= 4u);
        BOOST_TEST(held.size() + l.refused() == 20u);
        BOOST_TEST(!loop.ended); // it did not stop accepting
        BOOST_TEST(counters.snapshot().closes[static_cast<std::size_t>(net::busy_reason())] == l.refused());
        // Resting, not spinning: at most one try per 10 ms pause, where a busy loop makes thousands.
        BOOST_TEST(l.pauses() >= 5u);
        BOOST_TEST(l.pauses() <= static_cast<std::size_t>(rested / 10ms) + 2u);
        BOOST_REQUIRE(log.size() == 1u); // said once for the episode
        BOOST_TEST(log[0].find("refusing new connections with BYE busy") != std::string::npos, log[0]);
        // The refused clients read the refusal, then the end of stream.
        BOOST_TEST(told_busy(clients) == l.refused());
        // Descriptors free up: the next client is served, and the episode's end is said.
        held.clear();
        clients.clear();
        tcp::socket fresh(io);
        fresh.connect(l.local_endpoint());
        io.restart();
        const auto refused = l.refused();
        for (int i = 0; i < 150 && held.empty(); ++i) io.run_for(20ms);
        BOOST_TEST(held.size() == 1u);
        BOOST_TEST(l.refused() == refused);
    }
    BOOST_REQUIRE(log.size() == 2u);
    BOOST_TEST(log[1].find("accepting again (" + std::to_string(l.refused()) + " refused") == 0u, log[1]);
    l.close();
    io.restart();
    io.run_for(100ms);
    BOOST_REQUIRE(loop.ended.has_value());
    BOOST_TEST(*loop.ended == asio::error::operation_aborted);
}

BOOST_AUTO_TEST_CASE(a_close_during_the_rest_ends_the_accept) {
    asio::io_context io;
    net::listener_options o;
    o.pause = 10s;
    o.raise_descriptor_limit = false;
    o.log = [](std::string_view) {};
    net::listener l(io.get_executor(), tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0), o);
    tcp::socket client(io);
    client.connect(l.local_endpoint());
    std::vector<tcp::socket> held;
    accept_loop loop{l, held, std::nullopt};
    {
        descriptor_limit limit(limit_leaving(0));
        loop.start();
        io.run_for(100ms); // refused, now resting for 10 s
    }
    BOOST_TEST(l.pauses() == 1u);
    BOOST_TEST(!loop.ended);
    l.close();
    io.restart();
    io.run_for(100ms);
    BOOST_REQUIRE(loop.ended.has_value());
    BOOST_TEST(*loop.ended == asio::error::operation_aborted);
}

// An accept that failed at the limit completes later than it failed: by then another handler may
// have closed sockets. The peer waiting then is served, not refused for a limit that has passed.
BOOST_AUTO_TEST_CASE(a_failure_older_than_the_room_refuses_nobody) {
    asio::io_context io;
    net::listener_options o;
    o.pause = 10ms;
    o.refusal = "BYE busy\n";
    o.raise_descriptor_limit = false;
    std::vector<std::string> log;
    o.log = [&](std::string_view line) { log.emplace_back(line); };
    net::listener l(io.get_executor(), tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0), o);
    tcp::socket fresh(io);
    fresh.open(tcp::v4());
    std::vector<tcp::socket> held;
    accept_loop loop{l, held, std::nullopt};
    {
        descriptor_limit limit(limit_leaving(0));
        loop.start(); // fails at once (EMFILE); its completion waits in the queue
    }
    fresh.connect(l.local_endpoint());
    for (int i = 0; i < 100 && held.empty(); ++i) io.run_for(10ms);
    BOOST_TEST(held.size() == 1u);
    BOOST_TEST(l.refused() == 0u);
    BOOST_TEST(l.pauses() == 0u);
    BOOST_TEST(log.empty());
}

BOOST_AUTO_TEST_CASE(the_socket_runs_on_the_executor_asked_for) {
    asio::io_context io;
    auto strand = asio::make_strand(io);
    net::listener l(io.get_executor(), tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    BOOST_TEST(l.local_address().rfind("127.0.0.1:", 0) == 0u);
    tcp::socket client(io);
    client.connect(l.local_endpoint());
    bool got = false;
    l.async_accept(strand, [&](error_code ec, asio::basic_stream_socket<tcp, decltype(strand)> s) {
        got = !ec && s.is_open() && s.get_executor() == strand;
    });
    io.run_for(200ms);
    BOOST_TEST(got);
    BOOST_TEST(l.accepted() == 1u);
}

namespace {

// Makes every accepted socket a net::connection on the context (so the admission counts it), until
// the listener is closed.
struct connection_loop {
    using conn = net::connection<tcp::socket>;
    net::listener& l;
    const net::connection_context& ctx;
    std::vector<std::shared_ptr<conn>> held;
    void start() {
        l.async_accept([this](error_code ec, tcp::socket s) {
            if (ec) return;
            held.push_back(std::make_shared<conn>(std::move(s), ctx));
            start();
        });
    }
};

} // namespace

BOOST_AUTO_TEST_CASE(at_max_connections_accepting_waits_until_a_connection_closes) {
    asio::io_context io;
    heartwheel::asio_wheel wheel(io.get_executor());
    const net::connection_context ctx(wheel);
    net::listener_options o;
    o.raise_descriptor_limit = false;
    o.admission.max_connections = 2;
    o.admission_poll = 5ms;
    net::listener l(io.get_executor(), tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0), o);
    std::vector<tcp::socket> clients;
    for (int i = 0; i < 4; ++i) {
        clients.emplace_back(io);
        clients.back().connect(l.local_endpoint()); // the kernel completes it: the backlog holds it
    }
    connection_loop loop{l, ctx, {}};
    loop.start();
    io.run_for(200ms);
    BOOST_TEST(loop.held.size() == 2u); // the other two wait in the backlog, not refused
    BOOST_TEST(l.accepted() == 2u);
    BOOST_TEST(l.waits() == 1u); // one episode, however many looks
    BOOST_REQUIRE(l.admitted() != nullptr);
    BOOST_TEST(l.admitted()->open() == 2u);
    loop.held[0]->close(net::close_reason::shutdown); // its socket closes: a place frees
    for (int i = 0; i < 50 && loop.held.size() < 3u; ++i) io.run_for(10ms);
    BOOST_TEST(loop.held.size() == 3u);
    io.run_for(50ms);
    BOOST_TEST(loop.held.size() == 3u); // and only one
    loop.held[1].reset(); // destroyed without a close: its place frees too
    for (int i = 0; i < 50 && loop.held.size() < 4u; ++i) io.run_for(10ms);
    BOOST_TEST(loop.held.size() == 4u);
    BOOST_TEST(l.admitted()->open() == 2u);
    BOOST_TEST(l.admitted()->reserved() == 0u);
}

BOOST_AUTO_TEST_CASE(at_max_connections_it_may_refuse_instead) {
    asio::io_context io;
    heartwheel::asio_wheel wheel(io.get_executor());
    net::liveness_counters counters;
    const net::connection_context ctx(wheel, {}, &counters);
    net::listener_options o;
    o.raise_descriptor_limit = false;
    o.admission.max_connections = 1;
    o.admission.refuse_at_limit = true;
    o.refusal = "BYE busy\n";
    o.counters = &counters;
    net::listener l(io.get_executor(), tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0), o);
    std::vector<tcp::socket> clients;
    for (int i = 0; i < 3; ++i) {
        clients.emplace_back(io);
        clients.back().connect(l.local_endpoint());
    }
    connection_loop loop{l, ctx, {}};
    loop.start();
    io.run_for(200ms);
    BOOST_TEST(loop.held.size() == 1u);
    BOOST_TEST(l.refused_at_limit() == 2u);
    BOOST_TEST(counters.snapshot().closes[static_cast<std::size_t>(net::busy_reason())] == 2u);
    BOOST_TEST(told_busy(clients) == 2u);
}
