// ws_fanout — a WebSocket chat room under load, heartwheel's ws::ws_connection against the same room on
// Beast alone (the shape of Beast's own chat example: a strand per session, a queue of shared messages,
// one write at a time, nothing bounded), both on one io_context run by --threads threads.
//
// The clients (Beast WebSocket clients in a child process, one thread) each send --rate messages a
// second for --seconds, and read everything the room sends them. Every message goes to every other
// member, so the server writes (clients - 1) × clients × rate messages a second; run it beside a
// compile (bench/ws_fanout/run.sh does) and the server falls behind, which is when the two differ:
// Beast queues without bound, heartwheel bounds each reader's queue (slow-consumer) and slows senders
// whose messages its readers have not taken (producer budget). A healthy client must lose nothing.
//
// One run of a mode prints one JSON line: messages sent, expected (each sent message × the others),
// delivered, lost (not delivered within 60 s of the end), clients closed by the server, delivery
// latency p50 / p99 / max (ms, from the sender's clock: same machine), the server's peak and final RSS
// (MiB, above its start) and CPU.
// Usage: ws_fanout --mode heartwheel|beast [--clients N] [--rate R] [--seconds S] [--threads T]
#include <heartwheel/asio_wheel.hpp>
#include <heartwheel/beast/websocket.hpp>
#include <heartwheel/net/server/shards.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/websocket.hpp>

#include "child_pipe.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
namespace net = heartwheel::net;
namespace ws = heartwheel::ws;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

using bench::cpu_seconds;
using bench::forked_clients;
using bench::raise_fd_limit;
using bench::rss_kib;
using bench::write_all;

long long now_us() {
    return std::chrono::duration_cast<std::chrono::microseconds>(steady::now().time_since_epoch()).count();
}

// --- the clients (child process) -------------------------------------------------------------------
struct totals {
    long sent = 0, received = 0, closed = 0, up = 0;
    std::vector<double> latency_ms;
    bool go = false;      ///< every client is up (and in the room): the senders start
    bool sending = true;
};

asio::awaitable<void> client(tcp::endpoint server, int id, int rate, totals& t) {
    auto ex = co_await asio::this_coro::executor;
    auto s = std::make_shared<websocket::stream<tcp::socket>>(ex);
    if (auto [ec] = co_await s->next_layer().async_connect(server, use_tuple); ec) co_return;
    if (auto [ec] = co_await s->async_handshake("127.0.0.1", "/", use_tuple); ec) co_return;
    ++t.up;
    bool open = true;
    // The sender: `rate` a second, from a random phase; each message carries its send time.
    asio::co_spawn(ex, [s, id, rate, &t, &open]() -> asio::awaitable<void> {
        asio::steady_timer timer(co_await asio::this_coro::executor);
        std::mt19937 rng(static_cast<unsigned>(id));
        const auto period = std::chrono::microseconds(1'000'000 / rate);
        while (!t.go) { // a message sent before everyone joined would not reach everyone
            timer.expires_after(10ms);
            co_await timer.async_wait(use_tuple);
        }
        timer.expires_after(std::chrono::microseconds(rng() % static_cast<unsigned>(period.count())));
        for (;;) {
            co_await timer.async_wait(use_tuple);
            if (!t.sending || !open) co_return;
            std::string m = std::to_string(now_us()) + " from " + std::to_string(id) + " ";
            m.resize(96, '.'); // a chat line
            if (auto [ec, n] = co_await s->async_write(asio::buffer(m), use_tuple); ec) co_return;
            ++t.sent;
            timer.expires_at(timer.expiry() + period);
        }
    }, asio::detached);
    beast::flat_buffer in;
    for (;;) {
        auto [ec, n] = co_await s->async_read(in, use_tuple);
        if (ec) break;
        const std::string m = beast::buffers_to_string(in.data());
        in.consume(n);
        ++t.received;
        t.latency_ms.push_back(static_cast<double>(now_us() - std::stoll(m)) / 1000.0);
    }
    open = false;
    if (t.sending) ++t.closed; // the server closed it during the run
}

