// tls_socket_test.cpp — net::tls_socket over real sockets on 127.0.0.1, against Asio's own TLS stream
// (and itself) as the peer: the handshake and bytes both ways; a peer's close_notify ends a read with
// eof and a TCP close without one with stream_truncated; garbage instead of a ClientHello fails the
// handshake with a TLS error; an operation that needs no waiting still completes outside its
// initiating call; a write larger than the socket buffers waits for writability and delivers every
// byte; a client verifies the server's name. Bounded in time.
#define BOOST_TEST_MODULE tls_socket
#include <boost/test/unit_test.hpp>

#include "run_until.hpp"

#include <heartwheel/net/tls/tls_socket.hpp>

#include "self_signed.hpp"

#include "test_asio.hpp"

#include <pthread.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <functional>
#include <string>
#include <vector>

using namespace std::chrono_literals;
namespace net = heartwheel::net;
using tcp = asio::ip::tcp;
using asio_tls = asio::ssl::stream<tcp::socket>;

namespace {

struct fixture {
    asio::io_context io;
    tcp::acceptor acceptor{io, {asio::ip::make_address("127.0.0.1"), 0}};
    heartwheel::test::self_signed cert;
    asio::ssl::context server_ctx{asio::ssl::context::tls_server}, client_ctx{asio::ssl::context::tls_client};

    fixture() {
        cert.use(server_ctx);
        cert.trust(client_ctx);
    }
    /// A connected pair: (the peer's socket, the accepted one).
    std::pair<tcp::socket, tcp::socket> connect() {
        tcp::socket peer(io);
        peer.connect(acceptor.local_endpoint());
        return {std::move(peer), acceptor.accept()};
    }
    void run_until(const std::function<bool()>& done, std::chrono::milliseconds limit = 5000ms) {
        hwtest::run_until(io, done, limit);
    }
    /// The server side as a tls_socket, the client as Asio's stream, both handshaken.
    std::pair<net::tls_socket, asio_tls> handshaken() {
        auto [peer, accepted] = connect();
        net::tls_socket server(std::move(accepted), server_ctx);
        asio_tls client(std::move(peer), client_ctx);
        error_code server_ec = asio::error::would_block, client_ec = asio::error::would_block;
        server.async_handshake(asio::ssl::stream_base::server, [&](error_code ec) { server_ec = ec; });
        client.async_handshake(asio::ssl::stream_base::client, [&](error_code ec) { client_ec = ec; });
        run_until([&] { return server_ec != asio::error::would_block && client_ec != asio::error::would_block; });
        BOOST_TEST_REQUIRE(!server_ec, server_ec.message());
        BOOST_TEST_REQUIRE(!client_ec, client_ec.message());
        return {std::move(server), std::move(client)};
    }
};

/// Reads once on `s`; records the outcome and whether the handler ran inside the initiating call.
struct one_read {
    char buf[64];
    error_code ec = asio::error::would_block;
    std::size_t n = 0;
    bool inside = false, starting = false;
    template <class Stream>
    void start(Stream& s) {
        starting = true;
        s.async_read_some(asio::buffer(buf), [this](error_code e, std::size_t got) {
            inside = starting;
            ec = e;
            n = got;
        });
        starting = false;
    }
    bool done() const { return ec != asio::error::would_block; }
    std::string text() const { return {buf, n}; }
};

} // namespace

BOOST_FIXTURE_TEST_CASE(bytes_both_ways_then_close_notify_is_eof, fixture) {
    auto [server, client] = handshaken();
    one_read r;
    r.start(server);
    io.restart();
    io.run_for(20ms);
    BOOST_TEST(!r.done()); // nothing sent yet: the read waits
    asio::write(client, asio::buffer(std::string("hello")));
    run_until([&] { return r.done(); });
    BOOST_TEST(!r.ec);
    BOOST_TEST(r.text() == "hello");

    error_code wec = asio::error::would_block;
    std::size_t written = 0;
    asio::async_write(server, asio::buffer(std::string("world")), [&](error_code ec, std::size_t n) {
        wec = ec;
        written = n;
    });
    run_until([&] { return wec != asio::error::would_block; });
    BOOST_TEST(!wec);
    BOOST_TEST(written == 5u);
    char got[5];
    asio::read(client, asio::buffer(got));
    BOOST_TEST(std::string(got, 5) == "world");

    one_read last;
    last.start(server);
    error_code sec = asio::error::would_block;
    client.async_shutdown([&](error_code ec) { sec = ec; }); // close_notify; waits for the server's
    run_until([&] { return last.done(); });
    BOOST_TEST((last.ec == asio::error::eof));
    BOOST_TEST(last.n == 0u);
}

