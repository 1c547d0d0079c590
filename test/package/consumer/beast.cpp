// consumer_beast — heartwheel::beast in a Boost.Beast application: a WebSocket server whose
// connections are ws::ws_connection (Beast's websocket::stream over a heartwheel connection, timed by
// the wheel), and a client in the same process written with Beast's own WebSocket client. The client
// sends a message and gets it back, answers the server's ping frames (Beast does), then falls silent:
// the server's reader-idle policy must say goodbye with a close frame 1001 "reader-idle".
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>

#include <heartwheel/asio_wheel.hpp>
#include <heartwheel/beast/websocket.hpp>

#include <iostream>
#include <memory>
#include <string>

namespace ba = boost::asio;
namespace beast = boost::beast;
namespace net = heartwheel::net;
namespace ws = heartwheel::ws;
using namespace std::chrono_literals;
using tcp = ba::ip::tcp;

namespace {

ba::awaitable<void> serve(tcp::acceptor& acceptor, const net::connection_context& ctx) {
    auto c = ws::ws_connection<tcp::socket>::create(co_await acceptor.async_accept(ba::use_awaitable), ctx);
    c->send("welcome"); // before the upgrade: it goes once the upgrade is done
    if (auto [ec] = co_await c->async_accept(ba::as_tuple(ba::use_awaitable)); ec) co_return;
    beast::flat_buffer in;
    for (;;) {
        auto [ec, n] = co_await c->async_read(in, ba::as_tuple(ba::use_awaitable));
        if (ec) co_return; // closed with its reason by the connection
        c->send(beast::buffers_to_string(in.data()));
        in.consume(n);
    }
}

ba::awaitable<void> client(tcp::endpoint server, std::string& echoed, std::string& goodbye, int& pings) {
    beast::websocket::stream<tcp::socket> s(co_await ba::this_coro::executor);
    co_await s.next_layer().async_connect(server, ba::use_awaitable);
    co_await s.async_handshake("127.0.0.1", "/", ba::use_awaitable);
    s.control_callback([&pings](beast::websocket::frame_type kind, beast::string_view) {
        if (kind == beast::websocket::frame_type::ping) ++pings;
    });
    beast::flat_buffer in;
    co_await s.async_read(in, ba::use_awaitable);
    echoed = beast::buffers_to_string(in.data()) + ", ";
    in.consume(in.size());
    co_await s.async_write(ba::buffer(std::string("hello")), ba::use_awaitable);
    co_await s.async_read(in, ba::use_awaitable);
    echoed += beast::buffers_to_string(in.data());
    in.consume(in.size());
    auto [ec, n] = co_await s.async_read(in, ba::as_tuple(ba::use_awaitable)); // silent from here on
    (void)n;
    if (ec == beast::websocket::error::closed)
        goodbye = std::to_string(s.reason().code) + " " + std::string(s.reason().reason.c_str());
    else
        goodbye = "no close frame: " + ec.message();
}

} // namespace

int main() {
    ba::io_context io;
    heartwheel::asio_wheel wheel(io.get_executor());
    net::liveness_config cfg;
    cfg.idle.reader_idle = 400ms;
    cfg.heartbeat.interval = 100ms;
    cfg.heartbeat.timeout = 100ms;
    net::liveness_counters counters;
    const net::connection_context ctx(wheel, cfg, &counters);
    tcp::acceptor acceptor(io, {ba::ip::make_address("127.0.0.1"), 0});
    std::string echoed, goodbye;
    int pings = 0;
    ba::co_spawn(io, serve(acceptor, ctx), ba::detached);
    ba::co_spawn(io, client(acceptor.local_endpoint(), echoed, goodbye, pings), ba::detached);
    io.run_for(5s);
    const auto closes = counters.snapshot().closes_text();
    std::cout << "consumer_beast: echoed '" << echoed << "', " << pings << " ping frames answered, goodbye '"
              << goodbye << "', closes " << closes << '\n';
    return echoed == "welcome, hello" && pings >= 1 && goodbye == "1001 reader-idle" && closes == "reader-idle:1" ? 0 : 1;
}