int run_clients(unsigned short port, int n, int rate, int to_parent, int from_parent) {
    asio::io_context io(1);
    totals t;
    const tcp::endpoint server(asio::ip::make_address("127.0.0.1"), port);
    for (int i = 0; i < n; ++i) asio::co_spawn(io, client(server, i, rate, t), asio::detached);
    while (t.up < n) io.run_one_for(1s);
    io.run_for(200ms); // the server puts the last of them in the room
    t.go = true;
    write_all(to_parent, "up\n");
    // "stop": stop sending; "count": report what arrived so far (the parent asks until it settles).
    for (;;) {
        const std::string word = bench::next_word(io, from_parent); // the connections served meanwhile
        if (word == "stop") {
            t.sending = false;
            write_all(to_parent, "ok\n");
        } else if (word == "count") {
            write_all(to_parent, std::to_string(t.received) + "\n");
        } else if (word == "report") {
            std::sort(t.latency_ms.begin(), t.latency_ms.end());
            const auto at = [&](double q) {
                return t.latency_ms.empty() ? -1.0 : t.latency_ms[std::min(t.latency_ms.size() - 1, static_cast<std::size_t>(q * static_cast<double>(t.latency_ms.size())))];
            };
            char buf[256];
            std::snprintf(buf, sizeof buf, "%ld %ld %ld %.2f %.2f %.2f\n", t.sent, t.received, t.closed, at(0.5), at(0.99),
                          t.latency_ms.empty() ? -1.0 : t.latency_ms.back());
            write_all(to_parent, buf);
            return 0;
        }
    }
}

// --- the room, as each server keeps it ---------------------------------------------------------------
template <class Member>
struct room {
    std::mutex mutex;
    std::set<std::shared_ptr<Member>> members;
    void join(const std::shared_ptr<Member>& m) {
        const std::lock_guard<std::mutex> lock(mutex);
        members.insert(m);
    }
    void leave(const std::shared_ptr<Member>& m) {
        const std::lock_guard<std::mutex> lock(mutex);
        members.erase(m);
    }
    std::vector<std::shared_ptr<Member>> everyone() {
        const std::lock_guard<std::mutex> lock(mutex);
        return {members.begin(), members.end()};
    }
};

// heartwheel: ws_chat_server's session (examples/ws_chat), the library's defaults.
using hw_member = ws::ws_connection<tcp::socket>;
asio::awaitable<void> serve_heartwheel(tcp::socket socket, const net::connection_context& ctx, room<hw_member>& r) {
    auto c = hw_member::create(std::move(socket), ctx);
    if (auto [ec] = co_await c->async_accept(use_tuple); ec) co_return;
    r.join(c);
    beast::flat_buffer in;
    for (;;) {
        auto [ec, n] = co_await c->async_read(in, use_tuple);
        if (ec) break;
        const ws::shared_message m = c->make_message(beast::buffers_to_string(in.data()));
        in.consume(n);
        for (const auto& to : r.everyone())
            if (to != c) to->send(m);
    }
    r.leave(c);
}

// Beast alone: Beast's chat example's shape (a queue of shared messages per session, one write at a
// time, on the session's strand), with Beast's suggested server timeouts.
struct beast_member : std::enable_shared_from_this<beast_member> {
    explicit beast_member(tcp::socket s) : ws(std::move(s)) {}
    websocket::stream<beast::tcp_stream> ws;
    std::vector<std::shared_ptr<const std::string>> queue;
    void send(std::shared_ptr<const std::string> m) {
        asio::post(ws.get_executor(), [self = shared_from_this(), m = std::move(m)]() mutable {
            self->queue.push_back(std::move(m));
            if (self->queue.size() == 1) self->write_next();
        });
    }
    void write_next() {
        ws.async_write(asio::buffer(*queue.front()), [self = shared_from_this()](beast::error_code ec, std::size_t) {
            if (ec) return;
            self->queue.erase(self->queue.begin());
            if (!self->queue.empty()) self->write_next();
        });
    }
};
asio::awaitable<void> serve_beast(std::shared_ptr<beast_member> c, room<beast_member>& r) {
    c->ws.set_option(websocket::stream_base::timeout::suggested(beast::role_type::server));
    if (auto [ec] = co_await c->ws.async_accept(use_tuple); ec) co_return;
    r.join(c);
    beast::flat_buffer in;
    for (;;) {
        auto [ec, n] = co_await c->ws.async_read(in, use_tuple);
        if (ec) break;
        const auto m = std::make_shared<const std::string>(beast::buffers_to_string(in.data()));
        in.consume(n);
        for (const auto& to : r.everyone())
            if (to != c) to->send(m);
    }
    r.leave(c);
}

} // namespace

