// coro_echo_server.cpp — the echo protocol in the shape many users write, not the echo server's: a
// coroutine per connection reading with asio::async_read_until on connection::stream(), calling
// message_received() per data line (reads are not idle activity by themselves), over TCP or
// net::tls_socket. The e2e tests run it where the stock echo_server's callback shape could hide a
// bug (a process stall with many ready sockets).
//
//   coro_echo_server [--listen HOST:PORT] [--config FILE] [--tls CERT KEY]
//   prints "listening on HOST:PORT" first; on SIGTERM "final closes=reason:n,..." and exits 0.
//   Lines: "PONG x" answers our ping; any other line is echoed. Pings are "PING n"; the goodbye
//   is "BYE <reason>".
#include <heartwheel/asio_wheel.hpp>
#include <heartwheel/net/connection.hpp>
#include <heartwheel/net/liveness_config.hpp>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/experimental/as_tuple.hpp>
#include <asio/io_context.hpp>
#include <asio/read_until.hpp>
#include <asio/signal_set.hpp>
#include <asio/ssl/context.hpp>
#include <asio/use_awaitable.hpp>

#include <iostream>
#include <optional>
#include <string>

namespace net = heartwheel::net;
using tcp = asio::ip::tcp;
constexpr auto use_tuple = asio::experimental::as_tuple(asio::use_awaitable);

namespace {

template <class Stream>
asio::awaitable<void> serve(std::shared_ptr<net::connection<Stream>> c) {
    if constexpr (net::connection<Stream>::is_tls) {
        auto [ec] = co_await c->async_handshake(asio::ssl::stream_base::server, use_tuple);
        if (ec) co_return; // closed and counted by the connection
    }
    std::string in;
    for (;;) {
        auto [ec, n] = co_await asio::async_read_until(c->stream(), asio::dynamic_buffer(in, 65536), '\n', use_tuple);
        if (ec) {
            c->read_failed(ec);
            co_return;
        }
        const std::string_view line(in.data(), n);
        if (line.rfind("PONG ", 0) == 0) {
            c->pong_received();
        } else {
            c->message_received();
            c->send(line);
        }
        in.erase(0, n);
    }
}

template <class Stream>
void start(Stream stream, const net::connection_context& ctx) {
    auto c = std::make_shared<net::connection<Stream>>(std::move(stream), ctx);
    net::connection_hooks hooks;
    hooks.send_ping = [raw = c.get(), n = std::uint64_t{0}]() mutable { raw->send("PING " + std::to_string(++n) + "\n"); };
    hooks.last_words = [raw = c.get()](net::close_reason r) { raw->send(std::string("BYE ") + net::to_string(r) + "\n"); };
    c->set_hooks(std::move(hooks));
    const auto ex = c->get_executor(); // before serve(std::move(c)): argument order is unspecified
    asio::co_spawn(ex, serve(std::move(c)), asio::detached);
}

} // namespace

int main(int argc, char** argv) {
    // No SIGPIPE setup, as in an application that never heard of it: neither Asio's sockets nor
    // tls_socket write in a way that raises it (both send with MSG_NOSIGNAL).
    std::string host = "127.0.0.1", port = "0", cert, key;
    net::liveness_config cfg;
    try {
        for (int i = 1; i < argc; ++i) {
            const std::string a = argv[i];
            if (a == "--listen" && i + 1 < argc) {
                const std::string v = argv[++i];
                host = v.substr(0, v.rfind(':'));
                port = v.substr(v.rfind(':') + 1);
            } else if (a == "--config" && i + 1 < argc) {
                cfg = net::load_liveness_config(argv[++i]);
            } else if (a == "--tls" && i + 2 < argc) {
                cert = argv[++i];
                key = argv[++i];
            } else {
                throw std::invalid_argument("unknown argument '" + a +
                                            "': accepted --listen HOST:PORT, --config FILE, --tls CERT KEY");
            }
        }
    } catch (const std::exception& e) {
        std::cerr << "coro_echo_server: " << e.what() << '\n';
        return 2;
    }
    asio::io_context io(1);
    heartwheel::asio_wheel wheel(io.get_executor());
    net::liveness_counters counters;
    net::connection_options opts;
    opts.reads_are_idle_activity = false; // a message is a whole line: message_received()
    const net::connection_context ctx(wheel, cfg, &counters, nullptr, opts);
    std::optional<asio::ssl::context> tls;
    if (!cert.empty()) {
        tls.emplace(asio::ssl::context::tls_server);
        tls->use_certificate_chain_file(cert);
        tls->use_private_key_file(key, asio::ssl::context::pem);
    }
    tcp::acceptor acceptor(io, {asio::ip::make_address(host), static_cast<std::uint16_t>(std::stoi(port))});
    std::cout << "listening on " << acceptor.local_endpoint().address().to_string() << ':'
              << acceptor.local_endpoint().port() << std::endl;
    asio::signal_set signals(io, SIGINT, SIGTERM);
    signals.async_wait([&](std::error_code, int) {
        acceptor.close();
        io.stop();
    });
    std::function<void()> accept = [&] {
        acceptor.async_accept([&](std::error_code ec, tcp::socket s) {
            if (ec) return;
            if (tls) start(net::tls_socket(std::move(s), *tls), ctx);
            else start(std::move(s), ctx);
            accept();
        });
    };
    accept();
    io.run();
    const auto snap = counters.snapshot();
    std::cout << "final closes=" << snap.closes_text() << " pings=" << snap.pings_sent
              << " pongs=" << snap.pongs_received << std::endl;
}
