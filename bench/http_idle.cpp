// http_idle — idle kept-alive HTTP/1.1 connections: heartwheel's http::http_connection against Beast's
// own timing as its examples write it (beast::tcp_stream, expires_after before every read and write:
// an Asio timer inside every stream).
//
// The same work in both: one thread, a coroutine per connection; each client sends one GET, reads the
// answer and then stays silent on the kept-alive connection until the server's keep-alive timeout
// (2 s) closes it. The clients are plain Asio sockets in a child process.
//
// What one run of a mode prints (one JSON line):
//  - bytes per idle connection: the server's RSS with N kept-alive idle connections, less before any;
//  - CPU per request: the server's user+system CPU from the first connect until all N were answered,
//    per request (accept, parse, answer, arm the wait);
//  - close lateness as the peers see it: each answer carries the server's clock reading when it was
//    sent (X-Sent-At; one monotonic clock for both processes), each client notes when it saw the
//    server's end of stream; lateness = seen - (sent + 2 s), p50 / p99 / max / min (negative: early).
// Usage: http_idle --mode heartwheel|beast [--connections N]. bench/http/run.sh runs both, alternated,
// and writes docs/benchmarks.md's section.
#include <heartwheel/asio_wheel.hpp>
#include <heartwheel/beast/http.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include "child_pipe.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
namespace net = heartwheel::net;
namespace http = heartwheel::http;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
constexpr auto keepalive = 2000ms;

namespace {

using bench::cpu_seconds;
using bench::forked_clients;
using bench::raise_fd_limit;
using bench::rss_kib;
using bench::write_all;

// --- the clients (child process) -------------------------------------------------------------------
struct client_state {
    steady::time_point answered{}, closed_seen{};
};

asio::awaitable<void> client(tcp::endpoint server, client_state& st, int& up) {
    tcp::socket s(co_await asio::this_coro::executor);
    if (auto [ec] = co_await s.async_connect(server, use_tuple); ec) co_return;
    static const std::string get = "GET / HTTP/1.1\r\nHost: bench\r\n\r\n";
    if (auto [ec, n] = co_await asio::async_write(s, asio::buffer(get), use_tuple); ec) co_return;
    std::string in;
    if (auto [ec, n] = co_await asio::async_read_until(s, asio::dynamic_buffer(in), "hello\n", use_tuple); ec) co_return;
    const auto at = in.find("X-Sent-At: ");
    if (at == std::string::npos) co_return;
    st.answered = steady::time_point(steady::duration(std::stoll(in.substr(at + 11))));
    ++up;
    char chunk[256];
    for (;;) {
        auto [ec, n] = co_await s.async_read_some(asio::buffer(chunk), use_tuple);
        if (ec) break;
    }
    st.closed_seen = steady::now();
}

int run_clients(unsigned short port, int n, int to_parent) {
    asio::io_context io(1);
    std::vector<client_state> states(static_cast<std::size_t>(n));
    int up = 0;
    const tcp::endpoint server(asio::ip::make_address("127.0.0.1"), port);
    asio::co_spawn(io, [&]() -> asio::awaitable<void> { // waves of 500: the listen backlog
        asio::steady_timer t(io);
        for (int i = 0; i < n; ++i) {
            asio::co_spawn(io, client(server, states[static_cast<std::size_t>(i)], up), asio::detached);
            if (i % 500 == 499)
                while (up < i + 1 - 100) {
                    t.expires_after(5ms);
                    co_await t.async_wait(use_tuple);
                }
        }
    }, asio::detached);
    const auto give_up = steady::now() + 60s;
    while (up < n && steady::now() < give_up) io.run_one_for(1s);
    write_all(to_parent, "up\n");
    const auto until = steady::now() + keepalive + 15s;
    const auto all_closed = [&] {
        return std::all_of(states.begin(), states.end(), [](const client_state& s) { return s.closed_seen != steady::time_point{}; });
    };
    while (!all_closed() && steady::now() < until) io.run_for(10ms);
    std::vector<double> late;
    int missing = 0;
    for (const auto& st : states) {
        if (st.closed_seen == steady::time_point{} || st.answered == steady::time_point{}) {
            ++missing;
            continue;
        }
        late.push_back(std::chrono::duration<double, std::milli>(st.closed_seen - (st.answered + keepalive)).count());
    }
    std::sort(late.begin(), late.end());
    const auto at = [&](double q) {
        return late.empty() ? -1.0 : late[std::min(late.size() - 1, static_cast<std::size_t>(q * static_cast<double>(late.size())))];
    };
    char buf[256];
    std::snprintf(buf, sizeof buf, "%.3f %.3f %.3f %.3f %d\n", at(0.5), at(0.99), late.empty() ? -1.0 : late.back(),
                  late.empty() ? 0.0 : late.front(), missing);
    write_all(to_parent, buf);
    return 0;
}

// --- the server (parent process) -------------------------------------------------------------------
bhttp::response<bhttp::string_body> hello(unsigned version, bool keep_alive) {
    bhttp::response<bhttp::string_body> res(bhttp::status::ok, version);
    res.set(bhttp::field::content_type, "text/plain");
    res.body() = "hello\n";
    // When the answer left (steady_clock is CLOCK_MONOTONIC, one clock for both processes): the wait
    // for the next request begins after this, whatever delays the client's reading of it.
    res.set("X-Sent-At", std::to_string(steady::now().time_since_epoch().count()));
    res.keep_alive(keep_alive);
    res.prepare_payload();
    return res;
}

asio::awaitable<void> serve_heartwheel(std::shared_ptr<http::http_connection<tcp::socket>> c) {
    for (;;) {
        auto [ec, req] = co_await c->async_read_request(use_tuple);
        if (ec) co_return;
        auto res = hello(req.version(), true);
        c->send(res);
    }
}

// Beast's examples' shape: a timeout on the stream before every read and every write.
asio::awaitable<void> serve_beast(tcp::socket socket) {
    beast::tcp_stream s(std::move(socket));
    beast::flat_buffer buf;
    for (;;) {
        bhttp::request<bhttp::string_body> req;
        s.expires_after(keepalive);
        if (auto [ec, n] = co_await bhttp::async_read(s, buf, req, use_tuple); ec) co_return; // timeout: closed
        auto res = hello(req.version(), req.keep_alive());
        s.expires_after(30s);
        if (auto [ec, n] = co_await bhttp::async_write(s, res, use_tuple); ec) co_return;
    }
}

} // namespace

