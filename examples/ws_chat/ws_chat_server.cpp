// ws_chat_server — a WebSocket chat on Boost.Beast and heartwheel: every text message a client sends
// goes to every other client. One io_context runs on --io-threads threads; each thread's share of the
// connections lives on a strand with its own wheel (a shard), and a broadcast from one shard reaches
// the others' connections through ws_connection::send, which posts itself to their strands.
// heartwheel times everything (Beast's own timeouts stay off): the upgrade (handshake timeout),
// message-level reader idleness, the heartbeat's WebSocket pings, and the output bound that closes a
// client that does not read (slow-consumer, close code 1008) while the healthy ones lose nothing.
// Every close is a close frame naming its reason (reader-idle and heartbeat-timeout: 1001), counted once.
// A browser is a client too: GET / on the same port answers the chat's page (chat_page.hpp), which
// opens a WebSocket back to it and shows the close code and reason when the server closes it; any
// other plain request is answered 404 (405 for other methods), each closed http-served.
//
// Usage: ws_chat_server [--listen HOST:PORT] [--io-threads N] [--config FILE] [--max-message BYTES]
//                       [--max-connections N] [--max-handshakes N] [--tls CERT KEY]
// At --max-connections (or --max-handshakes TLS handshakes in progress) the listener stops accepting
// until a place frees: newcomers wait in the kernel's backlog (net::listener's admission).
// Prints "listening on HOST:PORT" first; on SIGINT/SIGTERM asks every client to leave over
// --drain-window (1012 "draining"), closes those left (1001 "shutdown"), prints
// "final closes=<reason>:<n>,... messages=<n>" and exits 0. Bad flags exit 2.
#include <heartwheel/asio_ssl.hpp>
#include <heartwheel/beast/websocket.hpp>
#include <heartwheel/net/server/server_front.hpp>
#include <heartwheel/net/config/liveness_config.hpp>
#include <heartwheel/net/config/server_toml.hpp>
#include <heartwheel/net/server/shards.hpp>
#include <heartwheel/net/tls/tls_socket.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/string_body.hpp>

#include "chat_page.hpp"

#include <atomic>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace asio = boost::asio;
namespace net = heartwheel::net;
namespace ws = heartwheel::ws;
using tcp = asio::ip::tcp;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

struct options {
    net::server_settings server = defaults(); ///< listen, admission, drain, PROXY, handover, metrics
    unsigned io_threads = 2;
    /// The connection's tables and the WebSocket layer's ([websocket]: live.websocket), one --config file.
    net::configuration<ws::ws_slot> live;
    std::optional<std::pair<std::string, std::string>> tls; // certificate, key
    bool help = false;

    static net::server_settings defaults() {
        net::server_settings s;
        s.listen = "127.0.0.1:7300";
        return s;
    }
};

// Flags that set a field of the configuration, parsed and ranged by its description.
const std::initializer_list<net::field_flag> ws_flags = {{"--max-message", "websocket.max_message"}};

constexpr const char* usage =
    "usage: ws_chat_server [--listen HOST:PORT] [--io-threads N] [--config FILE] [--max-message BYTES]\n"
    "                      [--max-connections N] [--max-handshakes N] [--drain-window MS] [--tls CERT KEY]\n"
    "                      [--proxy-protocol] [--proxy-from CIDRS] [--proxy-timeout MS] [--handover PATH]\n"
    "                      [--metrics HOST:PORT]\n"
    "  --io-threads N        threads running the one io_context, 1..256 (default 2)\n"
    "  --tls CERT KEY        serve wss:// with this certificate chain and key (PEM)\n"
    "  GET / on the same port answers the chat's page: a browser is a client (other paths 404)\n"
    "  (a drain asks each client to leave with close 1012; liveness defaults: reader idle 5 min, a ping\n"
    "  every 30 s answered within 10 s)\n";

// The clients of every shard. Members are added and removed on their own strands; a broadcast
// copies the list under the lock and sends outside it (send() posts to each member's strand).
template <class Stream>
class room {
public:
    using member = ws::ws_connection<Stream>;
    void join(const std::shared_ptr<member>& m) {
        const std::lock_guard<std::mutex> lock(mutex_);
        members_.insert(m);
    }
    void leave(member* m) {
        const std::lock_guard<std::mutex> lock(mutex_);
        for (auto it = members_.begin(); it != members_.end(); ++it)
            if (it->get() == m) return void(members_.erase(it));
    }
    // One buffer for every recipient (made by the sender's connection: counted against each one's
    // output bound, copied for none, and against the sender's producer budget while any holds it —
    // a flooding sender waits for its readers instead of filling their queues).
    void broadcast(member& from, std::string text) {
        const ws::shared_message message = from.make_message(std::move(text));
        messages.fetch_add(1, std::memory_order_relaxed);
        std::vector<std::shared_ptr<member>> to;
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            to.assign(members_.begin(), members_.end());
        }
        for (const auto& m : to)
            if (m.get() != &from) m->send(message);
    }
    std::vector<std::shared_ptr<member>> everyone() {
        const std::lock_guard<std::mutex> lock(mutex_);
        return {members_.begin(), members_.end()};
    }
    std::atomic<std::uint64_t> messages{0};

