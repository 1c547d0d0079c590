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
#include <heartwheel/net/connection.hpp>
#include <heartwheel/net/liveness_config.hpp>
#include <heartwheel/net/liveness_toml.hpp>
#include <heartwheel/net/drain.hpp>
#include <heartwheel/net/handover.hpp>
#include <heartwheel/net/listener.hpp>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/experimental/as_tuple.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read_until.hpp>
#include <asio/signal_set.hpp>
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
    "  --listen HOST:PORT  where to listen (default 127.0.0.1:7200; port 0 picks one)\n"
    "  --max-connections N open at once, 1..10000000 (default 100000); beyond, newcomers wait in the backlog\n"
    "  --drain-window MS   on SIGINT/SIGTERM, ask clients to leave (BYE draining) over this long, then stop\n"
    "                      (default 10000; 0 = stop at once); a second signal stops at once\n"
    "  --config FILE       liveness tables ([idle], [heartbeat], [output], ...) over the defaults:\n"
    "                      reader idle 5 min, a PING every 30 s answered within 10 s";

int main(int argc, char** argv) {
    std::string listen_on = "127.0.0.1:7200";
    asio::ip::tcp::endpoint endpoint;
    std::size_t max_connections = 100'000;
    std::chrono::milliseconds drain_window{10'000};
    net::proxy_protocol_options proxy;
    std::string handover; // --handover: a restart that refuses no connect
    net::liveness_config cfg;
    cfg.idle.reader_idle = std::chrono::minutes(5);
    cfg.heartbeat.interval = std::chrono::seconds(30);
    cfg.heartbeat.timeout = std::chrono::seconds(10);
    try {
        for (int i = 1; i < argc; ++i) {
            const std::string a = argv[i];
            if (a == "--listen" && i + 1 < argc) listen_on = argv[++i];
            else if (a == "--max-connections" && i + 1 < argc) max_connections = net::parse_count(argv[++i], a, 1, 10'000'000);
            else if (a == "--drain-window" && i + 1 < argc)
                drain_window = std::chrono::milliseconds(net::parse_count(argv[++i], a, 0, 600'000));
            else if (a == "--config" && i + 1 < argc) cfg = net::load_liveness_config(argv[++i], cfg); // over these defaults
            else if (net::parse_proxy_flag(argc, argv, i, proxy)) continue;
            else if (net::parse_handover_flag(argc, argv, i, handover)) continue;
            else if (a == "--help" || a == "-h") {
                std::cout << usage << '\n' << net::proxy_flags_help << net::handover_flag_help;
                return 0;
            } else throw std::invalid_argument("unknown argument '" + a + "': accepted --listen HOST:PORT, --max-connections N, "
                                                  "--drain-window MS, --config FILE, --proxy-protocol, "
                                                  "--proxy-from CIDRS, --proxy-timeout MS, --handover PATH, --help");
        }
        endpoint = net::parse_endpoint(listen_on, "--listen");
    } catch (const std::exception& e) {
        std::cerr << "chat_server: " << e.what() << '\n';
        return 2;
    }
    asio::io_context io(1);
    heartwheel::asio_wheel wheel(io.get_executor());
    net::liveness_counters counters;
    net::connection_options opts;
    opts.reads_are_idle_activity = false; // a chat line is activity, a PONG is not
    // What every connection shares; slow consumers are closed past the configuration's [output] limits.
    const net::connection_context ctx(wheel, cfg, &counters, nullptr, opts);
    room r;
    net::listener_options lo;
    lo.name = "chat_server";
    lo.refusal = "BYE busy\n";
    lo.counters = &counters;
    lo.admission.max_connections = max_connections; // beyond: accepting waits for a place
    lo.proxy = proxy;                               // behind a balancer: PROXY headers first
    lo.handover = handover;                         // a predecessor's socket, and this one's for a successor
    std::optional<net::listener> listener;
    try {
        listener.emplace(io.get_executor(), endpoint, lo);
    } catch (const net::listen_error& e) {
        std::cerr << "chat_server: " << e.what() << '\n';
        return 1;
    }
    asio::signal_set signals(io, SIGINT, SIGTERM); // before the first line: a supervisor may signal at once
    std::cout << "listening on " << listener->local_address() << std::endl;
    // The first signal asks every client to leave (BYE draining) over --drain-window, then stops.
    net::drain_on_signals(signals, *listener, io.get_executor(), drain_window, [&] { io.stop(); });
    asio::co_spawn(io, listen(*listener, ctx, r), asio::detached);
    io.run();
    std::cout << "final closes=" << counters.snapshot().closes_text() << " lines=" << r.lines << std::endl;
}
