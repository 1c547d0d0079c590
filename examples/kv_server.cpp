// kv_server — embedding heartwheel in a coroutine server: a line-based key-value store whose
// blocking WAIT uses net's request timeouts. The liveness wiring is the block marked "liveness";
// everything else is the protocol.
//
//   SET key value   -> OK                 GET key  -> VALUE value | NONE
//   WAIT key ms     -> VALUE value (when another client SETs key) | TIMEOUT (after ms)
//   QUIT            -> BYE quit
//   idle, heartbeat, timeouts: from --config FILE (net's liveness tables) or the defaults below;
//   the server says "BYE <reason>" before it closes. Its own knob, [kv] max_commands (--max-commands),
//   extends the library's configuration (kv_policy.hpp): one file, one validation.
//
// Usage: kv_server [--listen HOST:PORT] [--max-commands N] [--max-connections N] [--drain-window MS] [--config FILE] ...
// (--help lists them all: net::server_settings); prints "listening on HOST:PORT" first.
#include <heartwheel/asio_wheel.hpp>
#include <heartwheel/net/connection/connection.hpp>
#include <heartwheel/net/config/liveness_config.hpp>
#include <heartwheel/net/server/server_front.hpp>
#include <heartwheel/net/config/server_toml.hpp>

#include "kv_policy.hpp"

#include <asio/experimental/as_tuple.hpp>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read_until.hpp>
#include <asio/use_awaitable.hpp>

#include <csignal>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>

namespace net = heartwheel::net;
using tcp = asio::ip::tcp;
using connection = net::connection<tcp::socket>;
constexpr auto use_tuple = asio::experimental::as_tuple(asio::use_awaitable);

namespace {

/// The store, and who waits for which key (each waiter is a tracked request of its connection).
struct store {
    struct waiter {
        std::weak_ptr<connection> conn;
        std::uint64_t request;
    };
    std::map<std::string, std::string> values;
    std::multimap<std::string, waiter> waiters;

    void forget(const std::string& key, const connection* c, std::uint64_t request) {
        auto [first, last] = waiters.equal_range(key);
        for (auto it = first; it != last; ++it)
            if (it->second.request == request && it->second.conn.lock().get() == c) return void(waiters.erase(it));
    }

    void set(const std::string& key, std::string value) {
        values[key] = std::move(value);
        auto [first, last] = waiters.equal_range(key);
        for (auto it = first; it != last; ++it)
            if (auto c = it->second.conn.lock()) c->requests().complete(it->second.request);
        waiters.erase(first, last);
    }
};

const net::close_reason max_commands = net::define_close_reason("max-commands");

asio::awaitable<void> serve(std::shared_ptr<connection> c, store& db, kv_policy policy) {
    std::string in;
    std::uint64_t next_request = 0;
    for (std::uint32_t commands = 1;; ++commands) {
        if (policy.max_commands != 0 && commands > policy.max_commands) {
            c->close(max_commands); // its goodbye says BYE max-commands after the last answer
            co_return;
        }
        auto [ec, n] = co_await asio::async_read_until(c->stream(), asio::dynamic_buffer(in, 4096), '\n', use_tuple);
        if (ec) { // a policy (net::errc::timed_out), the peer, or an I/O error: the connection says which
            c->read_failed(ec);
            co_return;
        }
        std::istringstream line(in.substr(0, n - 1));
        in.erase(0, n);
        std::string cmd, key, value;
        line >> cmd >> key;
        if (cmd == "SET" && std::getline(line >> std::ws, value)) {
            db.set(key, value);
            c->send("OK\n");
        } else if (cmd == "GET") {
            auto it = db.values.find(key);
            c->send(it == db.values.end() ? std::string("NONE\n") : "VALUE " + it->second + "\n");
        } else if (std::int64_t ms = 0; cmd == "WAIT" && line >> ms && ms > 0) {
            const auto id = ++next_request;
            db.waiters.insert({key, {c, id}});
            auto [wec, state] = co_await c->requests().track(id, std::chrono::milliseconds(ms), use_tuple);
            db.forget(key, c.get(), id); // a SET removed it already; a timeout or a close did not
            if (wec == net::errc::timed_out) c->send("TIMEOUT\n");
            else if (!wec) c->send("VALUE " + db.values[key] + "\n");
            else co_return; // the connection closed while waiting
        } else if (cmd == "QUIT") {
            c->close(net::define_close_reason("quit"));
            co_return;
        } else {
            c->send("ERROR unknown command\n");
        }
    }
}

// net::listener's accept ends only when it is closed: at the descriptor limit it refuses and rests.
asio::awaitable<void> listen(net::listener& listener, const net::connection_context& ctx, store& db, kv_policy policy) {
    for (;;) {
        auto [ec, socket] = co_await listener.async_accept(use_tuple);
        if (ec) co_return;
        // --- liveness: a connection that times itself, pings, says goodbye and counts its close ---
        auto c = std::make_shared<connection>(std::move(socket), ctx);
        net::connection_hooks hooks;
        hooks.send_ping = [raw = c.get()] { raw->send("PING\n"); };
        hooks.last_words = [raw = c.get()](net::close_reason r) { raw->send(std::string("BYE ") + net::to_string(r) + "\n"); };
        c->set_hooks(std::move(hooks)); // keepalive: set from ctx when made
        // --- end of liveness ---
        asio::co_spawn(listener.acceptor().get_executor(), serve(std::move(c), db, policy), asio::detached);
    }
}

} // namespace

