// consumer_asio — heartwheel::asio: the separately compiled Asio with asio::ssl (OpenSSL), used the
// way an existing server does, deprecated names included (io_service, io_service::work): linking
// heartwheel must not impose ASIO_NO_DEPRECATED. A TLS client handshakes with a plain TCP peer that
// answers garbage, and must fail with an SSL error (OpenSSL really ran).
#include <asio/io_service.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/ssl.hpp>
#include <asio/write.hpp>

#include <iostream>
#include <optional>

int main() {
    asio::io_service io;
    std::optional<asio::io_service::work> work(io); // deprecated API, still available
    asio::ip::tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
    asio::ip::tcp::socket peer(io);
    static const char garbage[] = "this is not a TLS server hello\r\n\r\n";
    acceptor.async_accept(peer, [&](std::error_code ec) {
        if (!ec) asio::async_write(peer, asio::buffer(garbage), [](std::error_code, std::size_t) {});
    });
    asio::ssl::context ctx(asio::ssl::context::tls_client);
    asio::ssl::stream<asio::ip::tcp::socket> client(io, ctx);
    std::error_code handshake_error;
    client.lowest_layer().async_connect(acceptor.local_endpoint(), [&](std::error_code ec) {
        if (ec) {
            handshake_error = ec;
            work.reset();
            return;
        }
        client.async_handshake(asio::ssl::stream_base::client, [&](std::error_code hec) {
            handshake_error = hec;
            work.reset();
            io.stop();
        });
    });
    io.run();
    if (!handshake_error || handshake_error.category() != asio::error::get_ssl_category()) {
        std::cerr << "expected an SSL error, got: " << handshake_error.message() << '\n';
        return 1;
    }
    std::cout << "consumer_asio: TLS handshake refused garbage (" << handshake_error.message() << ")\n";
}
