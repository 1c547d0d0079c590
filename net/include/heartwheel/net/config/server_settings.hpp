// heartwheel/net/config/server_settings.hpp — the settings every server takes about its listening side,
// spelled once: where it listens, its admission, its drain, the PROXY protocol, the handover and
// /metrics.
//
// A server keeps one server_settings (with its own defaults: its port, its limits), lets
// parse_server_flag() read the flags (`--listen`, `--max-connections`, `--max-handshakes`,
// `--drain-window`, `--proxy-protocol`, `--proxy-from`, `--proxy-timeout`, `--handover`,
// `--metrics`) and, through server_toml.hpp, the same names as keys of its --config file ('_' for
// '-': `proxy_from = "10.0.0.0/8"`). Both go through set(), so a value is judged the same way
// wherever it is written, and an error names the flag or key, the value and the accepted range.
// listener() gives the net::listener_options they imply; the rest of the listener's options
// (name, refusal, counters) are the server's.
#ifndef HEARTWHEEL_NET_SERVER_SETTINGS_HPP
#define HEARTWHEEL_NET_SERVER_SETTINGS_HPP

#include <heartwheel/net/server/admission.hpp>
#include <heartwheel/net/server/listener.hpp>
#include <heartwheel/net/server/proxy_protocol.hpp>

#include <heartwheel/asio.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace heartwheel::net {

struct server_settings {
    std::string listen = "127.0.0.1:0";           ///< HOST:PORT (checked by endpoint())
    admission_limits admission{100'000};          ///< max_connections, max_handshakes
    std::chrono::milliseconds drain_window{10'000}; ///< 0..10 min; 0 stops at once
    proxy_protocol_options proxy;                 ///< off by default
    std::string handover;                         ///< a Unix socket path, or empty (off)
    std::optional<asio::ip::tcp::endpoint> metrics; ///< where /metrics is served, if anywhere

    /// Sets the setting named `key` ("max_connections" or "max-connections") from `value`, as a flag
    /// (`from_file` false: durations are bare milliseconds) or a config key (durations may carry a
    /// unit: "10s"). Returns false for a key that is not one of these; throws config_error naming
    /// `who` (the flag or "key (in FILE)") for a bad value.
    bool set(std::string_view key, std::string_view value, const std::string& who, bool from_file = false);

    /// Whether `key` is one of these settings ('_' or '-').
    static bool is_key(std::string_view key);
    /// Their config-file names: listen, max_connections, ..., metrics.
    static const char* const* keys() noexcept;
    static std::size_t key_count() noexcept;

    /// The endpoint of `listen` (throws config_error naming --listen).
    asio::ip::tcp::endpoint endpoint() const;
    /// The listener_options these imply: admission, proxy, handover.
    listener_options listener() const;
    /// Throws config_error naming the setting whose value cannot hold (max_handshakes above half
    /// of max_connections is lowered by the admission itself, not refused).
    void validate() const;
};

/// Reads argv[i] when it is one of the settings' flags (its value with it, moving i past it):
/// whether it was. Throws config_error for a missing or bad value.
bool parse_server_flag(int argc, const char* const* argv, int& i, server_settings& s);

/// The --help lines of those flags (and --config), with `s`'s defaults; --max-handshakes only for a
/// server that speaks TLS.
std::string server_flags_help(const server_settings& s, bool tls);

} // namespace heartwheel::net

#endif
