// consumer_tls — heartwheel::tls: a net::tls_socket (OpenSSL, through the package) whose handshake
// against a server that answers garbage fails with a TLS error, and a net::connection over Asio's
// own ssl::stream (net/tls/ssl_stream.hpp) whose handshake against the same garbage closes it as
// handshake-failed, counted once.
#include <heartwheel/asio_wheel.hpp>
#include <heartwheel/net/connection/connection.hpp>
#include <heartwheel/net/tls/ssl_stream.hpp>
#include <heartwheel/net/tls/tls_socket.hpp>

#include <asio/io_context.hpp>
#include <asio/ssl/stream.hpp>
#include <asio/write.hpp>

#include <chrono>
#include <iostream>
#include <memory>

namespace net = heartwheel::net;
using tcp = asio::ip::tcp;

namespace {
// A connected pair whose far end has already written garbage where a ServerHello belongs.
tcp::socket garbage_server(asio::io_context& io, tcp::acceptor& acceptor, tcp::socket& far) {
    tcp::socket mine(io);
    mine.connect(acceptor.local_endpoint());
    acceptor.accept(far);
    static const char garbage[] = "this is not a TLS server hello\r\n\r\n";
    asio::write(far, asio::buffer(garbage));
    return mine;
}
} // namespace

int main() {
    using namespace std::chrono_literals;
    asio::io_context io;
    tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
    asio::ssl::context ctx(asio::ssl::context::tls_client);

    tcp::socket far1(io);
    net::tls_socket client(garbage_server(io, acceptor, far1), ctx);
    std::error_code handshake_error;
    client.async_handshake(asio::ssl::stream_base::client, [&](std::error_code ec) { handshake_error = ec; });
    io.run_for(5s);
    if (!handshake_error || handshake_error.category() != asio::error::get_ssl_category()) {
        std::cerr << "consumer_tls: expected a TLS error from tls_socket, got: " << handshake_error.message() << '\n';
        return 1;
    }

    io.restart();
    heartwheel::asio_wheel wheel(io.get_executor());
    net::liveness_counters counters;
    net::connection_context cctx(wheel, net::liveness_config{}, &counters);
    tcp::socket far2(io);
    auto c = std::make_shared<net::connection<asio::ssl::stream<tcp::socket>>>(
        asio::ssl::stream<tcp::socket>(garbage_server(io, acceptor, far2), ctx), cctx);
    std::error_code stream_error;
    c->async_handshake(asio::ssl::stream_base::client, [&](std::error_code ec) { stream_error = ec; });
    io.run_for(5s);
    const auto reason = c->reason();
    if (!stream_error || !reason || *reason != net::close_reason::handshake_failed ||
        counters.snapshot().closes_total() != 1) {
        std::cerr << "consumer_tls: connection<ssl::stream> handshake: " << stream_error.message() << ", closes "
                  << counters.snapshot().closes_total() << '\n';
        return 1;
    }
    std::cout << "consumer_tls: tls_socket refused garbage (" << handshake_error.message()
              << "); connection<ssl::stream> closed it as handshake-failed\n";
}
