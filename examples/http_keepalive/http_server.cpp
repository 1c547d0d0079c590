// http_server — an HTTP/1.1 keep-alive server on Boost.Beast and heartwheel. Every deadline is the
// wheel's (heartwheel/beast/http.hpp): the wait for a kept-alive connection's next request (a silent
// close, as nginx's keepalive_timeout), a request head that must be whole in time (a slowloris gets
// "408 Request Timeout", as client_header_timeout), a body read in time between reads (408), at most
// --max-requests per connection and no new request after --max-age (the last answer says
// "Connection: close"); --config adds the library's policies (write timeout, output bound,
// keepalive); --tls serves HTTPS (net::tls_socket; the TLS handshake under the handshake timeout).
// The request loop is http::server's (heartwheel/beast/http_server.hpp): a kept-alive TCP connection
// quiet between requests is parked as its socket, a deadline and a wait. Every close is counted once
// with its reason.
//
// Routes: GET / answers "hello\n"; POST /echo answers its body; anything else 404.
// Usage: http_server [--listen HOST:PORT] [--keepalive-timeout MS] [--header-timeout MS]
//                    [--body-timeout MS] [--body-deadline MS] [--max-requests N] [--max-age MS] [--header-limit BYTES]
//                    [--body-limit BYTES] [--config FILE] [--tls CERT KEY]
// Prints "listening on HOST:PORT" first; on SIGINT/SIGTERM closes every connection ("shutdown"),
// prints "final closes=<reason>:<n>,... requests=<n>" and exits 0. Bad flags exit 2.
#include <heartwheel/asio_ssl.hpp>
#include <heartwheel/asio_wheel.hpp>
#include <heartwheel/beast/http_server.hpp>
#include <heartwheel/net/server/server_front.hpp>
#include <heartwheel/net/config/liveness_config.hpp>
#include <heartwheel/net/config/server_toml.hpp>
#include <heartwheel/net/tls/tls_socket.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

namespace asio = boost::asio;
namespace net = heartwheel::net;
namespace http = heartwheel::http;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

struct options {
    net::server_settings server = defaults(); ///< listen, admission, drain, PROXY, handover, metrics
    /// The connection's tables and the HTTP layer's ([http]: live.http), from flags and one --config file.
    net::configuration<http::http_slot> live;
    std::optional<std::pair<std::string, std::string>> tls; // certificate, key
    bool help = false;

    static net::server_settings defaults() {
        net::server_settings s;
        s.listen = "127.0.0.1:7400";
        return s;
    }
};

// Flags that set a field of the configuration, parsed and ranged by its description (the [http]
// table's keys in --config).
const std::initializer_list<net::field_flag> http_flags = {
    {"--keepalive-timeout", "http.keepalive_timeout"}, {"--header-timeout", "http.header_timeout"},
    {"--body-timeout", "http.body_timeout"},           {"--body-deadline", "http.body_deadline"},
    {"--max-requests", "http.max_requests"},           {"--max-age", "http.max_age"},
    {"--header-limit", "http.header_limit"},           {"--body-limit", "http.body_limit"}};

constexpr const char* usage =
    "usage: http_server [--listen HOST:PORT] [--keepalive-timeout MS] [--header-timeout MS]\n"
    "                   [--body-timeout MS] [--body-deadline MS] [--max-requests N] [--max-age MS]\n"
    "                   [--header-limit BYTES] [--body-limit BYTES] [--max-connections N] [--max-handshakes N]\n"
    "                   [--drain-window MS] [--config FILE] [--tls CERT KEY]\n"
    "                   [--proxy-protocol] [--proxy-from CIDRS] [--proxy-timeout MS] [--handover PATH]\n"
    "                   [--metrics HOST:PORT]\n"
    "  --tls CERT KEY            serve HTTPS with this certificate chain and key (PEM)\n"
    "  (a drain closes idle connections at once and answers a request in progress with Connection: close)\n";

struct server_state {
    std::uint64_t requests = 0;
};

bhttp::response<bhttp::string_body> answer(const bhttp::request<bhttp::string_body>& req) {
    bhttp::response<bhttp::string_body> res;
    res.set(bhttp::field::content_type, "text/plain");
    if (req.method() == bhttp::verb::get && req.target() == "/") res.body() = "hello\n";
    else if (req.method() == bhttp::verb::post && req.target() == "/echo") res.body() = req.body();
    else {
        res.result(bhttp::status::not_found);
        res.body() = "not found\n";
    }
    return res;
}

// Plain sockets name their io_context's executor (8 bytes) instead of holding any_io_executor (56, in
// the socket and in its pending wait): a smaller connection while it idles. TLS is over tcp::socket.
using plain_socket = asio::basic_stream_socket<tcp, asio::io_context::executor_type>;

// What accepted sockets are typed with: the io_context's own executor for plain sockets, the
// polymorphic one under TLS (net::tls_socket is over tcp::socket).
template <class Stream>
auto accept_executor(asio::io_context& io) {
    if constexpr (std::is_same_v<Stream, plain_socket>) return io.get_executor();
    else return asio::any_io_executor(io.get_executor());
}
template <class Stream, class Socket>
Stream make_stream(Socket socket, asio::ssl::context* tls) {
    if constexpr (std::is_same_v<Stream, Socket>) return socket;
    else return Stream(std::move(socket), *tls);
}