BOOST_FIXTURE_TEST_CASE(a_tcp_close_without_close_notify_is_truncation, fixture) {
    auto [server, client] = handshaken();
    one_read r;
    r.start(server);
    // A FIN without close_notify (a close() could send a reset instead: the client has not read the
    // server's session tickets).
    client.lowest_layer().shutdown(tcp::socket::shutdown_send);
    run_until([&] { return r.done(); });
    BOOST_TEST((r.ec == asio::ssl::error::stream_truncated), r.ec.message());
}

BOOST_FIXTURE_TEST_CASE(garbage_instead_of_a_client_hello_fails_the_handshake, fixture) {
    auto [peer, accepted] = connect();
    net::tls_socket server(std::move(accepted), server_ctx);
    error_code ec = asio::error::would_block;
    server.async_handshake(asio::ssl::stream_base::server, [&](error_code e) { ec = e; });
    asio::write(peer, asio::buffer(std::string("GET / HTTP/1.1\r\nHost: x\r\n\r\n")));
    run_until([&] { return ec != asio::error::would_block; });
    BOOST_TEST((ec.category() == asio::error::get_ssl_category()), ec.message());
}

// Bytes already decrypted or waiting in the socket: the read needs no waiting, and still completes
// from the executor (like every Asio operation), not inside async_read_some. So does a zero-byte read.
BOOST_FIXTURE_TEST_CASE(an_immediate_completion_is_never_inside_the_initiating_call, fixture) {
    auto [server, client] = handshaken();
    asio::write(client, asio::buffer(std::string("ready")));
    tcp::socket::wait_type readable = tcp::socket::wait_read;
    server.lowest_layer().wait(readable); // the record is in the socket: SSL_read will not block
    one_read r;
    r.start(server);
    BOOST_TEST(!r.done());
    run_until([&] { return r.done(); });
    BOOST_TEST(!r.inside);
    BOOST_TEST(r.text() == "ready");

    bool inside = true, completed = false;
    bool starting = true;
    server.async_read_some(asio::mutable_buffer(), [&](error_code ec, std::size_t n) {
        inside = starting;
        completed = !ec && n == 0;
    });
    starting = false;
    run_until([&] { return completed; });
    BOOST_TEST(!inside);

    // An empty sequence of buffers is a zero-byte write, not a read past its end.
    bool written_nothing = false;
    server.async_write_some(std::vector<asio::const_buffer>{}, [&](error_code ec, std::size_t n) {
        written_nothing = !ec && n == 0;
    });
    run_until([&] { return written_nothing; });
}

// 8 MiB against a peer that does not read at first: the socket buffers fill, the write waits for
// writability (it is not done while the peer sleeps), then every byte arrives in order.
BOOST_FIXTURE_TEST_CASE(a_write_larger_than_the_buffers_waits_and_delivers_every_byte, fixture) {
    auto ends = handshaken(); // named, not bound: lambdas below capture them (Clang 14 cannot capture a binding)
    auto& server = ends.first;
    auto& client = ends.second;
    std::string big(8 << 20, '\0');
    for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>('a' + i % 26);
    error_code wec = asio::error::would_block;
    std::size_t written = 0;
    asio::async_write(server, asio::buffer(big), [&](error_code ec, std::size_t n) {
        wec = ec;
        written = n;
    });
    io.restart();
    io.run_for(100ms);
    BOOST_TEST_REQUIRE(wec == asio::error::would_block); // still waiting: the peer has not read
    std::string got(big.size(), '\0');
    std::size_t have = 0;
    std::function<void()> read_more = [&] {
        client.async_read_some(asio::buffer(got.data() + have, got.size() - have), [&](error_code ec, std::size_t n) {
            have += n;
            if (!ec && have < got.size()) read_more();
        });
    };
    read_more();
    run_until([&] { return have == got.size() && wec != asio::error::would_block; }, 20000ms);
    BOOST_TEST(!wec);
    BOOST_TEST(written == big.size());
    BOOST_TEST((got == big));
}

// As a client: the name set with set_host must match the certificate (CN=localhost here).
BOOST_FIXTURE_TEST_CASE(a_client_verifies_the_server_name, fixture) {
    for (const std::string host : {"localhost", "example.com"}) {
        auto [peer, accepted] = connect();
        asio_tls server(std::move(accepted), server_ctx);
        net::tls_socket client(std::move(peer), client_ctx);
        client.set_host(host);
        error_code server_ec = asio::error::would_block, client_ec = asio::error::would_block;
        server.async_handshake(asio::ssl::stream_base::server, [&](error_code ec) { server_ec = ec; });
        client.async_handshake(asio::ssl::stream_base::client, [&](error_code ec) { client_ec = ec; });
        run_until([&] { return client_ec != asio::error::would_block; });
        if (host == "localhost") {
            BOOST_TEST(!client_ec, client_ec.message());
        } else {
            BOOST_TEST(!!client_ec);
            BOOST_TEST((client_ec.category() == asio::error::get_ssl_category()), client_ec.message());
        }
    }
}

