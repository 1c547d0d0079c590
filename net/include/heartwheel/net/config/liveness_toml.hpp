// heartwheel/net/config/liveness_toml.hpp — liveness tables read out of a toml++ document the application
// already parsed (its own config file, with its own tables beside ours).
//
//   toml::table doc = toml::parse_file("server.toml");         // [server] ... [heartbeat] ... [idle] ...
//   auto live = heartwheel::net::parse_liveness_config(doc, "server.toml", {"server"});
//   // or with the tables under a key of its own:  parse_liveness_config(*doc["liveness"].as_table())
//
// Same rules as liveness_config.hpp: durations with units or in the field's unit, keys named in
// errors with the source. The application names its own top-level keys and tables; anything else
// is refused with its name (a misspelled [heartbaet] is not skipped silently). Target heartwheel::toml
// (toml++ is its PUBLIC dependency; nothing else of heartwheel needs it).
#ifndef HEARTWHEEL_NET_LIVENESS_TOML_HPP
#define HEARTWHEEL_NET_LIVENESS_TOML_HPP

#include <heartwheel/net/config/liveness_config.hpp>

#include <toml++/toml.h>

#include <string>
#include <string_view>
#include <vector>

namespace heartwheel::net {

/// Parses TOML text; tables not present keep their defaults.
liveness_config parse_liveness_config(std::string_view toml_text, std::string_view source_name = "config");
/// Reads and parses a file (see read_config_file for what is refused).
liveness_config load_liveness_config(const std::string& path);
/// The same over a program's own defaults: a file holding only [output] keeps the program's
/// heartbeat; each table present sets the keys it names, over `base`. Validated.
liveness_config load_liveness_config(const std::string& path, liveness_config base);

/// A TOML file read and parsed (see read_config_file for what is refused); config_error naming the
/// file, and the line and column of a syntax error.
toml::table load_toml_file(const std::string& path);

/// The names of the liveness tables: idle, timeouts, heartbeat, request, backoff, limits, keepalive.
bool is_liveness_table(std::string_view name) noexcept;

/// Reads every liveness table present in `doc` into `config`, over the values it already holds;
/// does not validate the result (the caller may still override fields, then calls validate()).
/// `own_keys`: the application's own top-level keys and tables, left for it to read; any other key
/// raises config_error naming it and what is accepted.
void apply_liveness_tables(liveness_config& config, const toml::table& doc, std::string_view source = "config",
                           const std::vector<std::string>& own_keys = {});
/// The same for any configuration's tables (a configuration<...> with a layer's or an application's
/// own: apply_tables(policies_of(config), doc, ...)).
void apply_tables(const policy_refs& config, const toml::table& doc, std::string_view source = "config",
                  const std::vector<std::string>& own_keys = {});

/// Defaults, then the tables of `doc`, validated.
liveness_config parse_liveness_config(const toml::table& doc, std::string_view source = "config",
                                      const std::vector<std::string>& own_keys = {});

} // namespace heartwheel::net

#endif
