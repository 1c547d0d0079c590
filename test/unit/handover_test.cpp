// handover_test.cpp — net::inherited_listeners and net::handover_server in one process: the
// successor's side (synchronous) runs on a thread while the old side's io_context runs on this one.
// The socket handed over is the very socket (a connect queued before the handover is accepted from
// it after), the old side lets go only on confirm(), a successor that does not confirm leaves it
// serving (and a later one may still take over), a path nobody serves is a first start, a path that
// is not a socket is refused and left alone.
#include <boost/test/unit_test.hpp>

#include <heartwheel/net/server/handover.hpp>

#include <asio/connect.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <future>
#include <string>
#include <thread>

namespace net = heartwheel::net;
using asio::ip::tcp;

namespace {

std::string temp_path(const char* name) {
    return "/tmp/heartwheel-handover-" + std::to_string(::getpid()) + "-" + name;
}

// Runs `io` until `done` is ready (the successor's thread finished), at most 10 s.
template <class T>
T run_until(asio::io_context& io, std::future<T>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (done.wait_for(std::chrono::milliseconds(0)) != std::future_status::ready &&
           std::chrono::steady_clock::now() < deadline) {
        io.restart();
        io.run_for(std::chrono::milliseconds(5));
    }
    return done.get();
}

void settle(asio::io_context& io) {
    for (int i = 0; i < 20; ++i) {
        io.restart();
        io.run_for(std::chrono::milliseconds(5));
    }
}

} // namespace

BOOST_AUTO_TEST_CASE(nobody_serving_the_path_is_a_first_start) {
    const auto path = temp_path("none");
    ::unlink(path.c_str());
    BOOST_TEST(net::inherited_listeners::take(path).empty());
}

BOOST_AUTO_TEST_CASE(the_same_socket_goes_over_and_the_old_side_lets_go_on_confirm) {
    asio::io_context io;
    tcp::acceptor old_listener(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    const auto endpoint = old_listener.local_endpoint();
    const auto path = temp_path("over");
    int given = 0;
    net::handover_server server(io.get_executor(), path, [&] { return std::vector<int>{old_listener.native_handle()}; },
                                [&] { ++given; });

    // A connect queued in the backlog before the handover: nobody accepted it yet.
    tcp::socket early(io);
    early.connect(endpoint);

    auto taken = std::async(std::launch::async, [&] { return net::inherited_listeners::take(path); });
    net::inherited_listeners inherited = run_until(io, taken);
    BOOST_TEST(inherited.size() == 1u);
    asio::io_context successor;
    BOOST_TEST(!inherited.claim(successor.get_executor(), tcp::endpoint(endpoint.address(), endpoint.port() + 1)));
    auto claimed = inherited.claim(successor.get_executor(), endpoint);
    BOOST_TEST_REQUIRE(claimed.has_value());
    BOOST_TEST(claimed->local_endpoint() == endpoint);
    BOOST_TEST(inherited.empty());
    settle(io);
    BOOST_TEST(given == 0); // not before the successor confirms
    BOOST_TEST(!server.handed_over());
    inherited.confirm();
    settle(io);
    BOOST_TEST(given == 1);
    BOOST_TEST(server.handed_over());

    // The early connect is accepted by the successor, from the same queue.
    old_listener.close();
    tcp::socket accepted(successor);
    claimed->accept(accepted);
    asio::write(early, asio::buffer("x", 1));
    char c = 0;
    asio::read(accepted, asio::buffer(&c, 1));
    BOOST_TEST(c == 'x');
    server.close();
    struct stat st{};
    BOOST_TEST(::stat(path.c_str(), &st) == 0); // after a handover the path is the successor's: never removed
    ::unlink(path.c_str());
}

BOOST_AUTO_TEST_CASE(a_successor_that_does_not_confirm_leaves_the_old_side_serving) {
    asio::io_context io;
    tcp::acceptor old_listener(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    const auto path = temp_path("noconfirm");
    int given = 0;
    net::handover_server server(io.get_executor(), path, [&] { return std::vector<int>{old_listener.native_handle()}; },
                                [&] { ++given; });
    {
        auto taken = std::async(std::launch::async, [&] { return net::inherited_listeners::take(path); });
        net::inherited_listeners first = run_until(io, taken);
        BOOST_TEST(first.size() == 1u);
    } // gone without confirm(): its copy closed, the old side told nothing
    settle(io);
    BOOST_TEST(given == 0);
    BOOST_TEST(old_listener.is_open());
    auto again = std::async(std::launch::async, [&] {
        auto l = net::inherited_listeners::take(path);
        l.confirm();
        return l.size();
    });
    BOOST_TEST(run_until(io, again) == 1u);
    settle(io);
    BOOST_TEST(given == 1);
    server.close();
    ::unlink(path.c_str());
}

BOOST_AUTO_TEST_CASE(closing_without_a_handover_removes_its_own_path_only) {
    asio::io_context io;
    const auto path = temp_path("own");
    {
        net::handover_server server(io.get_executor(), path, [] { return std::vector<int>{}; }, [] {});
        struct stat st{};
        BOOST_TEST(::stat(path.c_str(), &st) == 0);
    }
    struct stat st{};
    BOOST_TEST(::stat(path.c_str(), &st) != 0);
}

BOOST_AUTO_TEST_CASE(a_path_that_is_not_a_socket_is_refused_and_left_alone) {
    asio::io_context io;
    const auto path = temp_path("plain");
    {
        std::ofstream f(path);
        f << "keep me\n";
    }
    try {
        net::handover_server server(io.get_executor(), path, [] { return std::vector<int>{}; }, [] {});
        BOOST_FAIL("a plain file was taken for a socket");
    } catch (const net::listen_error& e) {
        BOOST_TEST(std::string(e.what()).find("not a socket") != std::string::npos, e.what());
        BOOST_TEST(std::string(e.what()).find(path) != std::string::npos, e.what());
    }
    std::ifstream f(path);
    std::string line;
    std::getline(f, line);
    BOOST_TEST(line == "keep me");
    ::unlink(path.c_str());
}