int main(int argc, char** argv) {
    std::string mode;
    int n = 200, rate = 5, seconds = 20;
    unsigned threads = 4;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "--mode") mode = argv[i + 1];
        else if (a == "--clients") n = std::stoi(argv[i + 1]);
        else if (a == "--rate") rate = std::stoi(argv[i + 1]);
        else if (a == "--seconds") seconds = std::stoi(argv[i + 1]);
        else if (a == "--threads") threads = static_cast<unsigned>(std::stoi(argv[i + 1]));
    }
    if ((mode != "heartwheel" && mode != "beast") || n < 2 || rate < 1 || rate > 1000 || seconds < 1 || threads < 1) {
        std::cerr << "usage: ws_fanout --mode heartwheel|beast [--clients N>=2] [--rate 1..1000] [--seconds S] [--threads T]\n";
        return 2;
    }
    raise_fd_limit();
    forked_clients clients([n, rate](unsigned short port, int up, int down) { return run_clients(port, n, rate, up, down); });

    const long rss_start = rss_kib();
    net::liveness_counters counters;
    net::liveness_config cfg; // the library's defaults (output bound on), as a user starts
    std::optional<net::shards> shards;
    std::optional<asio::io_context> beast_io;
    room<hw_member> hw_room;
    room<beast_member> beast_room;
    asio::io_context& io = mode == "heartwheel"
                               ? (shards.emplace(threads, net::threading::thread_pool, cfg, &counters), (*shards)[0].io_context())
                               : beast_io.emplace(static_cast<int>(threads));
    tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
    acceptor.listen(4096);
    clients.give_port(acceptor.local_endpoint().port());
    asio::co_spawn(acceptor.get_executor(), [&]() -> asio::awaitable<void> {
        for (std::size_t next = 0;; ++next) {
            if (shards) {
                net::shard& s = (*shards)[next % shards->size()];
                auto [ec, socket] = co_await acceptor.async_accept(s.get_executor(), use_tuple);
                if (ec) co_return;
                socket.set_option(tcp::no_delay(true), ec);
                asio::co_spawn(s.get_executor(), serve_heartwheel(std::move(socket), s.context(), hw_room), asio::detached);
            } else {
                auto [ec, socket] = co_await acceptor.async_accept(asio::make_strand(io), use_tuple);
                if (ec) co_return;
                socket.set_option(tcp::no_delay(true), ec);
                auto m = std::make_shared<beast_member>(std::move(socket));
                auto ex = m->ws.get_executor();
                asio::co_spawn(ex, serve_beast(std::move(m), beast_room), asio::detached);
            }
        }
    }, asio::detached);

    // The server's threads run while this one talks to the clients and samples the RSS.
    auto guard = asio::make_work_guard(io);
    std::vector<std::thread> pool;
    for (unsigned i = 0; i < threads; ++i) pool.emplace_back([&io] { io.run(); });
    asio::io_context talk(1);
    clients.hear(talk); // up
    const double cpu0 = cpu_seconds();
    long peak = rss_kib();
    const auto sample_for = [&](std::chrono::milliseconds d) {
        for (const auto end = steady::now() + d; steady::now() < end;) {
            std::this_thread::sleep_for(100ms);
            peak = std::max(peak, rss_kib());
        }
    };
    sample_for(std::chrono::seconds(seconds));
    clients.say("stop");
    clients.hear(talk);
    // Until nothing more arrives for a second (what was queued is delivered), at most 60 s.
    long last = -1;
    for (int i = 0; i < 60; ++i) {
        sample_for(1000ms);
        clients.say("count");
        const long now = std::stol(clients.hear(talk));
        if (now == last) break;
        last = now;
    }
    const double cpu = cpu_seconds() - cpu0;
    clients.say("report");
    const std::string report = clients.hear(talk);
    long sent = 0, received = 0, closed = 0;
    double p50 = 0, p99 = 0, mx = 0;
    std::sscanf(report.c_str(), "%ld %ld %ld %lf %lf %lf", &sent, &received, &closed, &p50, &p99, &mx);
    clients.wait();
    const long rss_end = rss_kib();
    io.stop();
    for (auto& t : pool) t.join();
    const long expected = sent * (n - 1);
    std::printf("{\"mode\":\"%s\",\"connections\":%d,\"rate\":%d,\"seconds\":%d,\"threads\":%u,\"sent\":%ld,\"expected\":%ld,"
                "\"delivered\":%ld,\"lost\":%ld,\"closed\":%ld,\"slow_consumer_closes\":%llu,\"latency_p50_ms\":%.2f,"
                "\"latency_p99_ms\":%.2f,\"latency_max_ms\":%.2f,\"peak_rss_mib\":%.1f,\"end_rss_mib\":%.1f,\"cpu_s\":%.2f}\n",
                mode.c_str(), n, rate, seconds, threads, sent, expected, received, expected - received, closed,
                static_cast<unsigned long long>(counters.snapshot().closes[static_cast<std::size_t>(net::close_reason::slow_consumer)]),
                p50, p99, mx, static_cast<double>(peak - rss_start) / 1024.0, static_cast<double>(rss_end - rss_start) / 1024.0, cpu);
    return received == expected && closed == 0 ? 0 : 1;
}
