// options.hpp — echo_server and echo_client options: CLI11 flags, each also settable in a TOML file
// given with --config (keys are the flag names with '_' for '-'); the file may also hold net's
// liveness tables ([idle], [heartbeat], [backoff], ...), read by heartwheel::net's loader. Precedence:
// flags, then the file's keys, then its tables, then defaults. Durations take units everywhere
// ("30s", "500ms", "2m"; a bare number is milliseconds). Liveness values are range-checked by
// net's policies only (one set of ranges). parse_*() throws usage_error with a one-line message
// naming the flag or key, the value and the accepted range; main() prints it and exits 2.
#ifndef HEARTWHEEL_ECHO_OPTIONS_HPP
#define HEARTWHEEL_ECHO_OPTIONS_HPP

#include <heartwheel/net/server/admission.hpp>
#include <heartwheel/net/server/handshake_gate.hpp>
#include <heartwheel/net/server/proxy_protocol.hpp>
#include <heartwheel/net/config/liveness_config.hpp>
#include <heartwheel/net/tls/tls_socket.hpp>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace echo {

struct usage_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};
/// --help was asked for: the text to print, exit 0.
struct help_requested {
    std::string text;
};

struct endpoint_spec {
    std::string host;
    std::uint16_t port = 0;
    std::string text() const { return host + ":" + std::to_string(port); }
};

struct server_options {
    endpoint_spec listen{"127.0.0.1", 7000};
    heartwheel::net::liveness_config live; ///< idle, heartbeat, limits, timeouts
    std::int64_t tick_ms = 1;
    unsigned threads = 1;
    /// --io-threads: one io_context run by this many threads, with a shard (a strand, its wheel and
    /// the connections it times) per thread: the thread-pool model. 0: an io_context per --threads.
    unsigned io_threads = 0;
    /// How many workers (shards) serve connections, in either model.
    unsigned workers() const noexcept { return io_threads > 0 ? io_threads : threads; }
    /// --timers: "wheel" (net's liveness), or a timing registered by that name (timing.hpp).
    std::string timers = "wheel";
    std::size_t max_line = 65536;
    std::size_t max_connections = 100000;
    bool tls = false;
    std::string cert, key;
    /// TLS 1.2 suites and key-exchange groups: the library's server policy (net::tls_policy: AEAD
    /// suites, elliptic-curve groups only) unless --tls-ciphers / --tls-groups say otherwise.
    heartwheel::net::tls_policy tls_policy;
    /// TLS handshakes in progress at once (the listener's admission: a handshake takes a place when its
    /// peer first speaks, beyond it queues; one stalled for handshake_stall_ms is shed while it holds
    /// what others wait for).
    std::size_t max_handshakes = heartwheel::net::admission_limits{}.max_handshakes;
    std::int64_t handshake_stall_ms = heartwheel::net::admission_limits{}.handshake_stall.count();
    /// Handshakes in progress per source, started per second per source (net::handshake_gate); split
    /// evenly between the --threads.
    heartwheel::net::handshake_limits handshakes;
    /// Connections one address holds before the rest is its excess (net::source_share; 0 = off):
    /// the excess does not count towards overload pressure, and at --max-connections a newcomer from
    /// an address within its share displaces the newest connection of the address furthest over it.
    /// By default (auto_share) a tenth of max_connections: one address alone cannot move anyone's
    /// timeouts nor hold every place (effective_source_share()).
    static constexpr std::size_t auto_share = static_cast<std::size_t>(-1);
    std::size_t source_share = auto_share;
    std::size_t effective_source_share() const noexcept {
        if (source_share != auto_share) return source_share;
        return max_connections / 10 > 0 ? max_connections / 10 : 1;
    }
    /// Behind a balancer: every connection starts with a PROXY header (v1 or v2) from one of the
    /// trusted ranges, and the address it names is the client's (net::proxy_protocol_options).
    heartwheel::net::proxy_protocol_options proxy;
    std::int64_t stats_interval_ms = 0;
    std::optional<endpoint_spec> metrics;
    std::int64_t shutdown_grace_ms = 2000;
    /// On the first SIGINT/SIGTERM, connections are asked to leave (BYE draining <ms>) spread over
    /// this window (net/server/drain.hpp) before the shutdown; 0: straight to the shutdown.
    std::int64_t drain_window_ms = 10'000;
    /// SO_REUSEPORT on the listening socket: several server processes share one port (the kernel
    /// spreads connections over them), to serve more connections than one process has descriptors.
    bool reuse_port = false;
    /// A Unix socket path: at start the listening sockets of the process serving it are taken over
    /// (net::inherited_listeners), then this process serves it for its own successor
    /// (net::handover_server), which makes it drain. Empty: off.
    std::string handover;
};

struct client_options {
    endpoint_spec connect{"127.0.0.1", 7000};
    unsigned connections = 1;
    std::int64_t send_interval_ms = 1000;
    std::size_t payload = 32;
    std::int64_t duration_ms = 10000;
    bool answer_pings = true;
    bool tls = false;
    std::string ca;
    bool insecure = false;
    bool reconnect = false;
    heartwheel::net::liveness_config live; ///< request timeout, backoff
    bool quiet = false;
    bool verbose = false; ///< log connects, closes and reconnect waits on stderr
    std::int64_t connect_stagger_us = 0; ///< spread the initial connects
    /// At most this many connections in their first attempt at once (0: all): a closed loop of
    /// connects, the next begun as one is established or fails (a server's sustained handshake rate).
    unsigned connect_window = 0;
    /// The summary's timeline: first establishments counted per bin of this many ms (0: none).
    std::int64_t timeline_ms = 0;
    /// Local addresses to connect from, round robin over the connections (empty: the kernel's
    /// choice). Each source address has its own ~28,000 ephemeral ports towards one server.
    std::vector<std::string> sources;
};

/// "127.0.0.2,127.0.0.5-127.0.0.9,::1" → each address (IPv4 ranges expanded, at most 65,536 in all).
std::vector<std::string> parse_sources(const std::string& text, const std::string& who);

server_options parse_server_options(int argc, const char* const* argv);
client_options parse_client_options(int argc, const char* const* argv);
endpoint_spec parse_endpoint(const std::string& text, const std::string& flag);

} // namespace echo

#endif
