// tls_socket_test.cpp — net::tls_socket over real sockets on 127.0.0.1, against Asio's own TLS stream
// (and itself) as the peer: the handshake and bytes both ways; a peer's close_notify ends a read with
// eof and a TCP close without one with stream_truncated; garbage instead of a ClientHello fails the
// handshake with a TLS error; an operation that needs no waiting still completes outside its
// initiating call; a write larger than the socket buffers waits for writability and delivers every
// byte; a client verifies the server's name. Bounded in time.
#define BOOST_TEST_MODULE tls_socket
#include <boost/test/unit_test.hpp>

#include "run_until.hpp"

#include <heartwheel/net/connection/liveness_stream.hpp>
#include <heartwheel/net/detail/arrival_stamp.hpp>
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
#include <memory>
#include <optional>
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

    bool lean; ///< the server's context drops OpenSSL's state after TLS 1.3 handshakes

    explicit fixture(bool lean_records = false) : lean(lean_records) {
        cert.use(server_ctx);
        cert.trust(client_ctx);
        if (lean) BOOST_TEST_REQUIRE(net::enable_lean_records(server_ctx));
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
        BOOST_TEST_REQUIRE(server.lean() == lean); // TLS 1.3 both ways: lean when asked
        BOOST_TEST((server.native_handle() == nullptr) == lean);
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

// A case of the server's tls_socket run twice: over OpenSSL's records, and lean (OpenSSL's state
// dropped after the handshake, the records protected by tls_socket from the traffic secrets).
namespace {
/// 8 MiB of a..z: more than the two sockets' buffers hold, so a write of it waits for the peer.
std::string more_than_the_buffers_hold() {
    std::string big(8 << 20, '\0');
    for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>('a' + i % 26);
    return big;
}
/// Reads on `client` into `got` until it is full or a read fails; `have` counts what arrived.
void read_into(asio_tls& client, std::string& got, std::size_t& have) {
    client.async_read_some(asio::buffer(got.data() + have, got.size() - have), [&client, &got, &have](error_code ec, std::size_t n) {
        have += n;
        if (!ec && have < got.size()) read_into(client, got, have);
    });
}
} // namespace

#define BOTH_WAYS_CASE(name)                                                                                \
    struct name : fixture {                                                                                 \
        using fixture::fixture;                                                                             \
        void test_method();                                                                                 \
    };                                                                                                      \
    BOOST_AUTO_TEST_CASE(name##_openssl) { name(false).test_method(); }                                     \
    BOOST_AUTO_TEST_CASE(name##_lean) { name(true).test_method(); }                                         \
    void name::test_method()

namespace {
/// What liveness_stream tells its observer of each read: when its bytes arrived.
struct arrival_observer final : net::stream_observer {
    std::vector<heartwheel::time_point> arrivals;
    void on_bytes_read(std::size_t, heartwheel::time_point arrived) override { arrivals.push_back(arrived); }
    void on_write_started() override {}
    void on_bytes_written(std::size_t, std::size_t) override {}
    error_code close_error() const noexcept override { return {}; }
};
} // namespace

// A lean connection's receive brings the kernel's stamp of its record's arrival (the records read
// the socket themselves), so a heartbeat over TLS counts the peer's silence from there: a record
// that waited 80 ms for a busy loop reports when it came. Over OpenSSL's records (OpenSSL reads the
// socket) the receive reports no arrival, and the liveness falls back to the read's time.
BOTH_WAYS_CASE(a_record_read_late_reports_when_it_arrived) {
    using steady = std::chrono::steady_clock;
    auto [server, client] = handshaken();
    client.lowest_layer().set_option(tcp::no_delay(true)); // the record leaves as it is written
    arrival_observer obs;
    net::liveness_stream<net::tls_socket> s(obs, std::move(server));
    BOOST_TEST_REQUIRE(s.enable_arrival_stamps());
    // The first socket of the system to ask turns the kernel's stamping on a moment later.
    std::this_thread::sleep_for(20ms);
    heartwheel::time_point read_at{};
    s.async_receive([&](error_code ec, net::read_chunk c) {
        BOOST_TEST(!ec);
        BOOST_TEST(std::string(c.bytes().data(), c.size()) == "ping");
        read_at = steady::now();
    });
    io.restart();
    io.poll(); // the receive waits
    const heartwheel::time_point sent = steady::now();
    asio::write(client, asio::buffer(std::string("ping")));
    const heartwheel::time_point written = steady::now();
    std::this_thread::sleep_for(80ms); // the loop is busy elsewhere: the record waits in the socket
    run_until([&] { return read_at != heartwheel::time_point{}; });
    BOOST_TEST_REQUIRE(obs.arrivals.size() == 1u);
    const heartwheel::time_point a = obs.arrivals[0];
    if (!lean) {
        BOOST_TEST((a == net::no_arrival));
        return;
    }
    BOOST_TEST_REQUIRE((a != net::no_arrival));
    BOOST_TEST((a >= sent)); // never before the peer sent it
    BOOST_TEST((a <= written + 20ms), "arrived " << (a - sent).count() << " ns after the write began, read "
                                                  << (read_at - a).count() << " ns after that");
    BOOST_TEST((read_at - a >= 70ms)); // the read came after the stall; the stamp did not
}

BOTH_WAYS_CASE(bytes_both_ways_then_close_notify_is_eof) {
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

BOTH_WAYS_CASE(a_tcp_close_without_close_notify_is_truncation) {
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
BOTH_WAYS_CASE(an_immediate_completion_is_never_inside_the_initiating_call) {
    auto [server, client] = handshaken();
    asio::write(client, asio::buffer(std::string("ready")));
    // the record is in the socket: the read will not wait (a blocking wait on the non-blocking socket
    // would fail with would_block if it came a moment later)
    for (int i = 0; i < 1000 && server.lowest_layer().available() == 0; ++i) std::this_thread::sleep_for(1ms);
    BOOST_TEST_REQUIRE(server.lowest_layer().available() > 0u);
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
BOTH_WAYS_CASE(a_write_larger_than_the_buffers_waits_and_delivers_every_byte) {
    auto ends = handshaken(); // named, not bound: lambdas below capture them (Clang 14 cannot capture a binding)
    auto& server = ends.first;
    auto& client = ends.second;
    const std::string big = more_than_the_buffers_hold();
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
    read_into(client, got, have);
    run_until([&] { return have == got.size() && wec != asio::error::would_block; }, 20000ms);
    BOOST_TEST(!wec);
    BOOST_TEST(written == big.size());
    BOOST_TEST((got == big));
}

namespace {
/// How many writes liveness_stream started as pending (the ones a write timeout would time).
struct write_observer final : net::stream_observer {
    int started = 0;
    std::size_t written = 0;
    void on_bytes_read(std::size_t, heartwheel::time_point) override {}
    void on_write_started() override { ++started; }
    void on_bytes_written(std::size_t n, std::size_t) override { written += n; }
    error_code close_error() const noexcept override { return {}; }
};
} // namespace

// Through liveness_stream, a record the socket takes at once is not a pending write (nothing for a
// write timeout to time); a write the peer does not take waits — started once, and every byte
// arrives once the peer reads, the retry after the wait writing the same bytes again (OpenSSL and the
// lean records alike).
BOTH_WAYS_CASE(only_a_write_that_waits_is_started) {
    auto ends = handshaken(); // named, not bound: lambdas below capture them (Clang 14 cannot capture a binding)
    auto& client = ends.second;
    write_observer obs;
    net::liveness_stream<net::tls_socket> s(obs, std::move(ends.first));
    error_code wec = asio::error::would_block;
    s.async_write_some(asio::buffer(std::string_view("hello")), [&](error_code ec, std::size_t) { wec = ec; });
    run_until([&] { return wec != asio::error::would_block; });
    BOOST_TEST(!wec);
    BOOST_TEST(obs.started == 0); // taken at once
    std::string hello(5, '\0');
    asio::read(client, asio::buffer(hello));
    BOOST_TEST(hello == "hello");

    const std::string big = more_than_the_buffers_hold();
    wec = asio::error::would_block;
    asio::async_write(s, asio::buffer(big), [&](error_code ec, std::size_t) { wec = ec; });
    io.restart();
    io.run_for(100ms);
    BOOST_TEST_REQUIRE(wec == asio::error::would_block); // the peer has not read
    BOOST_TEST(obs.started >= 1);
    std::string got(big.size(), '\0');
    std::size_t have = 0;
    read_into(client, got, have);
    run_until([&] { return have == got.size() && wec != asio::error::would_block; }, 20000ms);
    BOOST_TEST(!wec);
    BOOST_TEST(obs.written == big.size() + 5);
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
BOTH_WAYS_CASE(no_io_on_a_descriptor_after_its_close) {
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
BOTH_WAYS_CASE(writes_to_a_reset_peer_raise_no_sigpipe) {
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

// --- lean records, against an OpenSSL client whose every byte the test sees -----------------------

namespace {

// An OpenSSL client over memory BIOs, its bytes carried to and from a socket by the test: a record
// can be delivered a byte at a time, changed, or counted.
struct mem_client {
    SSL* ssl;
    BIO* in = ::BIO_new(::BIO_s_mem());
    BIO* out = ::BIO_new(::BIO_s_mem());
    tcp::socket& socket;
    mem_client(SSL_CTX* ctx, tcp::socket& s) : ssl(::SSL_new(ctx)), socket(s) {
        ::SSL_set_bio(ssl, in, out);
        ::SSL_set_connect_state(ssl);
    }
    ~mem_client() { ::SSL_free(ssl); }
    mem_client(const mem_client&) = delete;
    mem_client& operator=(const mem_client&) = delete;
    /// What OpenSSL made to send, taken out (not sent).
    std::string take() {
        std::string r;
        char b[4096];
        for (int n; (n = ::BIO_read(out, b, sizeof b)) > 0;) r.append(b, static_cast<std::size_t>(n));
        return r;
    }
    /// Everything the socket holds now, given to OpenSSL.
    void feed() {
        error_code ec;
        char b[4096];
        while (socket.available(ec) > 0 && !ec) {
            const std::size_t n = socket.read_some(asio::buffer(b), ec);
            if (ec) break;
            ::BIO_write(in, b, static_cast<int>(n));
        }
    }
    /// `text` as records, not sent.
    std::string records(const std::string& text) {
        BOOST_TEST_REQUIRE(::SSL_write(ssl, text.data(), static_cast<int>(text.size())) == static_cast<int>(text.size()));
        return take();
    }
    /// What the client reads of what has arrived ("" and `status` set when nothing).
    std::string read(int& status) {
        feed();
        std::string r;
        char b[4096];
        for (int n; (n = ::SSL_read(ssl, b, sizeof b)) > 0;) r.append(b, static_cast<std::size_t>(n));
        status = ::SSL_get_error(ssl, -1);
        return r;
    }
};

struct lean_fixture : fixture {
    lean_fixture() : fixture(true) {}
    std::optional<tcp::socket> peer_socket;
    std::unique_ptr<mem_client> client;
    std::optional<net::tls_socket> server;

    /// A handshaken pair, the client offering `suites` (TLS 1.3) or TLS 1.2 only.
    void handshake(const char* suites, bool tls12 = false) {
        auto [peer, accepted] = connect();
        peer_socket.emplace(std::move(peer));
        server.emplace(std::move(accepted), server_ctx);
        client = std::make_unique<mem_client>(client_ctx.native_handle(), *peer_socket);
        if (tls12) ::SSL_set_max_proto_version(client->ssl, TLS1_2_VERSION);
        else BOOST_TEST_REQUIRE(::SSL_set_ciphersuites(client->ssl, suites) == 1);
        error_code server_ec = asio::error::would_block;
        server->async_handshake(asio::ssl::stream_base::server, [&](error_code ec) { server_ec = ec; });
        bool client_done = false;
        for (int i = 0; i < 2000 && !(client_done && server_ec != asio::error::would_block); ++i) {
            if (!client_done) client_done = ::SSL_do_handshake(client->ssl) == 1;
            if (const std::string bytes = client->take(); !bytes.empty()) asio::write(*peer_socket, asio::buffer(bytes));
            io.restart();
            io.poll();
            client->feed();
            std::this_thread::sleep_for(1ms);
        }
        BOOST_TEST_REQUIRE(client_done);
        BOOST_TEST_REQUIRE(!server_ec, server_ec.message());
    }
    /// The server's next read (64 bytes at most).
    std::string server_reads(error_code& ec) {
        one_read r;
        r.start(*server);
        run_until([&] { return r.done(); });
        ec = r.ec;
        return r.text();
    }
    void server_writes(const std::string& text) {
        error_code wec = asio::error::would_block;
        asio::async_write(*server, asio::buffer(text), [&](error_code ec, std::size_t) { wec = ec; });
        run_until([&] { return wec != asio::error::would_block; });
        BOOST_TEST_REQUIRE(!wec, wec.message());
    }
    /// The records the socket holds for the client, by length, without reading them.
    std::vector<std::size_t> record_lengths(std::string& raw) {
        for (int i = 0; i < 1000 && peer_socket->available() == 0; ++i) std::this_thread::sleep_for(1ms);
        raw.resize(peer_socket->available());
        asio::read(*peer_socket, asio::buffer(raw));
        std::vector<std::size_t> lengths;
        for (std::size_t at = 0; at + 5 <= raw.size();) {
            const std::size_t n = static_cast<unsigned char>(raw[at + 3]) << 8 | static_cast<unsigned char>(raw[at + 4]);
            lengths.push_back(n);
            at += 5 + n;
        }
        return lengths;
    }
};

} // namespace

// Each TLS 1.3 suite (AES-128-GCM and ChaCha20 over SHA-256, AES-256-GCM over SHA-384): the server
// goes lean; bytes both ways across the client's key updates, asked for or not — asked, the server's
// reply carries its own KeyUpdate first (a 22-byte record: 5 of header, 1 + 16 of a 1-byte message...
// the message is 5 bytes: 5 + 5 + 1 + 16 = 27), which the client must take before it can read the
// data; then the server's close_notify is the client's clean end.
BOOST_FIXTURE_TEST_CASE(lean_records_carry_every_suite_across_key_updates, lean_fixture) {
    for (const char* suite : {"TLS_AES_128_GCM_SHA256", "TLS_CHACHA20_POLY1305_SHA256", "TLS_AES_256_GCM_SHA384"}) {
        BOOST_TEST_CONTEXT(suite) {
            handshake(suite);
            BOOST_TEST_REQUIRE(server->lean());
            for (int round = 0; round < 4; ++round) {
                const bool asked = round % 2 == 0;
                BOOST_TEST_REQUIRE(::SSL_key_update(client->ssl, asked ? SSL_KEY_UPDATE_REQUESTED : SSL_KEY_UPDATE_NOT_REQUESTED) == 1);
                const std::string question = "question " + std::to_string(round);
                asio::write(*peer_socket, asio::buffer(client->records(question)));
                error_code ec;
                BOOST_TEST(server_reads(ec) == question);
                BOOST_TEST_REQUIRE(!ec, ec.message());
                const std::string answer = "answer " + std::to_string(round);
                server_writes(answer);
                std::string raw;
                const auto lengths = record_lengths(raw);
                if (asked) BOOST_TEST((lengths == std::vector<std::size_t>{5 + 1 + 16, answer.size() + 1 + 16}));
                else BOOST_TEST((lengths == std::vector<std::size_t>{answer.size() + 1 + 16}));
                ::BIO_write(client->in, raw.data(), static_cast<int>(raw.size()));
                int status = 0;
                BOOST_TEST(client->read(status) == answer);
            }
            BOOST_TEST(server->send_close_notify());
            int status = 0;
            for (int i = 0; i < 1000 && peer_socket->available() == 0; ++i) std::this_thread::sleep_for(1ms);
            BOOST_TEST(client->read(status).empty());
            BOOST_TEST(status == SSL_ERROR_ZERO_RETURN);
        }
    }
}

// Records that arrive a byte at a time, and one larger than the reader's buffer: read whole, in order.
BOOST_FIXTURE_TEST_CASE(lean_records_trickled_or_larger_than_the_read_arrive_whole, lean_fixture) {
    handshake("TLS_AES_128_GCM_SHA256");
    std::string bytes = client->records("trickled"); // (in two statements: the order they are made in counts)
    bytes += client->records("second");
    // byte by byte through the non-blocking read: nothing until the record's last byte, then all of it
    const std::size_t first = 5 + 8 + 1 + 16;
    char buf[64];
    for (std::size_t i = 0; i < first; ++i) {
        asio::write(*peer_socket, asio::buffer(bytes.data() + i, 1));
        for (int t = 0; t < 1000 && server->lowest_layer().available() == 0; ++t) std::this_thread::sleep_for(1ms);
        net::tls_socket::want w;
        error_code rec;
        const std::size_t n = server->read_ready(buf, sizeof buf, w, rec);
        if (i + 1 < first) {
            BOOST_TEST_REQUIRE((rec == asio::error::would_block), i << ": " << rec.message());
            BOOST_TEST_REQUIRE((w == net::tls_socket::want::read));
        } else {
            BOOST_TEST_REQUIRE(!rec, rec.message());
            BOOST_TEST(std::string(buf, n) == "trickled");
        }
    }
    asio::write(*peer_socket, asio::buffer(bytes.data() + first, bytes.size() - first));
    error_code ec;
    BOOST_TEST(server_reads(ec) == "second");

    std::string big(16384, '\0');
    for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>('a' + i % 26);
    asio::write(*peer_socket, asio::buffer(client->records(big)));
    std::string got;
    while (got.size() < big.size() && !ec) got += server_reads(ec); // 64 bytes a read
    BOOST_TEST(!ec);
    BOOST_TEST((got == big));
    BOOST_TEST(!server->has_pending());
}

// What a lean server refuses after the handshake, each on a new connection: a record whose byte was
// changed (it does not authenticate), an unprotected handshake record, a wrong version, a length past
// the limit, a record too short to hold a tag. Each ends the read with an SSL error; no close_notify,
// no read and no write follows a failure.
BOOST_FIXTURE_TEST_CASE(lean_records_refuse_a_changed_or_malformed_record, lean_fixture) {
    const std::vector<std::pair<std::string, std::function<std::string(std::string)>>> cases = {
        {"changed", [](std::string r) { r[10] = static_cast<char>(r[10] ^ 1); return r; }},
        {"unprotected", [](std::string) { return std::string("\x16\x03\x03\x00\x04\x18\x00\x00\x01", 9); }},
        {"version", [](std::string r) { r[2] = 1; return r; }},
        {"too long", [](std::string) { return std::string("\x17\x03\x03\x41\x01", 5) + std::string(64, 'x'); }},
        {"too short", [](std::string) { return std::string("\x17\x03\x03\x00\x05", 5) + std::string(5, 'x'); }},
    };
    for (const auto& [what, change] : cases) {
        BOOST_TEST_CONTEXT(what) {
            handshake("TLS_AES_128_GCM_SHA256");
            asio::write(*peer_socket, asio::buffer(change(client->records("refused"))));
            error_code ec;
            BOOST_TEST(server_reads(ec).empty());
            BOOST_TEST((ec.category() == asio::error::get_ssl_category()), ec.message());
            BOOST_TEST(!server->send_close_notify());
            // nothing more either way: a read, even of a good record, and a write fail too
            asio::write(*peer_socket, asio::buffer(client->records("after")));
            BOOST_TEST(server_reads(ec).empty());
            BOOST_TEST((ec.category() == asio::error::get_ssl_category()), ec.message());
            error_code wec = asio::error::would_block;
            server->async_write_some(asio::buffer("x", 1), [&](error_code e, std::size_t) { wec = e; });
            run_until([&] { return wec != asio::error::would_block; });
            BOOST_TEST((wec.category() == asio::error::get_ssl_category()), wec.message());
        }
    }
}

// A TLS 1.2 client: OpenSSL keeps the connection (the lean records are TLS 1.3's), and it works.
BOOST_FIXTURE_TEST_CASE(a_tls12_connection_keeps_openssl, lean_fixture) {
    handshake(nullptr, true);
    BOOST_TEST(!server->lean());
    BOOST_TEST(server->native_handle() != nullptr);
    asio::write(*peer_socket, asio::buffer(client->records("over 1.2")));
    error_code ec;
    BOOST_TEST(server_reads(ec) == "over 1.2");
}

// A server that asks for the client's certificate keeps OpenSSL's state: the application may read the
// certificate after the handshake.
BOOST_FIXTURE_TEST_CASE(a_server_asking_for_the_client_certificate_keeps_openssl, lean_fixture) {
    server_ctx.set_verify_mode(asio::ssl::verify_peer | asio::ssl::verify_fail_if_no_peer_cert);
    cert.trust(server_ctx);
    cert.use(client_ctx);
    handshake("TLS_AES_128_GCM_SHA256");
    BOOST_TEST(!server->lean());
    X509* peer = ::SSL_get1_peer_certificate(server->native_handle());
    BOOST_TEST(peer != nullptr);
    ::X509_free(peer);
    asio::write(*peer_socket, asio::buffer(client->records("with a certificate")));
    error_code ec;
    BOOST_TEST(server_reads(ec) == "with a certificate");
}
