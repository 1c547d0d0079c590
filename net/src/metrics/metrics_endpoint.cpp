// metrics_endpoint.cpp — accept, read one request head, answer, close (metrics_endpoint.hpp says
// what is bounded and why). The scrapes in progress are listed oldest first, so that a full house
// evicts the oldest one still waiting for its head; a scrape lives as long as its operations.
#include <heartwheel/net/metrics/metrics_endpoint.hpp>

#include <heartwheel/net/server/listen.hpp>
#include <heartwheel/net/policies/policies.hpp>

#if defined(HEARTWHEEL_BOOST_ASIO)
#include <boost/asio/read_until.hpp>
#include <boost/asio/write.hpp>
#else
#include <asio/read_until.hpp>
#include <asio/write.hpp>
#endif

#include <fcntl.h>
#include <unistd.h>

#include <list>
#include <memory>
#include <string_view>
#include <utility>

namespace heartwheel::net {
namespace {

constexpr std::size_t max_scrapes = 8;

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

struct scrape;
/// The scrapes in progress, oldest first (weak: a scrape lives as long as its operations).
using scrape_list = std::list<std::weak_ptr<scrape>>;

struct scrape : std::enable_shared_from_this<scrape> {
    scrape(asio_wheel& w, asio::ip::tcp::socket s, std::function<std::string()> b, std::shared_ptr<scrape_list> list,
           std::function<void()> gone)
        : w(w), socket(std::move(s)), body(std::move(b)), list(std::move(list)), gone(std::move(gone)) {}
    ~scrape() {
        list->erase(place);
        if (gone) gone();
    }
    asio_wheel& w;
    asio::ip::tcp::socket socket;
    std::function<std::string()> body;
    std::shared_ptr<scrape_list> list; ///< shared: a scrape may outlive its acceptor's state (a stopped io_context)
    scrape_list::iterator place;
    std::function<void()> gone; ///< the acceptor takes its spare descriptor back
    std::string request, response;
    timer_handle deadline;
    bool answering = false;

    void start() {
        place = list->insert(list->end(), weak_from_this());
        // The head must come within a second (a slowloris sends it a byte at a time), the whole
        // exchange within five.
        deadline = w.schedule_after(std::chrono::seconds(1), [weak = weak_from_this()] {
            if (auto self = weak.lock(); self && !self->answering) self->socket.close();
        });
        asio::async_read_until(socket, asio::dynamic_buffer(request, 8192),
                               head_end{},
                               [self = shared_from_this()](error_code ec, std::size_t) { self->answer(ec); });
    }

    void answer(error_code ec) {
        if (ec) return;
        answering = true;
        deadline = w.schedule_after(std::chrono::seconds(4), [weak = weak_from_this()] {
            if (auto self = weak.lock()) self->socket.close();
        });
        const bool ok = request.rfind("GET /metrics ", 0) == 0 || request.rfind("GET /metrics?", 0) == 0 ||
                        request.rfind("GET /metrics\r", 0) == 0 || request.rfind("GET /metrics\n", 0) == 0;
        const std::string text = ok ? body() : "not found\n";
        response = std::string(ok ? "HTTP/1.0 200 OK\r\n" : "HTTP/1.0 404 Not Found\r\n") +
                   "Content-Type: text/plain; version=0.0.4\r\nContent-Length: " + std::to_string(text.size()) +
                   "\r\nConnection: close\r\n\r\n" + text;
        asio::async_write(socket, asio::buffer(response), [self = shared_from_this()](error_code, std::size_t) {
            error_code ignored;
            self->socket.shutdown(asio::socket_base::shutdown_both, ignored);
            self->deadline.cancel();
        });
    }
};

struct scrape_acceptor : std::enable_shared_from_this<scrape_acceptor> {
    scrape_acceptor(asio_wheel& w, asio::ip::tcp::acceptor& a, std::function<std::string()> b)
        : w(w), acceptor(a), body(std::move(b)), spare(::open("/dev/null", O_RDONLY | O_CLOEXEC)) {}
    ~scrape_acceptor() {
        if (spare >= 0) ::close(spare);
    }
    asio_wheel& w;
    asio::ip::tcp::acceptor& acceptor;
    std::function<std::string()> body;
    std::shared_ptr<scrape_list> scrapes = std::make_shared<scrape_list>();
    timer_handle pause;
    int spare; ///< a descriptor kept for one scrape at the descriptor limit

    void accept() {
        acceptor.async_accept([self = shared_from_this()](error_code ec, asio::ip::tcp::socket s) {
            if (ec == asio::error::operation_aborted || !self->acceptor.is_open()) return;
            if (ec) {
                // Out of descriptors: give up the spare for the scrape waiting in the backlog (it gets
                // it back when that scrape ends); without one, try again shortly, do not spin.
                if (self->spare >= 0 && (ec == asio::error::no_descriptors || ec.value() == ENFILE)) {
                    ::close(std::exchange(self->spare, -1));
                    return self->accept();
                }
                self->pause = self->w.schedule_after(std::chrono::milliseconds(100), [self] {
                    const auto keep = self; // the handle (and this lambda) go now: no cycle left behind
                    keep->pause = {};
                    keep->accept();
                });
                return;
            }
            self->serve(std::move(s));
            self->accept();
        });
    }

    void serve(asio::ip::tcp::socket s) {
        if (scrapes->size() >= max_scrapes) { // full: the oldest still waiting for its head makes room
            for (auto& weak : *scrapes)
                if (auto old = weak.lock(); old && !old->answering && old->socket.is_open()) {
                    error_code ignored;
                    old->socket.close(ignored);
                    break;
                }
            if (scrapes->size() >= max_scrapes + 8) return; // all answering (or closing): `s` closes here
        }
        std::function<void()> gone;
        if (spare < 0) // this scrape may hold the spare's number: take it back when it ends
            gone = [weak = weak_from_this()] {
                if (auto l = weak.lock(); l && l->spare < 0) l->spare = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
            };
        std::make_shared<scrape>(w, std::move(s), body, scrapes, std::move(gone))->start();
    }
};

} // namespace

void serve_metrics(asio::ip::tcp::acceptor& acceptor, asio_wheel& wheel, std::function<std::string()> body) {
    std::make_shared<scrape_acceptor>(wheel, acceptor, std::move(body))->accept();
}

} // namespace heartwheel::net
