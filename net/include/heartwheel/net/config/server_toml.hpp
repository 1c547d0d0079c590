// heartwheel/net/config/server_toml.hpp — a server's --config file: its server settings (server_settings.hpp:
// `listen`, `max_connections`, `drain_window`, `proxy_protocol`, `proxy_from`, `handover`, `metrics`,
// ...) as top-level keys, beside the liveness tables, in one TOML file:
//
//   max_connections = 50000
//   proxy_protocol = true
//   proxy_from = "10.0.0.0/8"
//   drain_window = "5s"
//   [heartbeat]
//   interval = "30s"
//
// Each key goes through server_settings::set(), as its flag does; anything else that is not a
// liveness table (nor one of the application's `own` keys) is refused with its name. Inline: it
// needs toml++ (heartwheel::toml) and the settings (heartwheel::net), not a library of its own.
#ifndef HEARTWHEEL_NET_SERVER_TOML_HPP
#define HEARTWHEEL_NET_SERVER_TOML_HPP

#include <heartwheel/net/config/liveness_toml.hpp>
#include <heartwheel/net/config/server_settings.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace heartwheel::net {

/// Reads `path` into `settings` and `live` (a liveness_config, or a configuration<...> with tables of
/// its own: [http], ...), over the values they hold; validates both. Throws config_error naming the
/// key and the file.
template <class Config>
void load_server_config(const std::string& path, server_settings& settings, Config& live, std::vector<std::string> own = {}) {
    const toml::table doc = load_toml_file(path);
    for (std::size_t i = 0; i < server_settings::key_count(); ++i) own.emplace_back(server_settings::keys()[i]);
    apply_tables(policies_of(live), doc, path, own);
    for (const auto& [key, node] : doc) {
        const std::string k(key.str());
        if (!server_settings::is_key(k)) continue;
        const std::string who = k + " (in " + path + ")";
        std::string text;
        if (auto s = node.template value_exact<std::string>()) text = *s;
        else if (auto b = node.template value_exact<bool>()) text = *b ? "true" : "false";
        else if (auto n = node.template value_exact<std::int64_t>()) text = std::to_string(*n);
        else throw config_error(who, "(not a string, an integer or true/false)", "a string, an integer or true/false", "not valid");
        settings.set(k, text, who, true);
    }
    try {
        settings.validate();
        live.validate();
    } catch (const config_error& e) {
        throw e.in(path);
    }
}

} // namespace heartwheel::net

#endif