constexpr const char* usage =
    "usage: kv_server [--listen HOST:PORT] [--max-commands N] [--max-connections N] [--drain-window MS] [--config FILE]\n"
    "                 [--proxy-protocol] [--proxy-from CIDRS] [--proxy-timeout MS] [--handover PATH]\n"
    "                 [--metrics HOST:PORT]\n"
    "liveness defaults: reader idle 60 s, a PING every 20 s ([idle], [heartbeat], [request], ... in --config)\n";

/// kv_server's flags that set a field of its configuration ([kv] max_commands in --config).
const std::initializer_list<net::field_flag> kv_flags = {{"--max-commands", "kv.max_commands"}};

int main(int argc, char** argv) {
    net::server_settings settings; // --listen, --max-connections, --drain-window, PROXY, --handover, --metrics
    settings.listen = "127.0.0.1:7100";
    net::configuration<kv_slot> cfg; // the library's tables and [kv]
    cfg.idle.reader_idle = std::chrono::seconds(60);
    cfg.heartbeat.interval = std::chrono::seconds(20);
    try {
        for (int i = 1; i < argc; ++i) {
            const std::string a = argv[i];
            if (a == "--config" && i + 1 < argc) net::load_server_config(argv[++i], settings, cfg); // over these defaults
            else if (net::parse_server_flag(argc, argv, i, settings)) continue;
            else if (net::parse_field_flag(argc, argv, i, net::policies_of(cfg), kv_flags)) continue;
            else if (a == "--help" || a == "-h") {
                std::cout << usage << net::field_flags_help(net::policies_of(cfg), kv_flags)
                          << net::server_flags_help(settings, false);
                return 0;
            } else throw std::invalid_argument("unknown argument '" + a + "': accepted --listen HOST:PORT, --max-commands N, --max-connections N, "
                                                  "--drain-window MS, --config FILE, --proxy-protocol, --proxy-from CIDRS, "
                                                  "--proxy-timeout MS, --handover PATH, --metrics HOST:PORT, --help");
        }
        settings.validate();
        cfg.validate();
    } catch (const std::exception& e) {
        std::cerr << "kv_server: " << e.what() << '\n';
        return 2;
    }
    asio::io_context io(1);
    heartwheel::asio_wheel wheel(io.get_executor());
    net::liveness_counters counters;
    // What every connection shares: a client that never reads its replies is closed past the
    // configuration's [output] limits.
    const net::connection_context ctx(wheel, cfg, &counters);
    store db;
    // Beyond --max-connections accepting waits for a place; behind a balancer PROXY headers come
    // first; with --handover a predecessor's socket is taken, and this one served for a successor.
    const auto front = net::server_front::open(io.get_executor(), settings, "kv_server", "BYE busy\n", &counters);
    if (!front) return 1;
    // The first signal asks every client to leave (BYE draining) over --drain-window, then stops.
    front->on_signals([&] { io.stop(); });
    std::cout << front->ready_lines() << std::flush;
    front->serve_metrics(wheel, [&](net::prometheus_writer& out) {
        out.metric("kv_keys", "gauge", "Keys in the store.", db.values.size());
    });
    asio::co_spawn(io, listen(front->listener(), ctx, db, cfg.kv), asio::detached);
    io.run();
    const auto s = counters.snapshot();
    std::cout << "closed " << s.closes_total() << " connections\n";
}