template <class Stream>
int serve(const options& o, asio::ssl::context* tls) {
    asio::io_context io(1);
    heartwheel::asio_wheel wheel(io.get_executor());
    net::liveness_counters counters;
    const net::connection_context ctx(wheel, o.live, &counters); // its [output] bound included
    server_state state;
    // The request loop: each request answered as it is read; an idle kept-alive connection is parked
    // (its socket, a deadline and a wait: http_server.hpp) until its client's next request.
    auto app = [&state](http::http_connection<Stream>& c, bhttp::request<bhttp::string_body>&& req) {
        ++state.requests;
        auto res = answer(req);
        c.send(res);
    };
    http::server<Stream, decltype(app)> http_server(ctx, o.live.http, app);
    // Admission, PROXY headers behind a balancer, a predecessor's socket taken over (and this one's
    // served for a successor): from the server settings.
    const auto front = net::server_front::open(io.get_executor(), o.server, "http_server", "", &counters);
    if (!front) return 1;
    net::listener& listener = front->listener();
    // net::listener's accept ends only when it is closed: at the descriptor limit it refuses and rests.
    asio::co_spawn(io, [&]() -> asio::awaitable<void> {
        for (;;) {
            auto [ec, socket] = co_await listener.async_accept(accept_executor<Stream>(io), use_tuple);
            if (ec) co_return;
            socket.set_option(tcp::no_delay(true), ec);
            http_server.serve(make_stream<Stream>(std::move(socket), tls));
        }
    }, asio::detached);

    // The first SIGINT/SIGTERM drains: stop accepting, then every connection is asked to leave over
    // --drain-window (net::async_drain: an idle kept-alive one closes at once, one mid-request answers
    // it with Connection: close). Then, or at a second signal: close every connection left
    // (shutdown: silent, as an idle close), and stop once all are gone (or after two seconds).
    bool stopping = false;
    front->on_signals([&] {
        if (std::exchange(stopping, true)) return;
        listener.close();
        asio::co_spawn(io, [&]() -> asio::awaitable<void> {
            net::close_connections(io.get_executor(), net::close_reason::shutdown);
            asio::steady_timer poll(io);
            const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
            while (net::connections_of(io.get_executor()) > 0 && std::chrono::steady_clock::now() < deadline) {
                poll.expires_after(std::chrono::milliseconds(10));
                co_await poll.async_wait(use_tuple);
            }
            io.stop();
        }, asio::detached);
    });
    // The first line tells a supervisor the server is ready: only once a SIGTERM would drain it.
    std::cout << front->ready_lines() << std::flush;
    front->serve_metrics(wheel, [&](net::prometheus_writer& out) {
        out.metric("http_connections", "gauge", "Open connections.", net::connections_of(io.get_executor()));
        out.metric("http_requests_total", "counter", "Requests answered.", state.requests);
        out.metric("http_parked_connections", "gauge", "Idle kept-alive connections parked as their socket and a deadline.",
                   http_server.parked());
    });
    io.run();
    std::cout << "final closes=" << counters.snapshot().closes_text() << " requests=" << state.requests << std::endl;
    return 0;
}

options parse(int argc, char** argv) {
    options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const bool has = i + 1 < argc;
        if (net::parse_field_flag(argc, argv, i, net::policies_of(o.live), http_flags)) continue;
        else if (a == "--config" && has) net::load_server_config(argv[++i], o.server, o.live); // over these defaults
        else if (net::parse_server_flag(argc, argv, i, o.server)) continue;
        else if (a == "--tls" && i + 2 < argc) {
            o.tls.emplace(argv[i + 1], argv[i + 2]);
            i += 2;
        } else if (a == "--help" || a == "-h") {
            o.help = true;
        } else
            throw std::invalid_argument("unknown argument '" + a + "': accepted --listen HOST:PORT, --keepalive-timeout MS, "
                                        "--header-timeout MS, --body-timeout MS, --body-deadline MS, --max-requests N, --max-age MS, "
                                        "--header-limit BYTES, --body-limit BYTES, --max-connections N, --max-handshakes N, "
                                        "--drain-window MS, --config FILE, --tls CERT KEY, --proxy-protocol, --proxy-from CIDRS, "
                                        "--proxy-timeout MS, --handover PATH, --metrics HOST:PORT, --help");
    }
    o.live.validate(); // the rules between fields (each flag's own range was checked as it was read)
    o.server.validate(); // a bad address is a usage error (exit 2)
    return o;
}

} // namespace

int main(int argc, char** argv) {
    options o;
    std::optional<asio::ssl::context> tls;
    try {
        o = parse(argc, argv);
        if (o.help) {
            std::cout << usage << net::field_flags_help(net::policies_of(o.live), http_flags)
                      << net::server_flags_help(o.server, true);
            return 0;
        }
        if (o.tls) tls.emplace(net::server_tls_context(o.tls->first, o.tls->second, "--tls"));
    } catch (const std::exception& e) { // flags, config, certificate: each named
        std::cerr << "http_server: " << e.what() << '\n';
        return 2;
    }
    return tls ? serve<net::tls_socket>(o, &*tls) : serve<plain_socket>(o, nullptr);
}
