// consumer_net — heartwheel::net over TCP, built and run with OpenSSL and toml++ unavailable (and
// OpenSSL's headers poisoned: run_consumer.cmake puts an include directory first whose openssl/*.h
// fail to compile). Two shards on a thread pool (net::shards); a net::connection on a standalone-Asio
// tcp::socket, made on its shard's strand, echoes a line through its write queue, then closes the peer
// that fell silent as reader-idle, saying BYE first; the peer sees both, and the close is counted once.
#include <heartwheel/net/connection/connection.hpp>
#include <heartwheel/net/server/shards.hpp>

#include <asio/io_context.hpp>
#include <asio/read_until.hpp>
#include <asio/write.hpp>

#include <array>
#include <chrono>
#include <functional>
#include <iostream>
#include <memory>
#include <thread>
#include <string>

namespace net = heartwheel::net;
using tcp = asio::ip::tcp;

namespace {

// The server's read loop: echoes each line.
void serve(const std::shared_ptr<net::connection<tcp::socket>>& c, const std::shared_ptr<std::string>& buf) {
    asio::async_read_until(c->stream(), asio::dynamic_buffer(*buf), '\n', [c, buf](std::error_code ec, std::size_t n) {
        if (ec) return c->read_failed(ec);
        c->send(buf->substr(0, n));
        buf->erase(0, n);
        serve(c, buf);
    });
}

} // namespace

int main() {
    using namespace std::chrono_literals;
    net::liveness_config cfg;
    cfg.idle.reader_idle = 60ms;
    net::liveness_counters counters;
    net::shards group(2, net::threading::thread_pool, cfg, &counters);

    tcp::acceptor acceptor(group[0].get_executor(), {asio::ip::make_address("127.0.0.1"), 0});
    net::shard& home = group.next();
    acceptor.async_accept(home.get_executor(), [&](std::error_code ec, tcp::socket accepted) {
        if (ec) return;
        asio::post(home.get_executor(), [&, s = std::move(accepted)]() mutable { // made on its shard's strand
            auto c = std::make_shared<net::connection<tcp::socket>>(std::move(s), home.context());
            net::connection_hooks hooks;
            hooks.last_words = [raw = c.get()](net::close_reason r) { raw->send(std::string("BYE ") + net::to_string(r) + "\n"); };
            c->set_hooks(std::move(hooks));
            serve(c, std::make_shared<std::string>());
        });
    });
    std::thread server([&] { group.run(); });

    asio::io_context io;
    tcp::socket peer(io);
    peer.connect(acceptor.local_endpoint());
    asio::write(peer, asio::buffer(std::string("hello\n")));
    std::string heard;
    auto chunk = std::make_shared<std::array<char, 256>>();
    std::function<void()> read_more;
    read_more = [&] {
        peer.async_read_some(asio::buffer(*chunk), [&](std::error_code ec, std::size_t n) {
            heard.append(chunk->data(), n);
            if (!ec) read_more();
        });
    };
    read_more();
    io.run_for(5s);
    group.stop();
    server.join();

    if (heard != "hello\nBYE reader-idle\n" || counters.snapshot().closes_total() != 1) {
        std::cerr << "consumer_net: the peer heard '" << heard << "', closes " << counters.snapshot().closes_total()
                  << '\n';
        return 1;
    }
    std::cout << "consumer_net: a TCP connection on a pool shard's strand echoed a line and closed its silent "
                 "peer as reader-idle (no OpenSSL)\n";
}
