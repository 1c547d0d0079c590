// chat_server — embedding heartwheel in a fan-out server: every line a client sends goes to every
// other client. The bytes queued for a peer come from the other connections, so only the
// connection's output bound (net::output_policy: a hard limit, and a soft limit held for a time)
// keeps one client that never reads from growing the server without end; past it the client is
// closed "slow-consumer", and the healthy ones lose nothing. The liveness wiring is the block marked
// "liveness"; everything else is the protocol.
//
//   any line      -> to every other client, as is
//   PONG x        -> the answer to our "PING n" (not forwarded)
//   the server says "BYE <reason>" before it closes (reader-idle, heartbeat-timeout, slow-consumer, ...)
//   idle, heartbeat, output limits: from --config FILE (net's liveness tables: [idle], [heartbeat],
//   [output], ...) or the defaults below.
//
// Usage: chat_server [--listen HOST:PORT] [--max-connections N] [--drain-window MS] [--config FILE]; prints "listening on HOST:PORT" first, and
// on SIGINT/SIGTERM "final closes=<reason>:<n>,... lines=<n>" and exits 0.
#include <heartwheel/asio_wheel.hpp>
#include <heartwheel/net/connection/connection.hpp>
#include <heartwheel/net/config/liveness_config.hpp>
#include <heartwheel/net/server/server_front.hpp>
#include <heartwheel/net/config/server_toml.hpp>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/experimental/as_tuple.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read_until.hpp>
#include <asio/use_awaitable.hpp>

#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <string>

namespace net = heartwheel::net;
using tcp = asio::ip::tcp;
using connection = net::connection<tcp::socket>;
constexpr auto use_tuple = asio::experimental::as_tuple(asio::use_awaitable);

namespace {

struct room {
    std::set<std::shared_ptr<connection>> members;
    std::uint64_t lines = 0;

    void broadcast(const connection* from, std::string_view line) {
        ++lines;
        // send() never closes inside the call (a slow consumer's close is posted), so the set stays
        // valid while we walk it.
        for (const auto& m : members)
            if (m.get() != from) m->send(line);
    }
};

asio::awaitable<void> serve(std::shared_ptr<connection> c, room& r) {
    std::string in;
    for (;;) {
        auto [ec, n] = co_await asio::async_read_until(c->stream(), asio::dynamic_buffer(in, 65536), '\n', use_tuple);
        if (ec) { // a policy (net::errc::timed_out), the peer, or an I/O error: the connection says which
            c->read_failed(ec);
            co_return;
        }
        const std::string_view line(in.data(), n);
        if (line.rfind("PONG ", 0) == 0) {
            c->pong_received();
        } else {
            c->message_received();
            r.broadcast(c.get(), line);
        }
        in.erase(0, n);
    }
}

// net::listener's accept ends only when it is closed: at the descriptor limit it refuses and rests.
asio::awaitable<void> listen(net::listener& listener, const net::connection_context& ctx, room& r) {
    for (;;) {
        auto [ec, socket] = co_await listener.async_accept(use_tuple);
        if (ec) co_return;
        // --- liveness: timed, pinging, bounded output, a goodbye, one count per close ---
        auto c = std::make_shared<connection>(std::move(socket), ctx);
        net::connection_hooks hooks;
        hooks.send_ping = [raw = c.get(), n = std::uint64_t{0}]() mutable { raw->send("PING " + std::to_string(++n) + "\n"); };
        hooks.last_words = [raw = c.get()](net::close_reason why) { raw->send(std::string("BYE ") + net::to_string(why) + "\n"); };
        hooks.on_close = [&r, weak = std::weak_ptr<connection>(c)](net::close_reason) { r.members.erase(weak.lock()); };
        c->set_hooks(std::move(hooks)); // keepalive: set from ctx when made
        // --- end of liveness ---
        r.members.insert(c);
        asio::co_spawn(listener.acceptor().get_executor(), serve(std::move(c), r), asio::detached);
    }
}

} // namespace

constexpr const char* usage =
    "usage: chat_server [--listen HOST:PORT] [--max-connections N] [--drain-window MS] [--config FILE]\n"
    "                   [--proxy-protocol] [--proxy-from CIDRS] [--proxy-timeout MS] [--handover PATH]\n"
    "                   [--metrics HOST:PORT]\n"
    "liveness defaults: reader idle 5 min, a PING every 30 s answered within 10 s ([idle], [heartbeat], ... in --config)\n";

int main(int argc, char** argv) {
    net::server_settings settings; // --listen, --max-connections, --drain-window, PROXY, --handover, --metrics
    settings.listen = "127.0.0.1:7200";
    net::liveness_config cfg;
    cfg.idle.reader_idle = std::chrono::minutes(5);
    cfg.heartbeat.interval = std::chrono::seconds(30);
    cfg.heartbeat.timeout = std::chrono::seconds(10);
    cfg.connection.activity = net::reader_activity::messages; // a chat line is activity, a PONG is not
    try {
        for (int i = 1; i < argc; ++i) {
            const std::string a = argv[i];
            if (a == "--config" && i + 1 < argc) net::load_server_config(argv[++i], settings, cfg); // over these defaults
            else if (net::parse_server_flag(argc, argv, i, settings)) continue;
            else if (a == "--help" || a == "-h") {
                std::cout << usage << net::server_flags_help(settings, false);
                return 0;
            } else throw std::invalid_argument("unknown argument '" + a + "': accepted --listen HOST:PORT, --max-connections N, "
                                                  "--drain-window MS, --config FILE, --proxy-protocol, --proxy-from CIDRS, "
                                                  "--proxy-timeout MS, --handover PATH, --metrics HOST:PORT, --help");
        }
        settings.validate();
    } catch (const std::exception& e) {
        std::cerr << "chat_server: " << e.what() << '\n';
        return 2;
    }
    asio::io_context io(1);
    heartwheel::asio_wheel wheel(io.get_executor());
    net::liveness_counters counters;
    // What every connection shares; slow consumers are closed past the configuration's [output] limits.
    const net::connection_context ctx(wheel, cfg, &counters);
    room r;
    // Beyond --max-connections accepting waits for a place; behind a balancer PROXY headers come
    // first; with --handover a predecessor's socket is taken, and this one served for a successor.
    const auto front = net::server_front::open(io.get_executor(), settings, "chat_server", "BYE busy\n", &counters);
    if (!front) return 1;
    // The first signal asks every client to leave (BYE draining) over --drain-window, then stops.
    front->on_signals([&] { io.stop(); });
    std::cout << front->ready_lines() << std::flush;
    front->serve_metrics(wheel, [&](net::prometheus_writer& out) {
        out.metric("chat_members", "gauge", "Members in the room.", r.members.size());
        out.metric("chat_lines_total", "counter", "Lines said in the room.", r.lines);
    });
    asio::co_spawn(io, listen(front->listener(), ctx, r), asio::detached);
    io.run();
    std::cout << "final closes=" << counters.snapshot().closes_text() << " lines=" << r.lines << std::endl;
}
