// http_test — heartwheel/beast/http.hpp with an application shape the example server does not have: one
// that reads ahead (a pipelining client's requests handed on before any is answered). Its reads stop at
// http_policy::max_pipelined unanswered requests and resume as send() answers them — what a client
// sends ahead is bounded by the policy, not by the application's patience — and the answers still go
// out in order. A read waiting there completes with the close's error when the connection closes.
// An idle kept-alive connection's wait for its next request is one small block (the read's state: the
// application's handler), its socket's wait placed in the stream's own memory; counted by this
// program's operator new.
// And the framing layers' tables in one configuration with the connection's: [http] and [websocket]
// loaded from the same TOML document, validated with the rest, set from flags by their descriptions,
// and the docs' table of their knobs.
#include <heartwheel/asio_wheel.hpp>
#include <heartwheel/beast/http.hpp>
#include <heartwheel/beast/websocket.hpp>
#include <heartwheel/net/config/liveness_toml.hpp>
#include <heartwheel/testing/manual_scheduler.hpp>

#define BOOST_TEST_MODULE http
#include <boost/test/unit_test.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http.hpp>

#include "heap_count.hpp"
#include "run_until.hpp"

#include <chrono>
#include <fstream>
#include <cstdlib>
#include <memory>
#include <new>
#include <optional>
#include <sstream>
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
            auto [ec, req] = co_await h->async_read_request(use_tuple);
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

// The example server's shape (a socket typed with its io_context's executor, a callback as the
// application): once the first request is answered, the read that waits for the next allocates one
// block, the read's state, and no more — its socket's wait is in the stream's core. (Through
// async_compose the wait itself was a block of ~330 bytes: two work guards of the executor and the
// handler, held for as long as the connection idles.)
BOOST_AUTO_TEST_CASE(an_idle_kept_alive_connection_waits_in_one_small_block) {
    using socket = asio::basic_stream_socket<tcp, asio::io_context::executor_type>;
    using connection = http::http_connection<socket>;
    asio::io_context io;
    heartwheel::asio_wheel wheel{io.get_executor()};
    net::connection_context ctx{wheel, net::liveness_config{}};
    tcp::acceptor acceptor{io, {asio::ip::make_address("127.0.0.1"), 0}};
    tcp::socket client{io};
    std::shared_ptr<connection> server;
    std::optional<std::size_t> idle_allocations, idle_bytes;
    std::string second;
    acceptor.async_accept(io.get_executor(), [&](boost::system::error_code ec, socket s) {
        BOOST_REQUIRE(!ec);
        server = connection::create(std::move(s), ctx);
        server->async_read_request([&](boost::system::error_code ec, request req) {
            BOOST_REQUIRE(!ec);
            bhttp::response<bhttp::string_body> res(bhttp::status::ok, req.version());
            res.body() = "first\n";
            server->send(res);
            // The thread's cache of eager blocks primed (a busy server's is): the eager read takes one.
            http::detail::eager_blocks::give(http::detail::eager_blocks::take(http::detail::eager_bytes));
            const auto use = hwtest::measure_heap([&] {
                server->async_read_request([&](boost::system::error_code ec, request req) {
                    if (!ec) second = std::string(req.target());
                });
            });
            idle_allocations = use.allocations;
            idle_bytes = use.bytes;
        });
    });
    client.connect(acceptor.local_endpoint());
    asio::write(client, asio::buffer(std::string("GET /1 HTTP/1.1\r\nHost: t\r\n\r\n")));
    io.run_for(200ms); // past the eager read's grace: the wait goes on holding nothing more
    BOOST_REQUIRE(idle_allocations.has_value());
    BOOST_TEST(*idle_allocations == 1u); // the eager read's block came from the thread's cache
    BOOST_TEST(*idle_bytes <= 96u);
    BOOST_TEST(http::detail::eager_held == 0); // given back after the grace
    // and the wait is a real one: the next request is read
    asio::write(client, asio::buffer(std::string("GET /2 HTTP/1.1\r\nHost: t\r\n\r\n")));
    io.run_for(200ms);
    BOOST_TEST(second == "/2");
}