private:
    std::mutex mutex_;
    std::set<std::shared_ptr<member>> members_;
};

// Leaves the room when the connection closes (the connection says why: counted already).
template <class Stream>
struct leaves_room final : net::connection_handler {
    leaves_room(room<Stream>& r) : r(r) {}
    void on_close(net::close_reason) override { r.leave(self); }
    room<Stream>& r;
    ws::ws_connection<Stream>* self = nullptr;
};

// The answer to a plain HTTP request on the chat's port: the page at /, nothing else.
boost::beast::http::response<boost::beast::http::string_body> plain_answer(const ws::websocket::request_type& req) {
    namespace bhttp = boost::beast::http;
    bhttp::response<bhttp::string_body> res;
    res.version(req.version());
    res.set(bhttp::field::server, "ws_chat_server");
    const bool read_only = req.method() == bhttp::verb::get || req.method() == bhttp::verb::head;
    if (read_only && (req.target() == "/" || req.target() == "/index.html")) {
        res.result(bhttp::status::ok);
        res.set(bhttp::field::content_type, "text/html; charset=utf-8");
        res.set(bhttp::field::cache_control, "no-store");
        res.body() = chat_page;
    } else {
        res.result(read_only ? bhttp::status::not_found : bhttp::status::method_not_allowed);
        if (!read_only) res.set(bhttp::field::allow, "GET, HEAD");
        res.set(bhttp::field::content_type, "text/plain");
        res.body() = read_only ? "not found\n" : "method not allowed\n";
    }
    res.prepare_payload();
    if (req.method() == bhttp::verb::head) res.body().clear(); // Content-Length stays the page's
    return res;
}

template <class Stream>
asio::awaitable<void> session(Stream stream, const net::connection_context& ctx, const options& o, room<Stream>& r) {
    auto handler = std::make_shared<leaves_room<Stream>>(r);
    auto c = ws::ws_connection<Stream>::create(std::move(stream), ctx, handler, o.live.websocket);
    handler->self = c.get();
    if constexpr (net::connection<Stream>::is_tls) {
        auto [ec] = co_await c->connection().async_handshake(asio::ssl::stream_base::server, use_tuple);
        if (ec) co_return; // closed handshake-failed or handshake-timeout, counted
    }
    {   // the opening request: an upgrade, or a browser asking for the page (its headers freed after)
        ws::websocket::request_type req;
        if (auto [ec] = co_await c->async_read_request(req, use_tuple); ec) co_return;
        if (!ws::websocket::is_upgrade(req)) co_return c->respond(plain_answer(req));
        if (auto [ec] = co_await c->async_accept(req, use_tuple); ec) co_return;
    }
    r.join(c);
    boost::beast::flat_buffer in;
    for (;;) {
        auto [ec, n] = co_await c->async_read(in, use_tuple);
        if (ec) co_return; // the connection closed itself with the reason
        r.broadcast(*c, boost::beast::buffers_to_string(in.data()));
        in.consume(n);
    }
}

template <class Stream>
Stream make_stream(tcp::socket s, asio::ssl::context* tls) {
    if constexpr (std::is_same_v<Stream, tcp::socket>) return s;
    else return Stream(std::move(s), *tls);
}

