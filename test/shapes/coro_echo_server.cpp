// coro_echo_server.cpp — the echo protocol in the shape many users write, not the echo server's: a
// coroutine per connection reading with asio::async_read_until on connection::stream(), calling
// message_received() per data line (reads are not idle activity by themselves), over TCP or
// net::tls_socket. The e2e tests run it where the stock echo_server's callback shape could hide a
// bug (a process stall with many ready sockets), and as a Boost.Asio application: the same source
// builds for both Asio flavours (coro_echo_server_boost; support/test_asio.hpp is the seam).
// --io-threads N runs it in the thread-pool model: one io_context on N threads, a strand, a wheel
// and a context per shard, each connection's socket on its shard's strand.
//
//   coro_echo_server [--listen HOST:PORT] [--config FILE] [--tls CERT KEY] [--io-threads N]
//   prints "listening on HOST:PORT" first; on SIGTERM "final closes=reason:n,..." and exits 0.
//   Lines: "PONG x" answers our ping; any other line is echoed. Pings are "PING n"; the goodbye
//   is "BYE <reason>".
#include "test_asio.hpp"

#include <heartwheel/asio_ssl.hpp>
#include <heartwheel/asio_wheel.hpp>
#include <heartwheel/net/connection/connection.hpp>
#include <heartwheel/net/tls/tls_socket.hpp>
#include <heartwheel/net/config/liveness_config.hpp>
#include <heartwheel/net/config/liveness_toml.hpp>

#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace net = heartwheel::net;
using tcp = asio::ip::tcp;
constexpr auto use_tuple = tuple_awaitable;

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
    int io_threads = 0;
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
            } else if (a == "--io-threads" && i + 1 < argc) {
                io_threads = std::stoi(argv[++i]);
                if (io_threads < 1 || io_threads > 64) throw std::invalid_argument("--io-threads: accepted 1..64");
            } else if (a == "--tls" && i + 2 < argc) {
                cert = argv[++i];
                key = argv[++i];
            } else {
                throw std::invalid_argument("unknown argument '" + a +
                                            "': accepted --listen HOST:PORT, --config FILE, --tls CERT KEY, --io-threads N");
            }
        }
    } catch (const std::exception& e) {
        std::cerr << "coro_echo_server: " << e.what() << '\n';
        return 2;
    }
    // A shard per thread: its executor (the io_context's own, or a strand of the pool), its wheel and
    // its context. Member order: the wheel goes before the io_context (main's scope below).
    struct shard {
        shard(asio::any_io_executor e, const net::liveness_config& cfg, net::liveness_counters& counters)
            : ex(std::move(e)), wheel(ex), ctx(wheel, lines(cfg), &counters) {}
        static net::liveness_config lines(net::liveness_config cfg) {
            cfg.connection.activity = net::reader_activity::messages; // a message is a whole line: message_received()
            return cfg;
        }
        asio::any_io_executor ex;
        heartwheel::asio_wheel wheel;
        net::connection_context ctx;
    };
    asio::io_context io(io_threads > 0 ? io_threads : 1);
    net::liveness_counters counters;
    std::vector<std::unique_ptr<shard>> shards;
    for (int i = 0; i < std::max(io_threads, 1); ++i)
        shards.push_back(std::make_unique<shard>(
            io_threads > 0 ? asio::any_io_executor(asio::make_strand(io)) : asio::any_io_executor(io.get_executor()), cfg,
            counters));
    std::optional<asio::ssl::context> tls;
    if (!cert.empty()) {
        tls.emplace(asio::ssl::context::tls_server);
        tls->use_certificate_chain_file(cert);
        tls->use_private_key_file(key, asio::ssl::context::pem);
    }
    tcp::acceptor acceptor(shards[0]->ex, {asio::ip::make_address(host), static_cast<std::uint16_t>(std::stoi(port))});
    asio::signal_set signals(shards[0]->ex, SIGINT, SIGTERM); // before the first line: a supervisor may signal at once
    std::cout << "listening on " << acceptor.local_endpoint().address().to_string() << ':'
              << acceptor.local_endpoint().port() << std::endl;
    signals.async_wait([&](error_code, int) {
        acceptor.close();
        io.stop();
    });
    std::size_t next = 0;
    std::function<void()> accept = [&] {
        shard& home = *shards[next++ % shards.size()];
        // The socket is made on its shard's executor; the connection is made there too (its timers go
        // into that shard's wheel).
        acceptor.async_accept(home.ex, [&, h = &home](error_code ec, tcp::socket s) {
            if (ec) return;
            asio::post(h->ex, [&, h, s = std::move(s)]() mutable {
                if (tls) start(net::tls_socket(std::move(s), *tls), h->ctx);
                else start(std::move(s), h->ctx);
            });
            accept();
        });
    };
    accept();
    std::vector<std::thread> pool;
    for (int i = 1; i < io_threads; ++i) pool.emplace_back([&] { io.run(); });
    io.run();
    for (auto& t : pool) t.join();
    const auto snap = counters.snapshot();
    std::cout << "final closes=" << snap.closes_text() << " pings=" << snap.pings_sent
              << " pongs=" << snap.pongs_received << std::endl;
}