// A request is parsed where its read left it: whole in one read, begun at the end of another's read
// (the rest of it arrives later), its body's chunk framing cut mid-line. Each is read whole, in order.
BOOST_AUTO_TEST_CASE(requests_cut_anywhere_across_reads_are_read_whole_and_in_order) {
    fixture f(16);
    f.io.run_for(100ms);
    const std::string a = "GET /a HTTP/1.1\r\nHost: t\r\n\r\n";
    const std::string b = "POST /b HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n";
    const std::string c = "POST /c HTTP/1.1\r\nHost: t\r\nContent-Length: 6\r\n\r\nabcdef";
    const std::string all = a + b + c;
    // a and the first part of b's head; then b up to inside its chunk-size line; then the rest.
    const std::size_t cut1 = a.size() + 10, cut2 = a.size() + b.find("5\r\n") + 1;
    for (const auto& part : {all.substr(0, cut1), all.substr(cut1, cut2 - cut1), all.substr(cut2)}) {
        asio::write(f.client, asio::buffer(part));
        f.io.run_for(100ms);
    }
    BOOST_TEST(f.read == (std::vector<std::string>{"/a", "/b", "/c"}), boost::test_tools::per_element());
    BOOST_TEST(f.read_error.empty());
    BOOST_TEST(f.counters.snapshot().closes_total() == 0u);
}

namespace {
// A server on real sockets whose wheel's clock moves only when the test says (the eager read's grace
// and the keep-alive time, without sleeping): answers every request with `answer_bytes` of body.
struct manual_fixture {
    asio::io_context io;
    heartwheel::testing::manual_scheduler clock;
    net::liveness_counters counters;
    net::connection_context ctx{clock, net::liveness_config{}, &counters};
    tcp::acceptor acceptor{io, {asio::ip::make_address("127.0.0.1"), 0}};
    tcp::socket client{io};
    std::shared_ptr<http::http_connection<tcp::socket>> server;
    std::vector<std::string> read; // target and body size of each request
    std::size_t answer_bytes = 6;

    explicit manual_fixture(std::chrono::milliseconds keepalive, int client_rcvbuf = 0) {
        http::http_policy p;
        p.keepalive_timeout = keepalive;
        acceptor.async_accept([this, p](boost::system::error_code ec, tcp::socket s) {
            BOOST_REQUIRE(!ec);
            server = http::http_connection<tcp::socket>::create(std::move(s), ctx, nullptr, p);
            serve(server);
        });
        if (client_rcvbuf > 0) {
            client.open(tcp::v4());
            client.set_option(asio::socket_base::receive_buffer_size(client_rcvbuf));
        }
        client.connect(acceptor.local_endpoint());
    }
    void serve(std::shared_ptr<http::http_connection<tcp::socket>> h) {
        auto& conn = *h;
        conn.async_read_request([this, h](boost::system::error_code ec, request req) {
            if (ec) return;
            read.push_back(std::string(req.target()) + ":" + std::to_string(req.body().size()));
            bhttp::response<bhttp::string_body> res(bhttp::status::ok, req.version());
            res.body().assign(answer_bytes, 'x');
            h->send(res);
            serve(h);
        });
    }
    std::size_t closes(net::close_reason r) const { return counters.snapshot().closes[static_cast<std::size_t>(r)]; }
    void io_turns() { io.run_for(50ms); } // the sockets' I/O, the clock standing still
    // The client reads an answer, the server running meanwhile (bounded: a server that never answers
    // fails the test, it does not hang it).
    void answered() {
        boost::beast::flat_buffer buf;
        bhttp::response<bhttp::string_body> res;
        std::optional<boost::system::error_code> done;
        bhttp::async_read(client, buf, res, [&](boost::system::error_code ec, std::size_t) { done = ec; });
        hwtest::run_until(io, [&] { return done.has_value(); });
        BOOST_TEST(!*done);
        BOOST_TEST(res.body().size() == answer_bytes);
    }
    void get(const std::string& target) {
        asio::write(client, asio::buffer("GET " + target + " HTTP/1.1\r\nHost: t\r\n\r\n"));
    }
    // A request sent, answered and read, and the server's turns after the answer (the clock still).
    void round_trip(const std::string& target) {
        get(target);
        io_turns();
        answered();
        io_turns();
    }
    // The client sees the server's end: a silent close (FIN, no response), within 5 s.
    void sees_silent_close() {
        char c;
        std::optional<boost::system::error_code> done;
        client.async_read_some(asio::buffer(&c, 1), [&](boost::system::error_code ec, std::size_t) { done = ec; });
        hwtest::run_until(io, [&] { return done.has_value(); });
        BOOST_TEST(*done == asio::error::eof);
    }
};
} // namespace

