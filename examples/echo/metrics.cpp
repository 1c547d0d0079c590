// metrics.cpp — accept, read one request head, answer, close.
#include "metrics.hpp"

#include <asio/read_until.hpp>
#include <asio/write.hpp>

#include <memory>

namespace echo {
namespace {

struct scrape : std::enable_shared_from_this<scrape> {
    scrape(worker& w, asio::ip::tcp::socket s, std::function<std::string()> b)
        : w(w), socket(std::move(s)), body(std::move(b)) {}
    worker& w;
    asio::ip::tcp::socket socket;
    std::function<std::string()> body;
    std::string request, response;
    heartwheel::timer_handle deadline;

    void start() {
        deadline = w.wheel.schedule_after(std::chrono::seconds(5), [weak = weak_from_this()] {
            if (auto self = weak.lock()) self->socket.close();
        });
        asio::async_read_until(socket, asio::dynamic_buffer(request, 8192), "\r\n\r\n",
                               [self = shared_from_this()](std::error_code ec, std::size_t) { self->answer(ec); });
    }

    void answer(std::error_code ec) {
        if (ec) return;
        const bool ok = request.rfind("GET /metrics ", 0) == 0 || request.rfind("GET /metrics?", 0) == 0;
        const std::string text = ok ? body() : "not found\n";
        response = std::string(ok ? "HTTP/1.0 200 OK\r\n" : "HTTP/1.0 404 Not Found\r\n") +
                   "Content-Type: text/plain; version=0.0.4\r\nContent-Length: " + std::to_string(text.size()) +
                   "\r\nConnection: close\r\n\r\n" + text;
        asio::async_write(socket, asio::buffer(response), [self = shared_from_this()](std::error_code, std::size_t) {
            std::error_code ignored;
            self->socket.shutdown(asio::socket_base::shutdown_both, ignored);
            self->deadline.cancel();
        });
    }
};

} // namespace

void serve_metrics(worker& w, asio::ip::tcp::acceptor& acceptor, std::function<std::string()> body) {
    acceptor.async_accept([&w, &acceptor, body](std::error_code ec, asio::ip::tcp::socket s) {
        if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
        if (!ec) std::make_shared<scrape>(w, std::move(s), body)->start();
        serve_metrics(w, acceptor, body);
    });
}

} // namespace echo
