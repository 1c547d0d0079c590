// heartwheel/net/liveness_config.hpp — all policies of a connection in one struct, loadable from TOML.
//
// A TOML document has one table per policy, keys as the struct fields:
//   [idle]       reader_idle = "30s"
//   [heartbeat]  interval = "10s"   timeout = 5000   misses = 3   jitter = 0.1
//   [backoff]    strategy = "decorrelated"   max = "2m"
//   [overload]   threshold = 0.8   reader_idle_min = "5s"   max_age_min = "25%"
//   [output]     hard_limit = "8MiB"   soft_limit = "2MiB"   soft_limit_time = "10s"
// A duration is a string with a unit ("500ms", "30s", "2m", "1h") or an integer in the field's unit:
// milliseconds, except keepalive.idle and keepalive.interval (seconds). A string without a unit, a
// number where a string belongs, unknown tables or keys and out-of-range values raise config_error
// naming the key and the source. Tables not present keep their defaults (or the values already in
// the struct, for apply_liveness_tables in liveness_toml.hpp, which also reads the tables out of a
// larger document of the application's own). Setting backoff.max alone lowers backoff.initial to it
// when the default initial is larger. Reading TOML is heartwheel/net/liveness_toml.hpp's
// (parse_liveness_config, load_liveness_config; target heartwheel::toml, which brings toml++): this
// header and the policies need no TOML library.
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
    overload_policy overload;
    output_policy output; ///< net::connection_options::output (the connection's queue, not its timers)

    void validate() const;
};

/// The text of a config file. Raises config_error (field `what`) with a message naming the path when
/// it does not exist, cannot be read, is a directory, a device or anything but a regular file, or is
/// empty (an empty config is almost always a mistake: a truncated or wrong file).
std::string read_config_file(const std::string& path, const std::string& what = "config");

backoff_strategy parse_backoff_strategy(std::string_view name, const std::string& field);
const char* to_string(backoff_strategy s) noexcept;

} // namespace heartwheel::net

#endif
