// ws_idle — idle WebSocket connections with keep-alive pings: heartwheel's ws::ws_connection against
// Beast's own timing (websocket::stream<beast::tcp_stream> with stream_base::timeout: an idle timer per
// stream that pings after idle_timeout / 2 of silence and closes after idle_timeout).
//
// The same policy in both: a ping after 1 s without a byte from the peer, dead 2 s after the last one
// (heartwheel: heartbeat interval 1 s, timeout 1 s, one miss). The same server shape in both: one
// thread, a coroutine per connection reading whole messages. The clients are in a child process: each
// upgrades with Beast's client, then answers every ping with a pong of its own, written at once.
//
// What one run of a mode prints (one JSON line):
//  - bytes per idle connection: the server's RSS after N connections went idle, less before any;
//  - CPU per ping round: the server's user+system CPU over a window, per ping the clients received;
//  - wake-ups per second: the server's voluntary context switches over that window (each is a sleep
//    in epoll_wait ended by something due or arriving);
//  - death lateness as the peers see it: the clients stop answering at once; each notes when it sent
//    its last pong and when it saw the server's close; lateness = seen - (last pong + 2 s), p50 / p99 /
//    max, and how many were early. "Seen" twice: when the client's loop read the close (what it adds
//    itself — 10,000 connections on one thread, a cluster of closes read one after another — is in
//    it), and when the close frame arrived, the kernel's receive stamp of its segment (SO_TIMESTAMPNS,
//    as bench/scale/peer_observer.py stamps): a close that is only a FIN (Beast's) carries no stamp.
//    And how the deaths' deadlines cluster (the clients connect in waves, and keep the wave's phase):
//    their span and the most due within one millisecond — the load a server's judgements meet — when
//    the last, unanswered ping arrived after the last pong + 1 s (its kernel stamp: how late pings go), and
//    the server's CPU per death (from the stop until every close was seen: each connection's last,
//    unanswered ping and its close).
// Usage: ws_idle --mode heartwheel|beast [--connections N] [--window-ms MS]. bench/ws/run.sh runs both
// modes, alternated, and writes docs/benchmarks.md's section.
#include <heartwheel/asio_wheel.hpp>
#include <heartwheel/beast/websocket.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/websocket.hpp>

#include "child_pipe.hpp"

#include <malloc.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <optional>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
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
constexpr auto death = 2000ms; // ping after 1 s of silence, dead 1 s later

namespace {

using bench::cpu_seconds;
using bench::forked_clients;
using bench::raise_fd_limit;
using bench::rss_kib;
using bench::voluntary_switches;
using bench::write_all;

// --- the clients (child process) -------------------------------------------------------------------
// Each client upgrades with Beast, then reads the server's frames itself: it answers a ping with a
// masked pong written at once (a non-blocking write of 6 bytes) and notes the moment it began that
// write — when its pong left it, the moment a death is measured from (on loopback the write returns
// only once the server's socket has the segment, stamped: noted after the write, a server counting
// from that stamp could look a few microseconds early). (Beast's client answers
// pings too, but later, as its read goes on: its control callback sees the ping, not the pong
// leave, and with thousands of clients on one thread the pong left up to milliseconds after.)
// Told to stop, it answers nothing more and waits for the server's close frame (heartwheel says
// goodbye with one) or its FIN (Beast's idle timeout tears the connection down without one).
struct client_state {
    steady::time_point last_pong{}, closed_seen{};
    steady::time_point close_arrived{}; ///< the kernel's stamp of the close frame's segment (none: a FIN)
    steady::time_point unanswered_ping{}; ///< the kernel's stamp of the first ping after the stop
    bool stopped = false;
};

// The kernel's receive stamp of what recvmsg returned (wall clock), on the steady clock.
std::optional<steady::time_point> arrival_of(msghdr& msg) {
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_TIMESTAMPNS) continue;
        timespec ts{};
        std::memcpy(&ts, CMSG_DATA(c), sizeof ts);
        const auto real_now = std::chrono::system_clock::now();
        const auto now = steady::now();
        const auto stamped = std::chrono::system_clock::time_point(std::chrono::duration_cast<std::chrono::system_clock::duration>(
            std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec)));
        return now - std::chrono::duration_cast<steady::duration>(real_now - stamped);
    }
    return std::nullopt;
}