// Right after its answer a kept-alive TCP connection reads its next request eagerly (no readiness
// wait, no epoll_ctl): a busy client's next request — here one larger than the eager block, its rest
// read on by the parser's buffer — is read whole within the grace. A client quiet past the grace is
// waited for holding nothing, and closed keepalive-timeout at its keep-alive time (the grace counted
// in it, however late its end was seen: within a tick of it), never before.
BOOST_AUTO_TEST_CASE(a_kept_alive_connection_reads_eagerly_then_waits_holding_nothing_for_its_keepalive_time) {
    manual_fixture f(1000ms);
    f.io_turns();
    f.round_trip("/1");
    BOOST_TEST(http::detail::eager_held == 1); // the next request is read eagerly
    const std::string body(3 * http::detail::eager_bytes, 'b');
    asio::write(f.client, asio::buffer("POST /2 HTTP/1.1\r\nHost: t\r\nContent-Length: " + std::to_string(body.size()) +
                                       "\r\n\r\n" + body));
    f.io_turns();
    f.answered();
    BOOST_TEST(f.read == (std::vector<std::string>{"/1:0", "/2:" + std::to_string(body.size())}),
               boost::test_tools::per_element());
    f.io_turns();
    BOOST_TEST(http::detail::eager_held == 1);

    const auto t0 = f.clock.now(); // quiet from here
    // The grace ends, seen late (the wheel's driver wakes 5 ms on: a busy loop): the eager read is
    // cancelled, its block given back, and the rest of the keep-alive time counts from the grace's
    // due time, not from its late call.
    f.clock.advance_by(5ms);
    f.io_turns();
    BOOST_TEST(http::detail::eager_held == 0);
    BOOST_TEST(f.counters.snapshot().closes_total() == 0u);
    f.clock.advance_to(t0 + 999ms);
    f.io_turns();
    BOOST_TEST(f.counters.snapshot().closes_total() == 0u); // not before its keep-alive time
    f.clock.advance_to(t0 + 1001ms);
    f.io_turns();
    BOOST_TEST(f.closes(http::keepalive_timeout) == 1u);
    BOOST_TEST(f.counters.snapshot().closes_total() == 1u);
    f.sees_silent_close();
}

// A client found quiet past the grace (one that pauses between requests) is waited for without the
// eager read — whose attempt fails and whose grace wakes the loop, for nothing — until one of its
// requests comes within the grace of its answer again.
BOOST_AUTO_TEST_CASE(a_client_that_pauses_is_waited_for_until_it_is_quick_again) {
    manual_fixture f(1000ms);
    f.io_turns();
    f.round_trip("/1");
    BOOST_TEST(http::detail::eager_held == 1); // read eagerly
    f.clock.step_by(3ms);                      // quiet past the grace
    f.io_turns();
    BOOST_TEST(http::detail::eager_held == 0);
    f.round_trip("/2"); // 3 ms after its answer
    BOOST_TEST(http::detail::eager_held == 0); // waited for: no block, no grace
    f.round_trip("/3"); // at once
    BOOST_TEST(http::detail::eager_held == 1); // quick again: read eagerly
    BOOST_TEST(f.read.size() == 3u);
    BOOST_TEST(f.counters.snapshot().closes_total() == 0u);
}

