// heartwheel/net/liveness_config.hpp — all policies of a connection in one struct, loadable from TOML.
//
// A TOML file has one table per policy, keys as the struct fields, durations in milliseconds:
//   [idle]       reader_idle = 30000
//   [heartbeat]  interval = 10000   timeout = 5000   misses = 3   jitter = 0.1
//   [backoff]    strategy = "decorrelated"
// Unknown tables or keys, wrong types and out-of-range values raise config_error naming the key.
// Parsing uses toml++ (Debian's libtomlplusplus-dev).
#ifndef HEARTWHEEL_NET_LIVENESS_CONFIG_HPP
#define HEARTWHEEL_NET_LIVENESS_CONFIG_HPP

#include <heartwheel/net/policies.hpp>

#include <string>
#include <string_view>

namespace heartwheel::net {

struct liveness_config {
    idle_policy idle;
    timeout_policy timeouts;
    heartbeat_policy heartbeat;
    request_policy request;
    backoff_policy backoff;
    server_limits limits;
    keepalive_options keepalive;

    void validate() const;
};

/// Parses TOML text; tables not present keep their defaults.
liveness_config parse_liveness_config(std::string_view toml_text, std::string_view source_name = "config");
/// Reads and parses a file; a missing or unreadable file raises config_error naming it.
liveness_config load_liveness_config(const std::string& path);

backoff_strategy parse_backoff_strategy(std::string_view name, const std::string& field);
const char* to_string(backoff_strategy s) noexcept;

} // namespace heartwheel::net

#endif
