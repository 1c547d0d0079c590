// mqtt_server — a subset of an MQTT 3.1.1 broker on heartwheel, for devices that choose their own
// keep-alive: the server closes a client silent for one and a half times the keep-alive it announced
// in its CONNECT (the standard's rule), so each connection has its own dead timeout while the
// liveness settings stay shared. That timeout is the connection's phase deadline
// (connection::expires_after), re-armed when a read brings whole packets: a deadline of the
// connection's own liveness node (no timer or allocation of its own), a store when re-armed within
// its slot, and never early (it counts from the latest time a read's stamp may stand for). Until the CONNECT, the same deadline is the connect
// timeout.
//
//   CONNECT/CONNACK (protocol level 4; keep-alive 0: no timeout unless --max-keep-alive says one)
//   PINGREQ/PINGRESP, SUBSCRIBE/SUBACK (granted QoS 0; '+' and '#'), UNSUBSCRIBE/UNSUBACK
//   PUBLISH fanned out at QoS 0 to every matching subscription (QoS 1 is acknowledged with PUBACK, QoS 2
//   with PUBREC/PUBCOMP; retained messages are not kept), DISCONNECT
//   closes counted by reason: keepalive-timeout, connect-timeout, malformed-packet, packet-too-large,
//   unsupported-protocol, disconnect, and the library's (slow-consumer past the [output] bound, ...)
//
// Usage: mqtt_server [--listen HOST:PORT] [--max-packet BYTES] [--connect-timeout MS] [--max-keep-alive S]
//        [--config FILE] and the library's server flags; prints "listening on HOST:PORT" first, and on
// SIGINT/SIGTERM (a drain over --drain-window) "final closes=<reason>:<n>,... published=<n>
// delivered=<n>" and exits 0.
#include "mqtt_packets.hpp"

#include <heartwheel/asio_wheel.hpp>
#include <heartwheel/net/connection/connection.hpp>
#include <heartwheel/net/connection/connection_with.hpp>
#include <heartwheel/net/server/server_front.hpp>
#include <heartwheel/net/config/server_toml.hpp>
#include <heartwheel/net/tls/tls_socket.hpp>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/experimental/as_tuple.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/use_awaitable.hpp>

#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

namespace net = heartwheel::net;
using tcp = asio::ip::tcp;
using std::chrono::milliseconds;
constexpr auto use_tuple = asio::experimental::as_tuple(asio::use_awaitable);

namespace {

struct broker_limits {
    std::size_t max_packet = 256 * 1024;            ///< header and body; larger: packet-too-large
    milliseconds connect_timeout{10'000};           ///< from the accept to the CONNECT
    std::chrono::seconds max_keep_alive{0};         ///< caps what clients announce; 0: no cap
};

const net::close_reason keep_alive_timeout = net::define_close_reason("keepalive-timeout");
const net::close_reason connect_timeout = net::define_close_reason("connect-timeout");
const net::close_reason malformed = net::define_close_reason("malformed-packet");
const net::close_reason too_large = net::define_close_reason("packet-too-large");
const net::close_reason unsupported = net::define_close_reason("unsupported-protocol");
const net::close_reason client_disconnect = net::define_close_reason("disconnect");

/// How long a client may be silent: 1.5 × its keep-alive (capped by the server's maximum, which also
/// applies to a client asking for none); zero: no limit.
milliseconds dead_timeout(std::uint16_t keep_alive_s, std::chrono::seconds max) {
    std::chrono::seconds k{keep_alive_s};
    if (max.count() > 0 && (k.count() == 0 || k > max)) k = max;
    return milliseconds(k.count() * 1500);
}

template <class Stream>
struct broker;

/// A client over `Stream` (a TCP socket, or net::tls_socket with --tls): the connection's handler,
/// made with it in one heap block (net::make_connection_with). Between packets it holds no read
/// buffer (async_receive lends one per read) and, unless a packet was cut by a read's end, no
/// partial bytes.
template <class Stream>
struct session final : net::connection_handler {
    using connection = net::connection<Stream>;
    session(connection& conn, broker<Stream>& br, const broker_limits& l) : c(conn), b(&br), lim(&l) {}
    connection& c;
    broker<Stream>* b;
    const broker_limits* lim;
    std::vector<std::string> filters;
    std::string partial;             ///< a packet cut by the end of a read
    milliseconds dead_after{0};      ///< 1.5 x the keep-alive (capped); 0: none
    std::uint64_t last_delivery = 0; ///< the publish it was last sent: one copy when filters overlap
    bool connected = false;

