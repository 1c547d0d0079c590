// proxy_listener_test.cpp — net::listener behind a balancer (listener_options::proxy), on real
// sockets: the client named in a PROXY header is the peer async_accept gives, and the bytes after
// the header stay for the protocol; a header that comes slowly holds up nobody behind it; every bad
// header and every untrusted peer is closed with its own reason, counted; at max_pending accepting
// waits; close() ends it all.
#include <boost/test/unit_test.hpp>

#include <heartwheel/net/metrics/counters.hpp>
#include <heartwheel/net/server/listener.hpp>

#include "test_asio.hpp"

#include <poll.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace net = heartwheel::net;
using tcp = asio::ip::tcp;
using error_code = std::error_code;
using namespace std::chrono_literals;

namespace {

const std::string v2_signature("\r\n\r\n\0\r\nQUIT\n", 12);

// A version 2 PROXY header naming 192.0.2.9:4242 (to 127.0.0.1:80).
std::string v2_tcp4() {
    std::string h = v2_signature + std::string("\x21\x11\x00\x0c", 4);
    for (const int b : {192, 0, 2, 9, 127, 0, 0, 1, 0x10, 0x92, 0x00, 0x50}) h += static_cast<char>(b);
    return h;
}

struct accepted {
    tcp::socket socket;
    tcp::endpoint peer;
};

struct fixture {
    asio::io_context io;
    net::liveness_counters counters;
    std::optional<net::listener> l;
    std::vector<accepted> got;
    std::optional<error_code> ended;
    tcp::endpoint peer;

    explicit fixture(const std::function<void(net::proxy_protocol_options&)>& tune = {}) {
        net::listener_options o;
        o.proxy.enabled = true;
        o.proxy.timeout = 300ms;
        o.counters = &counters;
        o.log = [](std::string_view) {};
        if (tune) tune(o.proxy);
        l.emplace(io.get_executor(), tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0), o);
        accept();
    }
    void accept() {
        l->async_accept(io.get_executor(), peer, [this](error_code ec, tcp::socket s) {
            if (ec) {
                ended = ec;
                return;
            }
            got.push_back({std::move(s), peer});
            accept();
        });
    }
    tcp::socket connect(const std::string& first_bytes = {}) {
        tcp::socket c(io);
        c.connect(l->local_endpoint());
        if (!first_bytes.empty()) asio::write(c, asio::buffer(first_bytes));
        return c;
    }
    void run_until(const std::function<bool()>& done, std::chrono::milliseconds bound = 3s) {
        const auto until = std::chrono::steady_clock::now() + bound;
        while (!done() && std::chrono::steady_clock::now() < until) io.run_for(5ms);
    }
    std::uint64_t closed(net::close_reason r) const { return counters.snapshot().closes[static_cast<std::size_t>(r)]; }
};

