// listen_test.cpp — net::listen and net::parse_endpoint: numeric IPv4 and IPv6 addresses, port 0,
// errors that name the field or the address and the reason, SO_REUSEADDR always, SO_REUSEPORT on request.
#define BOOST_TEST_MODULE listen
#include <boost/test/unit_test.hpp>

#include <heartwheel/net/server/listen.hpp>

#include "test_asio.hpp"

#include <string>

namespace net = heartwheel::net;
using tcp = asio::ip::tcp;

namespace {
template <class E, class F>
std::string message_of(F&& f) {
    try {
        f();
    } catch (const E& e) {
        return e.what();
    }
    return "no exception";
}
} // namespace

BOOST_AUTO_TEST_CASE(addresses_parse_and_port_zero_picks_a_port) {
    const auto v4 = net::parse_endpoint("127.0.0.1:7000");
    BOOST_TEST(v4.address().to_string() == "127.0.0.1");
    BOOST_TEST(v4.port() == 7000);
    const auto v6 = net::parse_endpoint("[::1]:0");
    BOOST_TEST(v6.address().is_v6());
    asio::io_context io;
    auto a = net::listen(io.get_executor(), "127.0.0.1:0");
    BOOST_TEST(a.is_open());
    BOOST_TEST(a.local_endpoint().port() != 0);
    tcp::socket s(io);
    s.connect(a.local_endpoint()); // it listens
    BOOST_TEST(s.is_open());
}

BOOST_AUTO_TEST_CASE(a_bad_address_names_the_field_and_the_accepted_form) {
    for (const char* bad : {"localhost", "1.2.3:80", "127.0.0.1:70000", "127.0.0.1:", "127.0.0.1:8x", ":80"}) {
        const auto m = message_of<net::config_error>([&] { net::parse_endpoint(bad, "--listen"); });
        BOOST_TEST(m.find("--listen = " + std::string(bad)) == 0u, m);
        BOOST_TEST(m.find("accepted HOST:PORT") != std::string::npos, m);
    }
}

BOOST_AUTO_TEST_CASE(a_busy_address_names_it_and_the_reason) {
    asio::io_context io;
    auto first = net::listen(io.get_executor(), "127.0.0.1:0");
    const auto port = std::to_string(first.local_endpoint().port());
    const auto m = message_of<net::listen_error>([&] { net::listen(io.get_executor(), "127.0.0.1:" + port); });
    BOOST_TEST(m.find("cannot listen on 127.0.0.1:" + port + ": ") == 0u, m);
    BOOST_TEST(m.find("in use") != std::string::npos, m);
}

BOOST_AUTO_TEST_CASE(reuse_port_lets_two_listeners_share_an_address) {
    asio::io_context io;
    net::listen_options o;
    o.reuse_port = true;
    auto first = net::listen(io.get_executor(), "127.0.0.1:0", o);
    const auto ep = first.local_endpoint();
    auto second = net::listen(io.get_executor(), ep, o);
    BOOST_TEST(second.local_endpoint().port() == ep.port());
}
