// http_test — heartwheel/beast/http.hpp with an application shape the example server does not have: one
// that reads ahead (a pipelining client's requests handed on before any is answered). Its reads stop at
// http_policy::max_pipelined unanswered requests and resume as send() answers them — what a client
// sends ahead is bounded by the policy, not by the application's patience — and the answers still go
// out in order. A read waiting there completes with the close's error when the connection closes.
#include <heartwheel/asio_wheel.hpp>
#include <heartwheel/beast/http.hpp>

#define BOOST_TEST_MODULE http
#include <boost/test/unit_test.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace asio = boost::asio;
namespace net = heartwheel::net;
namespace http = heartwheel::http;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
using request = bhttp::request<bhttp::string_body>;

namespace {

struct fixture {
    asio::io_context io;
    heartwheel::asio_wheel wheel{io.get_executor()};
    net::liveness_counters counters;
    net::connection_context ctx{wheel, net::liveness_config{}, &counters};
    tcp::acceptor acceptor{io, {asio::ip::make_address("127.0.0.1"), 0}};
    tcp::socket client{io};
    std::shared_ptr<http::http_connection<tcp::socket>> server;
    std::vector<std::string> read;  // targets, in the order the application read them
    std::string read_error;         // how the read loop ended

    explicit fixture(std::uint32_t max_pipelined) {
        http::http_policy p;
        p.max_pipelined = max_pipelined;
        acceptor.async_accept([this, p](boost::system::error_code ec, tcp::socket s) {
            BOOST_REQUIRE(!ec);
            server = http::http_connection<tcp::socket>::create(std::move(s), ctx, nullptr, p);
            asio::co_spawn(io, read_ahead(server), asio::detached);
        });
        client.connect(acceptor.local_endpoint());
    }
    // The application: reads every request it can, answers none by itself.
    asio::awaitable<void> read_ahead(std::shared_ptr<http::http_connection<tcp::socket>> h) {
        for (;;) {
            request req;
            auto [ec] = co_await h->async_read_request(req, use_tuple);
            if (ec) {
                read_error = ec.message();
                co_return;
            }
            read.push_back(std::string(req.target()));
        }
    }
    void answer(std::size_t n) {
        for (std::size_t i = 0; i < n; ++i) {
            bhttp::response<bhttp::string_body> res(bhttp::status::ok, 11);
            res.body() = "answer\n";
            server->send(res);
        }
    }
    void pipeline(int n) {
        std::string out;
        for (int i = 0; i < n; ++i) out += "GET /" + std::to_string(i) + " HTTP/1.1\r\nHost: t\r\n\r\n";
        asio::write(client, asio::buffer(out));
    }
};

} // namespace

BOOST_AUTO_TEST_CASE(an_application_reading_ahead_stops_at_max_pipelined_and_resumes_as_it_answers) {
    fixture f(4);
    f.pipeline(10);
    f.io.run_for(300ms);
    BOOST_TEST(f.read.size() == 4u); // the fifth read waits for an answer
    f.answer(2);
    f.io.run_for(200ms);
    BOOST_TEST(f.read.size() == 6u);
    f.answer(4);
    f.io.run_for(200ms);
    BOOST_TEST(f.read.size() == 10u);
    f.answer(4);
    f.io.run_for(200ms);

    boost::beast::flat_buffer buf;
    for (int i = 0; i < 10; ++i) { // every answer, in order, kept alive
        bhttp::response<bhttp::string_body> res;
        bhttp::read(f.client, buf, res);
        BOOST_TEST(res.result() == bhttp::status::ok);
        BOOST_TEST(res.keep_alive());
    }
    for (int i = 0; i < 10; ++i) BOOST_TEST(f.read[static_cast<std::size_t>(i)] == "/" + std::to_string(i));
    BOOST_TEST(f.counters.snapshot().closes_total() == 0u);
}

BOOST_AUTO_TEST_CASE(a_read_waiting_for_answers_ends_with_the_close) {
    fixture f(2);
    f.pipeline(3);
    f.io.run_for(300ms);
    BOOST_TEST(f.read.size() == 2u);
    BOOST_TEST(f.read_error.empty()); // waiting
    f.server->close(net::close_reason::shutdown);
    f.io.run_for(300ms);
    BOOST_TEST(!f.read_error.empty()); // the waiting read completed with the close's error
    BOOST_TEST(f.counters.snapshot().closes_total() == 1u);
}

BOOST_AUTO_TEST_CASE(max_pipelined_is_validated) {
    http::http_policy p;
    p.max_pipelined = 0;
    BOOST_CHECK_THROW(p.validate(), net::config_error);
    p.max_pipelined = 1025;
    BOOST_CHECK_THROW(p.validate(), net::config_error);
}