// A grace that ends while the answer is still being written (a client slow to read it) does not cut
// the write to cancel the read: the eager read waits on, and the answer arrives whole.
BOOST_AUTO_TEST_CASE(the_eager_read_is_not_cancelled_under_an_answer_still_being_written) {
    manual_fixture f(1000ms, 16 * 1024);
    f.answer_bytes = 4 << 20; // far more than the kernel's buffers take at once
    f.io_turns();
    f.get("/big");
    f.io_turns();
    BOOST_TEST(f.server->connection().queued() > 0u); // the answer is still being written
    f.clock.step_by(3ms);                               // the grace ends meanwhile
    f.io_turns();
    BOOST_TEST(f.counters.snapshot().closes_total() == 0u);
    f.answered(); // the client reads now, while the server writes
    BOOST_TEST(f.counters.snapshot().closes_total() == 0u);
    f.answer_bytes = 6;
    f.get("/small"); // and the connection reads on
    f.io_turns();
    f.answered();
    BOOST_TEST(f.read.size() == 2u);
}

namespace {
// A connection's output for queue_message: what it is handed, in one string.
struct collected_output {
    std::string bytes;
    std::size_t messages = 0;
    void send_parts(const std::string_view* parts, std::size_t n) {
        for (std::size_t i = 0; i < n; ++i) bytes.append(parts[i]);
        ++messages;
    }
};
template <class Body>
std::string serialized_by_beast(bhttp::response<Body>& res) {
    std::ostringstream out;
    out << res;
    return out.str();
}
} // namespace