template <class Stream>
int serve(const options& o, asio::ssl::context* tls) {
    net::liveness_counters counters;
    // A strand of one io_context per thread, each with its wheel (a shard); slow consumers are closed
    // past the configuration's [output] limits.
    net::shards shards(o.io_threads, net::threading::thread_pool, o.live, &counters);
    const auto home = shards[0].get_executor(); // the acceptor's and the shutdown's
    room<Stream> r;
    // Admission, PROXY headers behind a balancer, a predecessor's socket taken over (and this one's
    // served for a successor): from the server settings.
    const auto front = net::server_front::open(home, o.server, "ws_chat_server", "", &counters);
    if (!front) return 1;
    net::listener& listener = front->listener();
    // net::listener's accept ends only when it is closed: at the descriptor limit it refuses and rests.
    asio::co_spawn(home, [&]() -> asio::awaitable<void> {
        for (;;) {
            net::shard& s = shards.next();
            auto [ec, socket] = co_await listener.async_accept(s.get_executor(), use_tuple);
            if (ec) co_return;
            socket.set_option(tcp::no_delay(true), ec);
            // The connection is made on its shard's strand: its timers go into that shard's wheel.
            asio::co_spawn(s.get_executor(), session(make_stream<Stream>(std::move(socket), tls), s.context(), o, r),
                           asio::detached);
        }
    }, asio::detached);

    // The first SIGINT/SIGTERM drains: stop accepting, then every client is asked to leave (close 1012,
    // "draining") spread over --drain-window (net::async_drain). Then, or at a second signal: a close
    // frame to everyone left ("shutdown"), and stop once all are gone (or after two seconds).
    bool stopping = false;
    front->on_signals([&] {
        if (std::exchange(stopping, true)) return;
        listener.close();
        asio::co_spawn(home, [&]() -> asio::awaitable<void> {
            for (const auto& m : r.everyone()) m->close(net::close_reason::shutdown);
            asio::steady_timer poll(home);
            const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
            while (!r.everyone().empty() && std::chrono::steady_clock::now() < deadline) {
                poll.expires_after(std::chrono::milliseconds(10));
                co_await poll.async_wait(use_tuple);
            }
            shards.stop();
        }, asio::detached);
    });
    // The first line tells a supervisor the server is ready: only once a SIGTERM would drain it.
    std::cout << front->ready_lines() << std::flush;
    // Answered on the acceptor's strand, timed by its shard's wheel; the other wheels run on other
    // threads (echo_server mirrors them, this one does not report them).
    front->serve_metrics(shards[0].wheel(), [&](net::prometheus_writer& out) {
        out.metric("ws_chat_members", "gauge", "Members in the room.", r.everyone().size());
        out.metric("ws_chat_messages_total", "counter", "Messages broadcast.", r.messages.load());
    }, false);
    shards.run();
    std::cout << "final closes=" << counters.snapshot().closes_text() << " messages=" << r.messages.load() << std::endl;
    return 0;
}

options parse(int argc, char** argv) {
    options o;
    o.live.idle.reader_idle = std::chrono::minutes(5);
    o.live.heartbeat.interval = std::chrono::seconds(30);
    o.live.heartbeat.timeout = std::chrono::seconds(10);
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const bool has = i + 1 < argc;
        if (a == "--io-threads" && has) o.io_threads = static_cast<unsigned>(net::parse_count(argv[++i], a, 1, 256));
        else if (a == "--config" && has) net::load_server_config(argv[++i], o.server, o.live); // over these defaults
        else if (net::parse_field_flag(argc, argv, i, net::policies_of(o.live), ws_flags)) continue;
        else if (net::parse_server_flag(argc, argv, i, o.server)) continue;
        else if (a == "--tls" && i + 2 < argc) {
            o.tls.emplace(argv[i + 1], argv[i + 2]);
            i += 2;
        } else if (a == "--help" || a == "-h") {
            o.help = true;
        } else
            throw std::invalid_argument("unknown argument '" + a + "': accepted --listen HOST:PORT, --io-threads N, "
                                        "--config FILE, --max-message BYTES, --max-connections N, --max-handshakes N, "
                                        "--drain-window MS, --tls CERT KEY, --proxy-protocol, --proxy-from CIDRS, "
                                        "--proxy-timeout MS, --handover PATH, --metrics HOST:PORT, --help");
    }
    o.server.validate(); // a bad address is a usage error (exit 2)
    o.live.validate();
    o.live.websocket.validate(o.live.output); // --max-message against the output's limits
    return o;
}

} // namespace

int main(int argc, char** argv) {
    options o;
    std::optional<asio::ssl::context> tls;
    try {
        o = parse(argc, argv);
        if (o.help) {
            std::cout << usage << net::field_flags_help(net::policies_of(o.live), ws_flags)
                      << net::server_flags_help(o.server, true);
            return 0;
        }
        if (o.tls) tls.emplace(net::server_tls_context(o.tls->first, o.tls->second, "--tls"));
    } catch (const std::exception& e) { // flags, config, certificate: each named
        std::cerr << "ws_chat_server: " << e.what() << '\n';
        return 2;
    }
    return tls ? serve<net::tls_socket>(o, &*tls) : serve<tcp::socket>(o, nullptr);
}