asio::awaitable<void> client(tcp::endpoint server, client_state& st, long& pings, int& up) {
    websocket::stream<tcp::socket> s(co_await asio::this_coro::executor);
    if (auto [ec] = co_await s.next_layer().async_connect(server, use_tuple); ec) co_return;
    if (auto [ec] = co_await s.async_handshake("127.0.0.1", "/", use_tuple); ec) co_return;
    ++up;
    // The server's frames are unmasked and, here, only control frames: two header bytes and a short
    // payload. A pong: FIN + opcode 10, masked, empty (a zero mask).
    static constexpr unsigned char pong[] = {0x8A, 0x80, 0, 0, 0, 0};
    std::vector<unsigned char> pending;
    unsigned char chunk[1024];
    const int fd = s.next_layer().native_handle();
    const int on = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on);
    for (bool closed = false, ended = false; !closed && !ended;) {
        if (auto [ec] = co_await s.next_layer().async_wait(tcp::socket::wait_read, use_tuple); ec) break;
        // Everything there, each read with its stamp (the reactor is edge-triggered: read to EAGAIN).
        for (;;) {
            iovec iov{chunk, sizeof chunk};
            alignas(cmsghdr) char control[CMSG_SPACE(sizeof(timespec))];
            msghdr msg{};
            msg.msg_iov = &iov;
            msg.msg_iovlen = 1;
            msg.msg_control = control;
            msg.msg_controllen = sizeof control;
            const ssize_t n = ::recvmsg(fd, &msg, MSG_DONTWAIT);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
            if (n <= 0) {
                ended = true; // the peer's FIN (or an error): no stamp
                break;
            }
            const auto arrived = arrival_of(msg);
            pending.insert(pending.end(), chunk, chunk + n);
            while (pending.size() >= 2 && pending.size() >= 2u + (pending[1] & 0x7fu)) {
                const unsigned op = pending[0] & 0x0fu;
                if (op == 0x8u) {
                    closed = true;
                    if (arrived) st.close_arrived = *arrived;
                }
                if (op == 0x9u && st.stopped && arrived && st.unanswered_ping == steady::time_point{}) st.unanswered_ping = *arrived;
                if (op == 0x9u && !st.stopped) {
                    boost::system::error_code wec;
                    const auto leaving = steady::now();
                    s.next_layer().write_some(asio::buffer(pong), wec);
                    if (!wec) {
                        st.last_pong = leaving;
                        ++pings;
                    }
                }
                pending.erase(pending.begin(), pending.begin() + 2 + (pending[1] & 0x7f));
            }
            if (closed) break;
        }
    }
    st.closed_seen = steady::now();
}

