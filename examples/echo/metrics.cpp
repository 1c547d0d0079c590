// metrics.cpp — accept, read one request head, answer, close. Bounded: at most `max_scrapes`
// connections at once (more are closed at once), a head of at most 8 KiB, 5 s per connection; header
// lines may end in "\r\n" or a bare "\n"; at the descriptor limit accepting pauses instead of spinning.
#include "metrics.hpp"

#include <asio/read_until.hpp>
#include <asio/write.hpp>

#include <memory>

namespace echo {
namespace {

constexpr int max_scrapes = 8;

// The end of a request head: an empty line, whatever the line endings (an Asio match condition).
struct head_end {
    using iterator = asio::buffers_iterator<asio::const_buffers_1>;
    using result_type = std::pair<iterator, bool>;
    result_type operator()(iterator begin, iterator end) const {
        for (auto i = begin; i != end; ++i) {
            if (*i != '\n') continue;
            auto j = i + 1;
            if (j != end && *j == '\r') ++j;
            if (j != end && *j == '\n') return {j + 1, true};
        }
        return {end, false};
    }
};

struct scrape : std::enable_shared_from_this<scrape> {
    scrape(worker& w, asio::ip::tcp::socket s, std::function<std::string()> b, int& active)
        : w(w), socket(std::move(s)), body(std::move(b)), active(active) {
        ++active;
    }
    ~scrape() { --active; }
    worker& w;
    asio::ip::tcp::socket socket;
    std::function<std::string()> body;
    int& active;
    std::string request, response;
    heartwheel::timer_handle deadline;

    void start() {
        deadline = w.wheel.schedule_after(std::chrono::seconds(5), [weak = weak_from_this()] {
            if (auto self = weak.lock()) self->socket.close();
        });
        asio::async_read_until(socket, asio::dynamic_buffer(request, 8192),
                               head_end{},
                               [self = shared_from_this()](std::error_code ec, std::size_t) { self->answer(ec); });
    }

    void answer(std::error_code ec) {
        if (ec) return;
        const bool ok = request.rfind("GET /metrics ", 0) == 0 || request.rfind("GET /metrics?", 0) == 0 ||
                        request.rfind("GET /metrics\r", 0) == 0 || request.rfind("GET /metrics\n", 0) == 0;
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

struct listener {
    worker& w;
    asio::ip::tcp::acceptor& acceptor;
    std::function<std::string()> body;
    int active = 0;
    heartwheel::timer_handle pause;

    void accept(const std::shared_ptr<listener>& self) {
        acceptor.async_accept([this, self](std::error_code ec, asio::ip::tcp::socket s) {
            if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
            if (ec) { // out of descriptors or memory: try again shortly, do not spin
                pause = w.wheel.schedule_after(std::chrono::milliseconds(100), [this, self] { accept(self); });
                return;
            }
            if (active < max_scrapes) std::make_shared<scrape>(w, std::move(s), body, active)->start();
            accept(self); // a connection over the bound is closed as `s` goes out of scope
        });
    }
};

} // namespace

void serve_metrics(worker& w, asio::ip::tcp::acceptor& acceptor, std::function<std::string()> body) {
    auto l = std::make_shared<listener>(listener{w, acceptor, std::move(body), 0, {}});
    l->accept(l);
}

} // namespace echo
