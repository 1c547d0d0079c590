// heartwheel/net/liveness_toml.hpp — liveness tables read out of a toml++ document the application
// already parsed (its own config file, with its own tables beside ours).
//
//   toml::table doc = toml::parse_file("server.toml");         // [server] ... [heartbeat] ... [idle] ...
//   auto live = heartwheel::net::parse_liveness_config(doc, "server.toml", other_keys::ignore);
//   // or with the tables under a key of its own:  parse_liveness_config(*doc["liveness"].as_table())
//
// Same rules as liveness_config.hpp: durations with units or in the field's unit, keys named in
// errors with the source. Links toml++ (a PUBLIC dependency of heartwheel::net).
#ifndef HEARTWHEEL_NET_LIVENESS_TOML_HPP
#define HEARTWHEEL_NET_LIVENESS_TOML_HPP

#include <heartwheel/net/liveness_config.hpp>

#include <toml++/toml.h>

#include <string_view>

namespace heartwheel::net {

/// What to do with keys of the document that are not liveness tables.
enum class other_keys { reject, ignore };

/// The names of the liveness tables: idle, timeouts, heartbeat, request, backoff, limits, keepalive.
bool is_liveness_table(std::string_view name) noexcept;

/// Reads every liveness table present in `doc` into `config`, over the values it already holds;
/// does not validate the result (the caller may still override fields, then calls validate()).
void apply_liveness_tables(liveness_config& config, const toml::table& doc, std::string_view source = "config",
                           other_keys others = other_keys::reject);

/// Defaults, then the tables of `doc`, validated.
liveness_config parse_liveness_config(const toml::table& doc, std::string_view source = "config",
                                      other_keys others = other_keys::reject);

} // namespace heartwheel::net

#endif