int run_clients(unsigned short port, int n, int to_parent, int from_parent) {
    asio::io_context io(1);
    std::vector<client_state> states(static_cast<std::size_t>(n));
    long pings = 0;
    int up = 0;
    const tcp::endpoint server(asio::ip::make_address("127.0.0.1"), port);
    // Connect in waves of 500: a burst of 10,000 SYNs overflows the listen backlog.
    asio::co_spawn(io, [&]() -> asio::awaitable<void> {
        asio::steady_timer t(io);
        for (int i = 0; i < n; ++i) {
            asio::co_spawn(io, client(server, states[static_cast<std::size_t>(i)], pings, up), asio::detached);
            if (i % 500 == 499) {
                while (up < i + 1 - 100) {
                    t.expires_after(5ms);
                    co_await t.async_wait(use_tuple);
                }
            }
        }
    }, asio::detached);
    while (up < n) io.run_one_for(1s);
    write_all(to_parent, "up\n");
    // "count": report pings so far; "stop": stop answering, then report the deaths.
    for (;;) {
        const std::string word = bench::next_word(io, from_parent); // the connections served meanwhile
        if (word == "count") {
            write_all(to_parent, std::to_string(pings) + "\n");
        } else if (word == "stop") {
            const auto stopped = steady::now();
            const auto until = stopped + death + 10s;
            for (auto& st : states) st.stopped = true;
            for (bool all_closed = false; !all_closed && steady::now() < until;) {
                all_closed = std::all_of(states.begin(), states.end(),
                                         [](const client_state& st) { return st.closed_seen != steady::time_point{}; });
                io.run_for(10ms);
            }
            std::vector<double> late, arrived_late, ping_late;
            // The last ping, unanswered: when it arrived (the kernel's stamp) after the last pong + 1 s.
            for (const auto& st : states)
                if (st.unanswered_ping != steady::time_point{})
                    ping_late.push_back(std::chrono::duration<double, std::milli>(st.unanswered_ping - (st.last_pong + 1s)).count());
            std::sort(ping_late.begin(), ping_late.end());
            int early = 0, missing = 0, unstamped = 0;
            for (const auto& st : states) {
                if (st.closed_seen == steady::time_point{}) {
                    ++missing;
                    std::fprintf(stderr, "ws_idle: a client not closed: last pong %.0f ms before the stop\n",
                                 std::chrono::duration<double, std::milli>(stopped - st.last_pong).count());
                    continue;
                }
                const double l = std::chrono::duration<double, std::milli>(st.closed_seen - (st.last_pong + death)).count();
                if (l < 0) ++early;
                late.push_back(l);
                if (st.close_arrived == steady::time_point{}) ++unstamped;
                else arrived_late.push_back(std::chrono::duration<double, std::milli>(st.close_arrived - (st.last_pong + death)).count());
            }
            // How the deadlines cluster: their span, and the most that fall due within one millisecond.
            std::vector<steady::time_point> due;
            for (const auto& st : states) due.push_back(st.last_pong + death);
            std::sort(due.begin(), due.end());
            std::size_t most = 0;
            for (std::size_t i = 0, j = 0; i < due.size(); ++i) {
                while (due[i] - due[j] > 1ms) ++j;
                most = std::max(most, i - j + 1);
            }
            const double span = due.empty() ? 0.0 : std::chrono::duration<double, std::milli>(due.back() - due.front()).count();
            std::sort(arrived_late.begin(), arrived_late.end());
            const auto arrived_at = [&](double q) {
                return arrived_late.empty() ? -1.0
                                            : arrived_late[std::min(arrived_late.size() - 1, static_cast<std::size_t>(q * static_cast<double>(arrived_late.size())))];
            };
            std::sort(late.begin(), late.end());
            const auto at = [&](double q) { return late.empty() ? -1.0 : late[std::min(late.size() - 1, static_cast<std::size_t>(q * static_cast<double>(late.size())))]; };
            char buf[256];
            std::snprintf(buf, sizeof buf, "%.3f %.3f %.3f %.3f %d %d %.3f %.3f %d %.1f %zu %.3f\n", at(0.5), at(0.99),
                          late.empty() ? -1.0 : late.back(), late.empty() ? 0.0 : late.front(), early, missing, arrived_at(0.5),
                          arrived_at(0.99), unstamped, span, most, ping_late.empty() ? -1.0 : ping_late[ping_late.size() / 2]);
            write_all(to_parent, buf);
            return 0;
        }
    }
}

// --- the server (parent process) -------------------------------------------------------------------
asio::awaitable<void> serve_heartwheel(std::shared_ptr<ws::ws_connection<tcp::socket>> c) {
    if (auto [ec] = co_await c->async_accept(use_tuple); ec) co_return;
    beast::flat_buffer in;
    for (;;) {
        auto [ec, n] = co_await c->async_read(in, use_tuple);
        if (ec) co_return;
        in.consume(n);
    }
}

asio::awaitable<void> serve_beast(tcp::socket socket) {
    websocket::stream<beast::tcp_stream> s(std::move(socket));
    websocket::stream_base::timeout t;
    t.handshake_timeout = 10s;
    t.idle_timeout = death;
    t.keep_alive_pings = true;
    s.set_option(t);
    if (auto [ec] = co_await s.async_accept(use_tuple); ec) co_return;
    beast::flat_buffer in;
    for (;;) {
        auto [ec, n] = co_await s.async_read(in, use_tuple);
        if (ec) co_return;
        in.consume(n);
    }
}

} // namespace

