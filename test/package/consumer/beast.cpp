// consumer_beast — heartwheel::beast in a Boost.Beast application: a WebSocket server whose
// connections are ws::ws_connection (RFC 6455 frames over a heartwheel connection, timed by
// the wheel), and a client in the same process written with Beast's own WebSocket client. The client
// sends a message and gets it back, answers the server's ping frames (Beast does), then falls silent:
// the server's reader-idle policy must say goodbye with a close frame 1001 "reader-idle". Beside it
// an HTTP/1.1 server on http::server (its request loop, which parks a quiet kept-alive connection)
// and Beast's own HTTP client: one request answered on a kept-alive connection, then the keep-alive
// timeout's silent close.
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

#include <heartwheel/asio_wheel.hpp>
#include <heartwheel/beast/http_server.hpp>
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

namespace bhttp = beast::http;

struct http_app {
    void operator()(heartwheel::http::http_connection<tcp::socket>& c, bhttp::request<bhttp::string_body>&& req) const {
        bhttp::response<bhttp::string_body> res(bhttp::status::ok, req.version());
        res.body() = "hi " + std::string(req.target());
        c.send(res);
    }
};
using http_server = heartwheel::http::server<tcp::socket, http_app>;

ba::awaitable<void> serve_http(tcp::acceptor& acceptor, http_server& server) {
    server.serve(co_await acceptor.async_accept(ba::use_awaitable));
}

ba::awaitable<void> http_client(tcp::endpoint server, std::string& answer, std::string& end) {
    beast::tcp_stream s(co_await ba::this_coro::executor);
    co_await s.async_connect(server, ba::use_awaitable);
    bhttp::request<bhttp::empty_body> req(bhttp::verb::get, "/there", 11);
    co_await bhttp::async_write(s, req, ba::use_awaitable);
    beast::flat_buffer in;
    bhttp::response<bhttp::string_body> res;
    co_await bhttp::async_read(s, in, res, ba::use_awaitable);
    answer = res.body() + (res.keep_alive() ? " (kept alive)" : " (closed)");
    bhttp::response<bhttp::string_body> none;
    auto [ec, n] = co_await bhttp::async_read(s, in, none, ba::as_tuple(ba::use_awaitable)); // silent from here on
    (void)n;
    end = ec.message();
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
    tcp::acceptor http_acceptor(io, {ba::ip::make_address("127.0.0.1"), 0});
    std::string answer, end;
    const net::connection_context http_ctx(wheel, {}, &counters); // HTTP has no pings: no heartbeat
    heartwheel::http::http_policy policy;
    policy.keepalive_timeout = 300ms;
    http_server server(http_ctx, policy, http_app{});
    ba::co_spawn(io, serve_http(http_acceptor, server), ba::detached);
    ba::co_spawn(io, http_client(http_acceptor.local_endpoint(), answer, end), ba::detached);
    io.run_for(5s);
    std::cout << "consumer_beast: http answer '" << answer << "', then '" << end << "'\n";
    const bool http_ok = answer == "hi /there (kept alive)" && end == bhttp::make_error_code(bhttp::error::end_of_stream).message();
    const auto closes = counters.snapshot().closes_text();
    std::cout << "consumer_beast: echoed '" << echoed << "', " << pings << " ping frames answered, goodbye '"
              << goodbye << "', closes " << closes << '\n';
    return http_ok && echoed == "welcome, hello" && pings >= 1 && goodbye == "1001 reader-idle" &&
                   closes == "reader-idle:1,keepalive-timeout:1"
               ? 0
               : 1;
}
