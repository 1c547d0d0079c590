// consumer_boost_net — heartwheel::boost_net in a Boost.Asio application: one translation unit with
// Boost.Asio's and Beast's own headers (no standalone Asio anywhere), a coroutine server on
// boost::asio::ip::tcp::socket whose connections are net::connection with a heartbeat, reader-idle
// detection and a tracked request, and a client in the same process that answers the pings and the
// request, then falls silent and must be told goodbye by the policy. Then the same over TLS: a
// net::tls_socket server connection against a boost::asio::ssl::stream client.
#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>

#include <heartwheel/asio_wheel.hpp>
#include <heartwheel/net/connection/connection.hpp>
#include <heartwheel/net/tls/tls_socket.hpp>

#include <openssl/evp.h>
#include <openssl/x509.h>

#include <iostream>
#include <memory>
#include <string>

namespace ba = boost::asio;
namespace net = heartwheel::net;
using namespace std::chrono_literals;
using tcp = ba::ip::tcp;

static_assert(heartwheel::uses_boost_asio, "heartwheel::boost_net is built for Boost.Asio");
static_assert(std::is_same_v<heartwheel::error_code, boost::system::error_code>);

namespace {

struct outcome {
    int pings_seen = 0;
    bool request_answered = false;
    std::string request_result = "never completed";
    std::string goodbye;
};

// The server's side of one connection, in the shape users write: a coroutine read loop.
template <class Stream>
ba::awaitable<void> serve(std::shared_ptr<net::connection<Stream>> c, outcome& out) {
    // Ask the client something and time the answer on the wheel (a tracked request).
    c->send("Q 7\n");
    c->requests().track(7, 2s, [&out](heartwheel::error_code ec, net::request_state) {
        out.request_result = ec ? ec.message() : "answered";
    });
    std::string buf;
    for (;;) {
        auto [ec, n] = co_await ba::async_read_until(c->stream(), ba::dynamic_buffer(buf), '\n',
                                                     ba::as_tuple(ba::use_awaitable));
        if (ec) {
            c->read_failed(ec);
            co_return;
        }
        const std::string line = buf.substr(0, n - 1);
        buf.erase(0, n);
        if (line == "PONG") c->pong_received();
        else if (line == "A 7") out.request_answered = c->requests().complete(7);
    }
}

// The client: answers PINGs and the question until it has answered both once, then says nothing.
template <class Stream>
ba::awaitable<void> client(Stream& s, outcome& out) {
    if constexpr (!std::is_same_v<Stream, tcp::socket>)
        co_await s.async_handshake(ba::ssl::stream_base::client, ba::use_awaitable);
    boost::beast::flat_buffer buf; // Beast's buffer, to show its headers live here too
    std::string pending;
    for (;;) {
        auto [ec, n] = co_await s.async_read_some(buf.prepare(512), ba::as_tuple(ba::use_awaitable));
        if (ec) co_return;
        buf.commit(n);
        pending += boost::beast::buffers_to_string(buf.data());
        buf.consume(buf.size());
        for (auto nl = pending.find('\n'); nl != std::string::npos; nl = pending.find('\n')) {
            const std::string line = pending.substr(0, nl);
            pending.erase(0, nl + 1);
            std::string reply;
            if (line == "PING" && ++out.pings_seen <= 2) reply = "PONG\n";
            if (line == "Q 7") reply = "A 7\n";
            if (line.rfind("BYE ", 0) == 0) out.goodbye = line.substr(4);
            if (!reply.empty()) co_await ba::async_write(s, ba::buffer(reply), ba::use_awaitable);
        }
    }
}

net::liveness_config policy() {
    net::liveness_config cfg;
    cfg.heartbeat.interval = 40ms;
    cfg.heartbeat.timeout = 40ms;
    cfg.heartbeat.misses = 2;
    cfg.idle.reader_idle = 5s; // the heartbeat must judge the silence first
    return cfg;
}

bool judge(const char* what, const outcome& out, const net::liveness_counters& counters) {
    const bool ok = out.pings_seen >= 3 && out.request_answered && out.request_result == "answered" &&
                    out.goodbye == "heartbeat-timeout" && counters.snapshot().closes_total() == 1;
    if (!ok)
        std::cerr << what << ": pings " << out.pings_seen << ", request " << out.request_result << ", goodbye '"
                  << out.goodbye << "', closes " << counters.snapshot().closes_total() << '\n';
    return ok;
}

template <class Stream, class Client>
bool run(const char* what, ba::io_context& io, tcp::acceptor& acceptor, Client& client_stream,
         std::function<Stream(tcp::socket)> wrap) {
    heartwheel::asio_wheel wheel(io.get_executor());
    net::liveness_counters counters;
    net::connection_context ctx(wheel, policy(), &counters);
    outcome out;
    ba::co_spawn(io, [&]() -> ba::awaitable<void> {
        auto socket = co_await acceptor.async_accept(ba::use_awaitable);
        auto c = std::make_shared<net::connection<Stream>>(wrap(std::move(socket)), ctx);
        net::connection_hooks hooks;
        hooks.send_ping = [raw = c.get()] { raw->send("PING\n"); };
        hooks.last_words = [raw = c.get()](net::close_reason r) { raw->send(std::string("BYE ") + net::to_string(r) + "\n"); };
        c->set_hooks(std::move(hooks));
        if constexpr (!std::is_same_v<Stream, tcp::socket>)
            co_await c->async_handshake(ba::ssl::stream_base::server, ba::use_awaitable);
        co_await serve(c, out);
    }, ba::detached);
    ba::co_spawn(io, client(client_stream, out), [&](std::exception_ptr) { io.stop(); });
    io.run_for(10s);
    io.restart();
    return judge(what, out, counters);
}

// A throwaway self-signed certificate for the TLS round.
void self_sign(ba::ssl::context& ctx) {
    EVP_PKEY* key = EVP_EC_gen("P-256");
    X509* cert = X509_new();
    ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
    X509_gmtime_adj(X509_getm_notBefore(cert), 0);
    X509_gmtime_adj(X509_getm_notAfter(cert), 3600);
    X509_set_pubkey(cert, key);
    X509_sign(cert, key, EVP_sha256());
    SSL_CTX_use_certificate(ctx.native_handle(), cert);
    SSL_CTX_use_PrivateKey(ctx.native_handle(), key);
    X509_free(cert);
    EVP_PKEY_free(key);
}

} // namespace

int main() {
    ba::io_context io;
    tcp::acceptor acceptor(io, {ba::ip::make_address("127.0.0.1"), 0});

    tcp::socket plain(io);
    plain.connect(acceptor.local_endpoint());
    if (!run<tcp::socket>("tcp", io, acceptor, plain, [](tcp::socket s) { return s; })) return 1;

    ba::ssl::context server_ctx(ba::ssl::context::tls_server), client_ctx(ba::ssl::context::tls_client);
    self_sign(server_ctx);
    ba::ssl::stream<tcp::socket> tls_client(io, client_ctx);
    tls_client.lowest_layer().connect(acceptor.local_endpoint());
    if (!run<net::tls_socket>("tls", io, acceptor, tls_client,
                              [&](tcp::socket s) { return net::tls_socket(std::move(s), server_ctx); }))
        return 1;
    std::cout << "consumer_boost_net: a Boost.Asio coroutine server timed by heartwheel, over TCP and TLS: "
                 "pings answered, a tracked request answered, silence closed as heartbeat-timeout\n";
}