    /// The block's count: what a pending read holds.
    std::shared_ptr<session> self() { return {c.shared_from_this(), this}; }
    /// With TLS, the handshake first (under the library's handshake admission and timeout; a failed
    /// one is closed and counted by the connection), then the connect timeout and the reads.
    void start() {
        if constexpr (connection::is_tls) {
            c.async_handshake(asio::ssl::stream_base::server, [s = self()](const heartwheel::error_code& ec) {
                if (!ec) s->begin();
            });
        } else {
            begin();
        }
    }
    void on_close(net::close_reason) override { b->leave(*this); }

private:
    void begin() {
        c.expires_after(lim->connect_timeout, connect_timeout);
        receive();
    }
    void receive() {
        c.stream().async_receive([s = self()](const heartwheel::error_code& ec, net::read_chunk chunk) {
            s->received(ec, chunk.bytes());
        });
    }
    void received(const heartwheel::error_code& ec, std::string_view in);
};

template <class Stream>
struct broker {
    using client = session<Stream>;
    std::map<std::string, std::set<client*>, std::less<>> by_filter;
    std::size_t sessions = 0;
    std::uint64_t published = 0, delivered = 0;

    void subscribe(client& s, std::string_view filter) {
        if (std::find(s.filters.begin(), s.filters.end(), filter) != s.filters.end()) return;
        s.filters.emplace_back(filter);
        by_filter[s.filters.back()].insert(&s);
    }
    void unsubscribe(client& s, std::string_view filter) {
        const auto mine = std::find(s.filters.begin(), s.filters.end(), filter);
        if (mine == s.filters.end()) return;
        s.filters.erase(mine);
        const auto it = by_filter.find(filter);
        it->second.erase(&s);
        if (it->second.empty()) by_filter.erase(it);
    }
    void leave(client& s) {
        while (!s.filters.empty()) unsubscribe(s, std::string(s.filters.back()));
        if (s.connected) --sessions;
        s.connected = false;
    }
    /// One copy to each subscriber of a matching filter. send() never closes inside the call (a slow
    /// consumer's close is posted), so the sets stay valid while they are walked.
    void publish(std::string_view topic, std::string_view payload) {
        const std::uint64_t seq = ++published;
        std::string packet;
        for (const auto& [filter, subscribers] : by_filter) {
            if (!mqtt::matches(filter, topic)) continue;
            if (packet.empty()) packet = mqtt::publish_packet(topic, payload);
            for (client* s : subscribers) {
                if (s->last_delivery == seq) continue;
                s->last_delivery = seq;
                s->c.send(packet);
                ++delivered;
            }
        }
    }
};

/// One packet after the CONNECT (or the CONNECT itself): nothing, or why to close.
template <class Stream>
std::optional<net::close_reason> handle(session<Stream>& s, const mqtt::packet& p) {
    net::connection<Stream>& c = s.c;
    broker<Stream>& b = *s.b;
    const broker_limits& lim = *s.lim;
    if (!s.connected) {
        if (p.type != mqtt::connect || p.flags != 0) return malformed; // the first packet must be a CONNECT
        const auto req = mqtt::parse_connect(p.body);
        if (!req) return malformed;
        if (req->level != 4) {
            c.send(mqtt::connack_packet(1)); // unacceptable protocol level
            return unsupported;
        }
        if (req->client_id.empty() && !req->clean_session) {
            c.send(mqtt::connack_packet(2)); // identifier rejected: a session to resume needs a name
            return malformed;
        }
        s.connected = true;
        ++b.sessions;
        s.dead_after = dead_timeout(req->keep_alive, lim.max_keep_alive);
        c.expires_never(); // the connect timeout; the keep-alive's is armed after this read
        c.send(mqtt::connack_packet(0));
        return std::nullopt;
    }
    mqtt::reader r(p.body);
    switch (p.type) {
    case mqtt::publish: {
        const unsigned qos = (p.flags >> 1) & 0x03u;
        const std::string_view topic = r.text();
        const std::uint16_t id = qos > 0 ? r.u16() : 0;
        const std::string_view payload = r.rest();
        if (qos == 3 || !r.ok() || !mqtt::valid_topic(topic) || (qos > 0 && id == 0)) return malformed;
        b.publish(topic, payload);
        if (qos == 1) c.send(mqtt::ack_packet(mqtt::puback << 4, id));
        if (qos == 2) c.send(mqtt::ack_packet(mqtt::pubrec << 4, id));
        return std::nullopt;
    }
    case mqtt::pubrel: {
        const std::uint16_t id = r.u16();
        if (p.flags != 0x02u || !r.ok() || !r.done()) return malformed;
        c.send(mqtt::ack_packet(mqtt::pubcomp << 4, id));
        return std::nullopt;
    }
    case mqtt::subscribe: {
        const std::uint16_t id = r.u16();
        std::vector<std::uint8_t> granted;
        while (r.ok() && !r.done()) {
            const std::string_view filter = r.text();
            const std::uint8_t qos = r.byte();
            if (!r.ok() || qos > 2) return malformed;
            const bool valid = mqtt::valid_filter(filter);
            if (valid) b.subscribe(s, filter);
            granted.push_back(valid ? 0x00 : 0x80); // QoS 0, or a failure for that filter
        }
        if (p.flags != 0x02u || !r.ok() || granted.empty()) return malformed;
        c.send(mqtt::suback_packet(id, granted));
        return std::nullopt;
    }
    case mqtt::unsubscribe: {
        const std::uint16_t id = r.u16();
        bool any = false;
        while (r.ok() && !r.done()) {
            const std::string_view filter = r.text();
            if (r.ok()) b.unsubscribe(s, filter);
            any = true;
        }
        if (p.flags != 0x02u || !r.ok() || !any) return malformed;
        c.send(mqtt::ack_packet(mqtt::unsuback << 4, id));
        return std::nullopt;
    }
    case mqtt::pingreq:
        if (!p.body.empty()) return malformed;
        c.send(mqtt::pingresp_packet());
        return std::nullopt;
    case mqtt::puback:
    case mqtt::pubrec:
    case mqtt::pubcomp:
        return std::nullopt; // answers to QoS 1 and 2 sends, which this server never makes
    case mqtt::disconnect:
        return client_disconnect;
    default:
        return malformed; // a second CONNECT, a server's packet, or a reserved type
    }
}

// One read's bytes: every whole packet in them handled in order, a cut one kept for the next read.
template <class Stream>
void session<Stream>::received(const heartwheel::error_code& ec, std::string_view in) {
    if (ec) { // a deadline (net::errc::timed_out), the peer, or an I/O error: the connection says which
        c.read_failed(ec);
        return;
    }
    if (!partial.empty()) {
        partial.append(in);
        in = partial;
    }
    std::size_t used = 0;
    bool whole = false;
    for (;;) {
        mqtt::packet p;
        const mqtt::scan found = mqtt::next_packet(in.substr(used), lim->max_packet, p);
        if (found == mqtt::scan::more) break;
        if (found != mqtt::scan::whole) return c.close(found == mqtt::scan::too_large ? too_large : malformed);
        used += p.size;
        whole = true;
        if (const auto why = handle(*this, p)) return c.close(*why);
    }
    if (in.data() == partial.data()) partial.erase(0, used);
    else partial.assign(in.substr(used));
    if (partial.empty()) std::string().swap(partial); // hold nothing between packets
    // A control packet arrived: the client's silence counts from here (the standard's rule).
    if (whole && connected) {
        c.message_received();
        if (dead_after.count() > 0) c.expires_after(dead_after, keep_alive_timeout);
    }
    receive();
}

template <class Stream>
asio::awaitable<void> accept_loop(net::listener& listener, const net::connection_context& ctx, broker<Stream>& b,
                                  const broker_limits& lim, asio::ssl::context* tls) {
    using connection = net::connection<Stream>;
    for (;;) {
        auto [ec, socket] = co_await listener.async_accept(use_tuple);
        if (ec) co_return; // the listener closed (a drain)
        auto make = [&](connection& c) { return session<Stream>(c, b, lim); };
        if constexpr (connection::is_tls)
            net::make_connection_with<connection>(make, Stream(std::move(socket), *tls), ctx)->start();
        else
            net::make_connection_with<connection>(make, std::move(socket), ctx)->start();
    }
}

constexpr const char* usage =
    "usage: mqtt_server [--listen HOST:PORT] [--max-packet BYTES] [--connect-timeout MS] [--max-keep-alive S]\n"
    "                   [--max-connections N] [--drain-window MS] [--config FILE] [--proxy-protocol]\n"
    "                   [--proxy-from CIDRS] [--proxy-timeout MS] [--handover PATH] [--metrics HOST:PORT]\n"
    "                   [--tls CERT KEY] [--max-handshakes N]\n"
    "  --max-packet BYTES     largest packet, header included (default 262144; 16..268435460)\n"
    "  --connect-timeout MS   from the accept to the CONNECT (default 10000; 1..3600000)\n"
    "  --max-keep-alive S     caps a client's keep-alive, also one asking for none (default 0: no cap; 0..65535)\n"
    "  --tls CERT KEY         MQTT over TLS with this certificate chain and key (PEM)\n"
    "a client silent for 1.5 x its keep-alive is closed keepalive-timeout; liveness tables ([output], ...) in --config\n";

} // namespace

template <class Stream>
int serve(const net::server_settings& settings, const net::liveness_config& cfg, const broker_limits& lim,
          asio::ssl::context* tls) {
    asio::io_context io(1);
    heartwheel::asio_wheel wheel(io.get_executor());
    net::liveness_counters counters;
    const net::connection_context ctx(wheel, cfg, &counters);
    broker<Stream> b;
    // Refused at the descriptor limit: closed without a word (MQTT has none before CONNECT).
    const auto front = net::server_front::open(io.get_executor(), settings, "mqtt_server", "", &counters);
    if (!front) return 1;
    // The first signal closes the clients over --drain-window (MQTT 3.1.1 has no server goodbye: they
    // reconnect, spread over the window), then stops.
    front->on_signals([&] { io.stop(); });
    std::cout << front->ready_lines() << std::flush;
    front->serve_metrics(wheel, [&](net::prometheus_writer& out) {
        out.metric("mqtt_sessions", "gauge", "Clients past their CONNECT.", b.sessions);
        out.metric("mqtt_published_total", "counter", "PUBLISH packets received.", b.published);
        out.metric("mqtt_delivered_total", "counter", "PUBLISH packets sent to subscribers.", b.delivered);
    });
    asio::co_spawn(io, accept_loop<Stream>(front->listener(), ctx, b, lim, tls), asio::detached);
    io.run();
    std::cout << "final closes=" << counters.snapshot().closes_text() << " published=" << b.published
              << " delivered=" << b.delivered << std::endl;
    return 0;
}

int main(int argc, char** argv) {
    net::server_settings settings; // --listen, --max-connections, --drain-window, PROXY, --handover, --metrics
    settings.listen = "127.0.0.1:1883";
    net::liveness_config cfg; // no idle or heartbeat policy: MQTT clients ping, and keep-alive is per client
    cfg.connection.activity = net::reader_activity::messages; // whole packets are the activity (message_received)
    broker_limits lim;
    std::optional<std::pair<std::string, std::string>> tls_files; // certificate chain, key
    try {
        for (int i = 1; i < argc; ++i) {
            const std::string a = argv[i];
            const bool has_value = i + 1 < argc;
            if (a == "--config" && has_value) net::load_server_config(argv[++i], settings, cfg);
            else if (a == "--max-packet" && has_value) lim.max_packet = static_cast<std::size_t>(net::parse_count(argv[++i], a, 16, 268'435'460));
            else if (a == "--connect-timeout" && has_value) lim.connect_timeout = milliseconds(net::parse_count(argv[++i], a, 1, 3'600'000));
            else if (a == "--max-keep-alive" && has_value) lim.max_keep_alive = std::chrono::seconds(net::parse_count(argv[++i], a, 0, 65'535));
            else if (a == "--tls" && i + 2 < argc) {
                tls_files.emplace(argv[i + 1], argv[i + 2]);
                i += 2;
            } else if (net::parse_server_flag(argc, argv, i, settings)) continue;
            else if (a == "--help" || a == "-h") {
                std::cout << usage << net::server_flags_help(settings, true);
                return 0;
            } else throw std::invalid_argument("unknown argument '" + a + "' (or a flag without its value): see --help");
        }
        settings.validate();
    } catch (const std::exception& e) {
        std::cerr << "mqtt_server: " << e.what() << '\n';
        return 2;
    }
    std::optional<asio::ssl::context> tls;
    if (tls_files) {
        try {
            tls.emplace(net::server_tls_context(tls_files->first, tls_files->second, "--tls"));
        } catch (const std::exception& e) {
            std::cerr << "mqtt_server: " << e.what() << '\n';
            return 2;
        }
    }
    return tls ? serve<net::tls_socket>(settings, cfg, lim, &*tls) : serve<tcp::socket>(settings, cfg, lim, nullptr);
}
