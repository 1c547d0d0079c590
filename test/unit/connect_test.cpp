// connect_test.cpp — net::async_connect with a deadline on the wheel, over real sockets on 127.0.0.1:
// a listener answers before the deadline (success); a closed port refuses (its own error, not a
// timeout); a listener whose accept queue is full drops the SYN, so the connect hangs and the
// deadline ends it with errc::timed_out, no earlier than the timeout; the handler runs on its own
// executor, never inside the initiating call.
#define BOOST_TEST_MODULE connect
#include <boost/test/unit_test.hpp>

#include "run_until.hpp"

#include <heartwheel/net/connection/connect.hpp>

#include "test_asio.hpp"

#include <chrono>
#include <functional>
#include <optional>
#include <vector>

using namespace std::chrono_literals;
namespace net = heartwheel::net;
using tcp = asio::ip::tcp;

namespace {

struct fixture {
    asio::io_context io;
    heartwheel::asio_wheel wheel{io.get_executor()};
    const asio::ip::address loopback = asio::ip::make_address("127.0.0.1");

    struct outcome {
        std::optional<error_code> ec;
        std::chrono::steady_clock::time_point at;
        bool inside = false;
        bool starting = false;
    };
    /// Starts a connect; the outcome fills in when it completes.
    void start(tcp::socket& s, const tcp::endpoint& ep, heartwheel::duration timeout, outcome& o) {
        o.starting = true;
        net::async_connect(s, ep, wheel, timeout, [&o](error_code ec) {
            o.ec = ec;
            o.at = std::chrono::steady_clock::now();
            o.inside = o.starting;
        });
        o.starting = false;
    }
    void run_until(const std::function<bool()>& done, std::chrono::milliseconds limit = 10s) {
        hwtest::run_until(io, done, limit);
    }
};

} // namespace

BOOST_FIXTURE_TEST_CASE(a_listener_answers_before_the_deadline, fixture) {
    tcp::acceptor acceptor(io, {loopback, 0});
    tcp::socket s(io);
    outcome o;
    start(s, acceptor.local_endpoint(), 2s, o);
    run_until([&] { return o.ec.has_value(); });
    BOOST_TEST(!*o.ec, o.ec->message());
    BOOST_TEST(!o.inside);
    BOOST_TEST(s.is_open());
    BOOST_TEST(wheel.size() == 0u); // the deadline's timer went with the connect
}

BOOST_FIXTURE_TEST_CASE(a_refusal_is_its_own_error_not_a_timeout, fixture) {
    tcp::endpoint closed;
    {
        tcp::acceptor a(io, {loopback, 0});
        closed = a.local_endpoint();
    } // nothing listens there any more
    tcp::socket s(io);
    outcome o;
    start(s, closed, 2s, o);
    run_until([&] { return o.ec.has_value(); });
    BOOST_TEST((*o.ec == asio::error::connection_refused), o.ec->message());
}

BOOST_FIXTURE_TEST_CASE(a_connect_that_hangs_ends_at_the_deadline_with_timed_out, fixture) {
    // backlog 0: one connection waits in the accept queue, after that the listener drops SYNs (the
    // client retransmits them for seconds): the later connects hang.
    tcp::acceptor acceptor(io);
    acceptor.open(tcp::v4());
    acceptor.bind({loopback, 0});
    acceptor.listen(0);
    std::vector<tcp::socket> sockets;
    for (int i = 0; i < 4; ++i) sockets.emplace_back(io);
    std::vector<outcome> o(4);
    const auto start_time = std::chrono::steady_clock::now();
    for (int i = 0; i < 4; ++i) start(sockets[i], acceptor.local_endpoint(), 300ms, o[i]);
    run_until([&] {
        for (const auto& x : o)
            if (!x.ec) return false;
        return true;
    });
    int timed_out = 0;
    for (const auto& x : o) {
        BOOST_TEST((!*x.ec || *x.ec == net::errc::timed_out), x.ec->message()); // nothing else
        if (*x.ec == net::errc::timed_out) {
            ++timed_out;
            BOOST_TEST((x.at - start_time >= 300ms)); // never before the deadline
            BOOST_TEST((x.at - start_time < 2s));
        }
    }
    BOOST_TEST(timed_out >= 2); // the queue holds one or two; the rest hang
    BOOST_TEST(wheel.size() == 0u);
}