int main(int argc, char** argv) {
    std::string mode;
    int n = 10000;
    long window_ms = 10000;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "--mode") mode = argv[i + 1];
        else if (a == "--connections") n = std::stoi(argv[i + 1]);
        else if (a == "--window-ms") window_ms = std::stol(argv[i + 1]);
    }
    if (mode != "heartwheel" && mode != "beast") {
        std::cerr << "usage: ws_idle --mode heartwheel|beast [--connections N] [--window-ms MS]\n";
        return 2;
    }
    raise_fd_limit();
    forked_clients clients([n](unsigned short port, int up, int down) { return run_clients(port, n, up, down); });
    asio::io_context io(1);
    heartwheel::asio_wheel wheel(io.get_executor());
    net::liveness_config cfg;
    cfg.heartbeat.interval = 1000ms;
    cfg.heartbeat.timeout = 1000ms;
    cfg.heartbeat.misses = 1;
    net::liveness_counters counters;
    const net::connection_context ctx(wheel, cfg, &counters);
    tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
    acceptor.listen(4096);
    const long rss_before = rss_kib();
    const auto heap_before = mallinfo2().uordblks;
    clients.give_port(acceptor.local_endpoint().port());
    asio::co_spawn(io, [&]() -> asio::awaitable<void> {
        for (;;) {
            auto [ec, socket] = co_await acceptor.async_accept(use_tuple);
            if (ec) co_return;
            socket.set_option(tcp::no_delay(true), ec); // as servers do
            if (mode == "heartwheel") {
                auto c = ws::ws_connection<tcp::socket>::create(std::move(socket), ctx);
                asio::co_spawn(io, serve_heartwheel(std::move(c)), asio::detached);
            } else {
                asio::co_spawn(io, serve_beast(std::move(socket)), asio::detached);
            }
        }
    }, asio::detached);
    // Until the clients are up, then a second of settling.
    clients.hear(io);
    io.run_for(1500ms);
    const long rss_idle = rss_kib();
    const double heap_idle = static_cast<double>(mallinfo2().uordblks - heap_before) / n;
    // The window: CPU, wake-ups and pings (counted by the clients).
    clients.say("count");
    const long pings0 = std::stol(clients.hear(io));
    const double cpu0 = cpu_seconds();
    const long sw0 = voluntary_switches();
    io.run_for(std::chrono::milliseconds(window_ms));
    const double cpu1 = cpu_seconds();
    const long sw1 = voluntary_switches();
    clients.say("count");
    const long pings1 = std::stol(clients.hear(io));
    // The deaths.
    const double cpu_stop = cpu_seconds();
    clients.say("stop");
    const std::string deaths = clients.hear(io);
    // What the deaths cost the server: from the stop until every close was seen, its CPU per
    // connection — each one's last ping (unanswered) and its close.
    const double cpu_per_death_us = (cpu_seconds() - cpu_stop) * 1e6 / n;
    double p50 = 0, p99 = 0, mx = 0, mn = 0, arrived_p50 = -1, arrived_p99 = -1;
    double due_span = 0, ping_late_p50 = -1;
    int early = 0, missing = 0, unstamped = 0, most_due = 0;
    std::sscanf(deaths.c_str(), "%lf %lf %lf %lf %d %d %lf %lf %d %lf %d %lf", &p50, &p99, &mx, &mn, &early, &missing, &arrived_p50,
                &arrived_p99, &unstamped, &due_span, &most_due, &ping_late_p50);
    clients.wait();
    // heartwheel's own view of the deaths: how long after the deadline each was judged (the wheel's
    // counters; Beast keeps no such figure).
    const auto snap = counters.snapshot();
    const double judged_mean_ms = snap.deaths ? static_cast<double>(snap.death_lateness_total_us) / 1000.0 / static_cast<double>(snap.deaths) : -1.0;
    const long pings = pings1 - pings0;
    std::printf("{\"mode\":\"%s\",\"connections\":%d,\"bytes_per_idle_connection\":%.0f,\"heap_bytes_per_idle_connection\":%.0f,\"pings\":%ld,"
                "\"cpu_us_per_ping\":%.3f,\"wakeups_per_s\":%.1f,\"death_p50_ms\":%.2f,\"death_p99_ms\":%.2f,"
                "\"death_max_ms\":%.2f,\"death_min_ms\":%.2f,\"early\":%d,\"not_closed\":%d,\"server_judged_mean_ms\":%.2f,"
                "\"death_arrival_p50_ms\":%.2f,\"death_arrival_p99_ms\":%.2f,\"closes_unstamped\":%d,"
                "\"deadlines_span_ms\":%.1f,\"deadlines_most_in_1ms\":%d,\"cpu_us_per_death\":%.2f,\"last_ping_late_p50_ms\":%.2f}\n",
                mode.c_str(), n, static_cast<double>(rss_idle - rss_before) * 1024.0 / n, heap_idle, pings,
                pings > 0 ? (cpu1 - cpu0) * 1e6 / static_cast<double>(pings) : -1.0,
                static_cast<double>(sw1 - sw0) * 1000.0 / static_cast<double>(window_ms), p50, p99, mx, mn, early, missing, judged_mean_ms,
                arrived_p50, arrived_p99, unstamped, due_span, most_due, cpu_per_death_us, ping_late_p50);
    // A failure: nothing pinged, a silent peer never closed, or heartwheel closing one early (Beast's
    // idle timer runs on a grid of idle_timeout / 2: early closes are how it works, reported above).
    return pings > 0 && missing == 0 && (mode == "beast" || early == 0) ? 0 : 1;
}
