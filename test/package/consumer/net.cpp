// consumer_net — heartwheel::net: liveness policies loaded from TOML (toml++, found through the
// package config), both from text and out of the application's own larger document, then a
// heartbeat that pings on a real io_context, and a net::tls_socket (OpenSSL, through the package)
// whose handshake against a server that answers garbage fails with a TLS error.
#include <heartwheel/asio_wheel.hpp>
#include <heartwheel/net/heartbeat.hpp>
#include <heartwheel/net/liveness_toml.hpp>
#include <heartwheel/net/tls_socket.hpp>

#include <asio/io_context.hpp>
#include <asio/write.hpp>

#include <iostream>

int main() {
    namespace net = heartwheel::net;
    const auto from_text = net::parse_liveness_config("[heartbeat]\ninterval = \"5ms\"\ntimeout = \"20ms\"\n");
    const toml::table doc = toml::parse("[app]\nname = \"kv\"\n[idle]\nreader_idle = \"30s\"\n");
    const auto from_doc = net::parse_liveness_config(doc, "app.toml", {"app"});
    if (from_text.heartbeat.interval.count() != 5 || from_doc.idle.reader_idle.count() != 30000) return 1;

    asio::io_context io;
    heartwheel::asio_wheel wheel(io.get_executor());
    struct pinger final : net::heartbeat::listener {
        asio::io_context* io;
        int pings = 0;
        void send_ping() override {
            if (++pings == 3) io->stop();
        }
        void on_dead() override {}
    } listener;
    listener.io = &io;
    const int& pings = listener.pings;
    net::heartbeat hb(wheel, from_text.heartbeat, listener);
    io.run_for(std::chrono::seconds(5));
    if (pings < 3) return 1;

    io.restart();
    asio::ip::tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
    asio::ip::tcp::socket peer(io), mine(io);
    mine.connect(acceptor.local_endpoint());
    acceptor.accept(peer);
    static const char garbage[] = "this is not a TLS server hello\r\n\r\n";
    asio::write(peer, asio::buffer(garbage));
    asio::ssl::context ctx(asio::ssl::context::tls_client);
    net::tls_socket client(std::move(mine), ctx);
    std::error_code handshake_error;
    client.async_handshake(asio::ssl::stream_base::client, [&](std::error_code ec) { handshake_error = ec; });
    io.run_for(std::chrono::seconds(5));
    if (!handshake_error || handshake_error.category() != asio::error::get_ssl_category()) {
        std::cerr << "expected a TLS error from tls_socket, got: " << handshake_error.message() << '\n';
        return 1;
    }
    std::cout << "consumer_net: loaded TOML, sent " << pings << " pings, and tls_socket refused garbage ("
              << handshake_error.message() << ")\n";
}