// A read whose wait for readability has completed, and whose socket is then closed before the read
// runs (the connection closes the socket when its write fails while the read is queued): OpenSSL
// must not be called on the old descriptor number, which a new socket may hold by then (accept and
// socketpair take the lowest free number). Found by an attack pass: SSL_read on the closed number
// read a new client's ClientHello.
BOOST_FIXTURE_TEST_CASE(no_io_on_a_descriptor_after_its_close, fixture) {
    auto ends = handshaken(); // named, not bound: lambdas below capture them (Clang 14 cannot capture a binding)
    auto& server = ends.first;
    auto& client = ends.second;
    one_read r;
    r.start(server); // waits for readability
    io.restart();
    io.run_for(20ms);
    BOOST_TEST_REQUIRE(!r.done());
    asio::write(client, asio::buffer(std::string("hello")));
    for (int i = 0; i < 1000 && server.lowest_layer().available() == 0; ++i) std::this_thread::sleep_for(1ms);
    BOOST_TEST_REQUIRE(server.lowest_layer().available() > 0u);
    const int old_fd = server.lowest_layer().native_handle();
    int pair[2] = {-1, -1};
    int victim = -1;
    // A wait for writability on the same socket: the reactor reports both in one pass and queues the
    // write side's completion first (Asio performs write ops before read ops), so this closes the
    // socket after the read's wait completed and before the read runs.
    server.lowest_layer().async_wait(asio::socket_base::wait_write, [&](error_code) {
        server.lowest_layer().close();
        BOOST_TEST_REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair) == 0);
        BOOST_TEST_REQUIRE((pair[0] == old_fd || pair[1] == old_fd)); // the number, reused
        victim = pair[0] == old_fd ? pair[0] : pair[1];
        const int other = victim == pair[0] ? pair[1] : pair[0];
        BOOST_TEST_REQUIRE(::write(other, "victim's bytes", 14) == 14);
    });
    run_until([&] { return r.done(); });
    BOOST_TEST((r.ec == asio::error::bad_descriptor || r.ec == asio::error::operation_aborted), r.ec.message());
    int unread = 0;
    BOOST_TEST_REQUIRE(::ioctl(victim, FIONREAD, &unread) == 0);
    BOOST_TEST(unread == 14); // nothing read from the descriptor's new owner
    // Nor by any later call: a write, a handshake, close_notify.
    error_code wec = asio::error::would_block;
    server.async_write_some(asio::buffer("x", 1), [&](error_code ec, std::size_t) { wec = ec; });
    run_until([&] { return wec != asio::error::would_block; });
    BOOST_TEST((wec == asio::error::bad_descriptor));
    BOOST_TEST(!server.send_close_notify());
    char peek[32];
    BOOST_TEST(::recv(pair[0] == victim ? pair[1] : pair[0], peek, sizeof peek, MSG_DONTWAIT) < 0); // nothing written to it
    ::close(pair[0]);
    ::close(pair[1]);
}

// A peer's reset must not raise SIGPIPE, whether or not the application ignores it: with SIGPIPE
// blocked on this thread, a write() to the reset socket would leave it pending (OpenSSL's own socket
// BIO writes that way); tls_socket's writes must leave nothing pending.
BOOST_FIXTURE_TEST_CASE(writes_to_a_reset_peer_raise_no_sigpipe, fixture) {
    sigset_t pipe_only, before;
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    BOOST_TEST_REQUIRE(::pthread_sigmask(SIG_BLOCK, &pipe_only, &before) == 0);
    struct restore { // drop a pending SIGPIPE (the failing case) before the mask is restored
        sigset_t mask, before;
        ~restore() {
            const timespec none{};
            while (::sigtimedwait(&mask, nullptr, &none) == SIGPIPE) {}
            ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
        }
    } restore_mask{pipe_only, before};

    auto [server, client] = handshaken();
    client.lowest_layer().set_option(asio::socket_base::linger(true, 0));
    client.lowest_layer().close(); // a reset
    error_code ec;
    const std::string line(1000, 'x');
    for (int i = 0; i < 20 && !ec; ++i) { // the first write may still be taken; a later one meets the reset
        error_code wec = asio::error::would_block;
        asio::async_write(server, asio::buffer(line), [&](error_code e, std::size_t) { wec = e; });
        run_until([&] { return wec != asio::error::would_block; });
        ec = wec;
        std::this_thread::sleep_for(2ms);
    }
    BOOST_TEST_REQUIRE(!!ec, "no write failed after the peer's reset");
    // One more write after the failure: the connection is failed and the socket still open.
    error_code again = asio::error::would_block;
    asio::async_write(server, asio::buffer(line), [&](error_code e, std::size_t) { again = e; });
    run_until([&] { return again != asio::error::would_block; });
    sigset_t pending;
    sigemptyset(&pending);
    BOOST_TEST_REQUIRE(::sigpending(&pending) == 0);
    BOOST_TEST(sigismember(&pending, SIGPIPE) == 0, "a write raised SIGPIPE (" << ec.message() << ")");
}