int main(int argc, char** argv) {
    std::string mode;
    int n = 10000;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "--mode") mode = argv[i + 1];
        else if (a == "--connections") n = std::stoi(argv[i + 1]);
    }
    if (mode != "heartwheel" && mode != "beast") {
        std::cerr << "usage: http_idle --mode heartwheel|beast [--connections N]\n";
        return 2;
    }
    raise_fd_limit();
    forked_clients clients([n](unsigned short port, int up, int) { return run_clients(port, n, up); });
    asio::io_context io(1);
    heartwheel::asio_wheel wheel(io.get_executor());
    net::liveness_config cfg;
    net::liveness_counters counters;
    const net::connection_context ctx(wheel, cfg, &counters);
    http::http_policy policy;
    policy.keepalive_timeout = keepalive;
    tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
    acceptor.listen(4096);
    const long rss_before = rss_kib();
    const double cpu0 = cpu_seconds();
    clients.give_port(acceptor.local_endpoint().port());
    asio::co_spawn(io, [&]() -> asio::awaitable<void> {
        for (;;) {
            auto [ec, socket] = co_await acceptor.async_accept(use_tuple);
            if (ec) co_return;
            socket.set_option(tcp::no_delay(true), ec);
            if (mode == "heartwheel")
                asio::co_spawn(io, serve_heartwheel(http::http_connection<tcp::socket>::create(std::move(socket), ctx, nullptr, policy)),
                               asio::detached);
            else
                asio::co_spawn(io, serve_beast(std::move(socket)), asio::detached);
        }
    }, asio::detached);
    clients.hear(io); // all answered
    const double cpu1 = cpu_seconds();
    const long rss_idle = rss_kib();
    const std::string closed = clients.hear(io); // all closed
    double p50 = 0, p99 = 0, mx = 0, mn = 0;
    int missing = 0;
    std::sscanf(closed.c_str(), "%lf %lf %lf %lf %d", &p50, &p99, &mx, &mn, &missing);
    clients.wait();
    std::printf("{\"mode\":\"%s\",\"connections\":%d,\"bytes_per_idle_connection\":%.0f,\"cpu_us_per_request\":%.2f,"
                "\"close_p50_ms\":%.2f,\"close_p99_ms\":%.2f,\"close_max_ms\":%.2f,\"close_min_ms\":%.3f,\"not_closed\":%d}\n",
                mode.c_str(), n, static_cast<double>(rss_idle - rss_before) * 1024.0 / n, (cpu1 - cpu0) * 1e6 / n, p50, p99,
                mx, mn, missing);
    // A failure: a client not answered or never closed, or heartwheel closing one early.
    return missing == 0 && (mode == "beast" || mn >= 0.0) ? 0 : 1;
}