// A response of plain fields and a string body (or none) is queued from its parts, not through Beast's
// serializer: byte for byte what the serializer writes, as one message.
BOOST_AUTO_TEST_CASE(a_plain_response_is_queued_as_beasts_serializer_writes_it) {
    std::vector<bhttp::response<bhttp::string_body>> responses;
    responses.emplace_back(bhttp::status::ok, 11).body() = "hello\n";
    auto& custom = responses.emplace_back(bhttp::status::not_found, 10);
    custom.reason("Nowhere");
    custom.set(bhttp::field::content_type, "text/plain");
    custom.insert("X-Twice", "1");
    custom.insert("X-Twice", "2");
    custom.body() = "not here\n";
    responses.emplace_back(bhttp::status::request_timeout, 11).keep_alive(false);
    for (auto& res : responses) {
        res.prepare_payload();
        collected_output out;
        http::queue_message(out, res);
        BOOST_TEST(out.bytes == serialized_by_beast(res));
        BOOST_TEST(out.messages == 1u);
    }
    bhttp::response<bhttp::empty_body> empty(bhttp::status::no_content, 11);
    empty.set(bhttp::field::server, "heartwheel");
    collected_output out;
    http::queue_message(out, empty);
    BOOST_TEST(out.bytes == serialized_by_beast(empty));
    // A chunked one goes through the serializer, which frames its body.
    bhttp::response<bhttp::string_body> chunked(bhttp::status::ok, 11);
    chunked.body() = "abc";
    chunked.chunked(true);
    collected_output framed;
    http::queue_message(framed, chunked);
    BOOST_TEST(framed.bytes.find("3\r\nabc\r\n") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(max_pipelined_is_validated) {
    http::http_policy p;
    p.max_pipelined = 0;
    BOOST_CHECK_THROW(p.validate(), net::config_error);
    p.max_pipelined = 1025;
    BOOST_CHECK_THROW(p.validate(), net::config_error);
}

namespace {
using framed_config = net::configuration<http::http_slot, heartwheel::ws::ws_slot>;
framed_config from_toml(std::string_view text) {
    framed_config c;
    net::apply_tables(net::policies_of(c), toml::parse(text), "test.toml");
    c.validate();
    return c;
}
std::string refused_field(std::string_view text) {
    try {
        from_toml(text);
    } catch (const net::config_error& e) {
        return e.field();
    }
    return "(accepted)";
}
} // namespace

BOOST_AUTO_TEST_CASE(framing_tables_load_beside_the_connections_and_are_validated_with_them) {
    const framed_config c = from_toml("[idle]\nreader_idle = \"10s\"\n[http]\nheader_timeout = \"5s\"\nmax_requests = 7\n"
                                      "[websocket]\nmax_message = \"1MiB\"\nbinary = true\n[connection]\nlinger = \"250ms\"\n");
    BOOST_TEST(c.idle.reader_idle.count() == 10000);
    BOOST_TEST(c.http.header_timeout.count() == 5000);
    BOOST_TEST(c.http.max_requests == 7u);
    BOOST_TEST(c.http.keepalive_timeout.count() == 75000); // not given: the default
    BOOST_TEST(c.websocket.max_message == std::size_t{1} << 20);
    BOOST_TEST(c.websocket.binary);
    BOOST_TEST(c.connection.linger.count() == 250);
    // Each refused by the key that is wrong (the file named in the message).
    BOOST_TEST(refused_field("[http]\nheader_timeout = \"5\"\n") == "http.header_timeout"); // a string needs its unit
    BOOST_TEST(refused_field("[http]\nheader_limit = 10\n") == "http.header_limit");
    BOOST_TEST(refused_field("[http]\nfrobnicate = 1\n") == "http.frobnicate");
    BOOST_TEST(refused_field("[websocket]\nproducer_budget = 100\n") == "websocket.producer_budget");
    BOOST_TEST(refused_field("[connection]\nactivity = \"frames\"\n") == "connection.activity");
    BOOST_TEST(refused_field("[htpp]\nmax_requests = 1\n") == "htpp");
    // A websocket producer budget left unset is derived (half the soft limit), not out of range.
    BOOST_TEST(c.websocket.producer_budget == heartwheel::ws::ws_options::derived_budget);
}

BOOST_AUTO_TEST_CASE(a_flag_sets_its_field_through_the_description_and_is_named_in_errors) {
    framed_config c;
    const std::initializer_list<net::field_flag> flags = {{"--header-timeout", "http.header_timeout"},
                                                         {"--max-message", "websocket.max_message"}};
    const char* argv[] = {"prog", "--header-timeout", "2s", "--max-message", "64KiB", "--other"};
    int i = 1;
    BOOST_TEST(net::parse_field_flag(6, argv, i, net::policies_of(c), flags));
    BOOST_TEST(i == 2);
    BOOST_TEST(c.http.header_timeout.count() == 2000);
    ++i;
    BOOST_TEST(net::parse_field_flag(6, argv, i, net::policies_of(c), flags));
    BOOST_TEST(c.websocket.max_message == 65536u);
    ++i;
    BOOST_TEST(!net::parse_field_flag(6, argv, i, net::policies_of(c), flags)); // not one of them
    const char* bad[] = {"prog", "--header-timeout", "0"};
    i = 1;
    try {
        net::parse_field_flag(3, bad, i, net::policies_of(c), flags);
        BOOST_FAIL("a header timeout of 0 was accepted");
    } catch (const net::config_error& e) {
        BOOST_TEST(e.field() == "--header-timeout");
        BOOST_TEST(e.accepted() == "1..86400000 ms");
    }
    BOOST_TEST(net::field_flags_help(net::policies_of(c), flags).find("--header-timeout MS") != std::string::npos);
}

// docs/liveness.md's table of the framing layers' knobs is knob_table() of their descriptions.
BOOST_AUTO_TEST_CASE(the_docs_table_of_the_framing_knobs_is_their_descriptions) {
    http::http_policy h;
    heartwheel::ws::ws_options w;
    const std::string table = net::knob_table({{&http::http_policy::description(), &h},
                                               {&heartwheel::ws::ws_options::description(), &w}});
    std::ifstream in(HEARTWHEEL_DOCS_DIR "/liveness.md");
    BOOST_TEST_REQUIRE(static_cast<bool>(in));
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string page = ss.str();
    const std::string begin = "<!-- framing knobs: generated from the framing layers' descriptions (knob_table()) -->\n",
                      end = "<!-- /framing knobs -->";
    const auto a = page.find(begin), b = page.find(end);
    BOOST_TEST_REQUIRE((a != std::string::npos && b != std::string::npos && a < b));
    BOOST_TEST(page.substr(a + begin.size(), b - a - begin.size()) == table,
               "docs/liveness.md's framing table differs; it should read:\n" << table);
}