// What the peer reads until the end of stream (or `n` bytes), waiting at most two seconds.
std::string read_all(tcp::socket& s, std::size_t n = 64) {
    std::string out;
    s.non_blocking(true);
    const auto until = std::chrono::steady_clock::now() + 2s;
    while (out.size() < n && std::chrono::steady_clock::now() < until) {
        char buf[64];
        error_code ec;
        const auto got = s.read_some(asio::buffer(buf, std::min(sizeof buf, n - out.size())), ec);
        if (ec == asio::error::would_block) {
            pollfd p{s.native_handle(), POLLIN, 0};
            ::poll(&p, 1, 20);
            continue;
        }
        if (ec) break;
        out.append(buf, got);
    }
    return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(proxy_listener)

BOOST_AUTO_TEST_CASE(the_header_names_the_peer_and_what_follows_stays) {
    fixture f;
    auto a = f.connect("PROXY TCP4 192.0.2.7 127.0.0.1 5555 80\r\nhello");
    f.run_until([&] { return f.got.size() == 1; });
    BOOST_REQUIRE(f.got.size() == 1u);
    BOOST_TEST(f.got[0].peer.address().to_string() == "192.0.2.7");
    BOOST_TEST(f.got[0].peer.port() == 5555);
    BOOST_TEST(read_all(f.got[0].socket, 5) == "hello");

    // A version 2 header cut in two writes, the first ending inside the addresses.
    auto b = f.connect(v2_tcp4().substr(0, 20));
    f.run_until([&] { return false; }, 50ms);
    BOOST_TEST(f.got.size() == 1u); // not before it is whole
    asio::write(b, asio::buffer(v2_tcp4().substr(20) + "world"));
    f.run_until([&] { return f.got.size() == 2; });
    BOOST_REQUIRE(f.got.size() == 2u);
    BOOST_TEST(f.got[1].peer.address().to_string() == "192.0.2.9");
    BOOST_TEST(f.got[1].peer.port() == 4242);
    BOOST_TEST(read_all(f.got[1].socket, 5) == "world");

    // A balancer's health check (LOCAL): the socket's own address.
    auto c = f.connect(v2_signature + std::string("\x20\x00\x00\x00", 4));
    f.run_until([&] { return f.got.size() == 3; });
    BOOST_REQUIRE(f.got.size() == 3u);
    BOOST_TEST(f.got[2].peer == c.local_endpoint());
    BOOST_TEST(f.l->proxied() == 3u);
    BOOST_TEST(f.l->proxy_refused() == 0u);
}

BOOST_AUTO_TEST_CASE(a_slow_header_holds_up_nobody_behind_it) {
    fixture f;
    const auto began = std::chrono::steady_clock::now();
    auto slow = f.connect("PROXY TCP4 ");
    auto fast = f.connect("PROXY TCP4 192.0.2.7 127.0.0.1 5555 80\r\n");
    f.run_until([&] { return f.got.size() == 1; });
    BOOST_REQUIRE(f.got.size() == 1u);
    BOOST_TEST((std::chrono::steady_clock::now() - began < 200ms)); // not behind the slow one's timeout
    BOOST_TEST(f.got[0].peer.port() == 5555);
    f.run_until([&] { return f.closed(net::proxy_timeout_reason()) == 1; });
    BOOST_TEST(f.closed(net::proxy_timeout_reason()) == 1u);
    BOOST_TEST((std::chrono::steady_clock::now() - began >= 300ms)); // not before its time
    BOOST_TEST(read_all(slow).empty()); // closed under it
    BOOST_TEST(f.got.size() == 1u);
}

BOOST_AUTO_TEST_CASE(each_bad_header_is_closed_with_its_reason) {
    fixture f;
    std::vector<tcp::socket> bad;
    bad.push_back(f.connect("GET / HTTP/1.1\r\n\r\n"));
    bad.push_back(f.connect("PROXY TCP4 192.0.2.7\r\n"));
    std::string big = v2_signature + std::string("\x21\x11\x08\x00", 4); // 2,048 bytes announced
    bad.push_back(f.connect(big));
    f.connect("PROXY TCP4").close(); // leaves before its header
    f.run_until([&] { return f.l->proxy_refused() == 4; });
    BOOST_TEST(f.closed(net::proxy_missing_reason()) == 1u);
    BOOST_TEST(f.closed(net::close_reason::peer_closed) == 1u); // not a bad header: a health check does this
    BOOST_TEST(f.closed(net::proxy_malformed_reason()) == 1u);
    BOOST_TEST(f.closed(net::proxy_oversized_reason()) == 1u);
    for (auto& s : bad) BOOST_TEST(read_all(s).empty());
    BOOST_TEST(f.got.empty());
    BOOST_TEST(f.l->proxied() == 0u);
}

BOOST_AUTO_TEST_CASE(a_peer_outside_the_trusted_ranges_is_refused_whatever_it_claims) {
    fixture f([](net::proxy_protocol_options& p) { p.trusted = net::parse_cidrs("10.0.0.0/8,::1/128"); });
    auto s = f.connect("PROXY TCP4 192.0.2.7 127.0.0.1 5555 80\r\n");
    f.run_until([&] { return f.l->proxy_refused() == 1; });
    BOOST_TEST(f.closed(net::proxy_untrusted_reason()) == 1u);
    BOOST_TEST(read_all(s).empty());
    BOOST_TEST(f.got.empty());
}

BOOST_AUTO_TEST_CASE(at_max_pending_accepting_waits_for_a_header_to_end) {
    fixture f([](net::proxy_protocol_options& p) { p.max_pending = 2; });
    const auto began = std::chrono::steady_clock::now();
    auto s1 = f.connect("PROXY");
    auto s2 = f.connect("PROXY");
    f.run_until([&] { return false; }, 50ms);
    auto good = f.connect("PROXY TCP4 192.0.2.7 127.0.0.1 5555 80\r\n");
    f.run_until([&] { return f.got.size() == 1; });
    BOOST_REQUIRE(f.got.size() == 1u);
    // In the backlog until a silent one timed out (300 ms) and gave its place; the second may time
    // out in the same tick or the next, so only one is certain when the good one is taken.
    BOOST_TEST((std::chrono::steady_clock::now() - began >= 300ms));
    BOOST_TEST(f.closed(net::proxy_timeout_reason()) >= 1u);
    f.run_until([&] { return f.closed(net::proxy_timeout_reason()) == 2; });
    BOOST_TEST(f.closed(net::proxy_timeout_reason()) == 2u);
    BOOST_TEST(f.got.size() == 1u);
}

BOOST_AUTO_TEST_CASE(at_max_connections_a_socket_read_waits_for_a_place) {
    asio::io_context io;
    net::listener_options o;
    o.proxy.enabled = true;
    o.admission.max_connections = 1;
    o.log = [](std::string_view) {};
    net::listener l(io.get_executor(), tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0), o);
    std::vector<tcp::socket> got;
    std::function<void()> accept = [&] {
        l.async_accept([&](error_code ec, tcp::socket s) {
            if (ec) return;
            got.push_back(std::move(s));
            accept();
        });
    };
    accept();
    std::vector<tcp::socket> clients;
    for (int i = 0; i < 2; ++i) {
        clients.emplace_back(io);
        clients.back().connect(l.local_endpoint());
        asio::write(clients.back(), asio::buffer(std::string("PROXY TCP4 192.0.2.7 127.0.0.1 5555 80\r\n")));
    }
    for (int i = 0; i < 40; ++i) io.run_for(5ms);
    BOOST_TEST(got.size() == 1u); // the place is taken (reserved: no connection took it over yet)
    BOOST_TEST(l.proxied() == 2u); // the second's header was read meanwhile
    l.dropped();                   // the first never became a connection: its place is free
    for (int i = 0; i < 100 && got.size() < 2; ++i) io.run_for(5ms);
    BOOST_TEST(got.size() == 2u);
    l.close();
    io.restart();
    io.run_for(20ms);
}

BOOST_AUTO_TEST_CASE(close_ends_the_accept_and_the_header_reads) {
    fixture f;
    auto s1 = f.connect("PROXY");
    f.run_until([&] { return false; }, 50ms);
    f.l->close();
    f.run_until([&] { return f.ended.has_value(); });
    BOOST_REQUIRE(f.ended.has_value());
    BOOST_TEST(*f.ended == asio::error::operation_aborted);
    BOOST_TEST(read_all(s1).empty());
    BOOST_TEST(f.closed(net::close_reason::shutdown) == 1u);
}

BOOST_AUTO_TEST_CASE(without_the_option_the_peer_is_the_socket_s) {
    asio::io_context io;
    net::listener l(io.get_executor(), tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    tcp::socket c(io);
    c.connect(l.local_endpoint());
    tcp::endpoint peer;
    bool done = false;
    l.async_accept(io.get_executor(), peer, [&](error_code ec, tcp::socket) { done = !ec; });
    for (int i = 0; i < 100 && !done; ++i) io.run_for(5ms);
    BOOST_TEST(done);
    BOOST_TEST(peer == c.local_endpoint());
}

BOOST_AUTO_TEST_SUITE_END()
