// liveness_config.cpp — TOML tables to policy structs, with errors that name the key.
#include <heartwheel/net/liveness_config.hpp>

#include <toml++/toml.h>

#include <fstream>
#include <functional>
#include <map>
#include <sstream>

namespace heartwheel::net {
namespace {

using setter = std::function<void(const toml::node&, const std::string& key)>;

std::string text_of(const toml::node& n) {
    std::ostringstream os;
    n.visit([&os](const auto& v) { os << v; });
    return os.str();
}

std::int64_t as_int(const toml::node& n, const std::string& key, const char* what) {
    if (auto v = n.value<std::int64_t>(); v && n.is_integer()) return *v;
    throw config_error(key, text_of(n), what);
}

double as_double(const toml::node& n, const std::string& key) {
    if (n.is_integer() || n.is_floating_point()) return *n.value<double>();
    throw config_error(key, text_of(n), "a number");
}

setter ms(milliseconds& f) {
    return [&f](const toml::node& n, const std::string& k) { f = milliseconds(as_int(n, k, "an integer number of milliseconds")); };
}
setter secs(std::chrono::seconds& f) {
    return [&f](const toml::node& n, const std::string& k) { f = std::chrono::seconds(as_int(n, k, "an integer number of seconds")); };
}
setter u32(std::uint32_t& f) {
    return [&f](const toml::node& n, const std::string& k) {
        const auto v = as_int(n, k, "a non-negative integer");
        if (v < 0 || v > 0xffffffffLL) throw config_error(k, std::to_string(v), "0..4294967295");
        f = static_cast<std::uint32_t>(v);
    };
}
setter num(double& f) {
    return [&f](const toml::node& n, const std::string& k) { f = as_double(n, k); };
}
setter flag(bool& f) {
    return [&f](const toml::node& n, const std::string& k) {
        if (!n.is_boolean()) throw config_error(k, text_of(n), "true or false");
        f = *n.value<bool>();
    };
}

void apply_table(const toml::table& t, const std::string& name, const std::map<std::string, setter>& keys) {
    for (const auto& [k, v] : t) {
        const std::string key = name + "." + std::string(k.str());
        auto it = keys.find(std::string(k.str()));
        if (it == keys.end()) {
            std::string known;
            for (const auto& [kn, _] : keys) known += (known.empty() ? "" : ", ") + kn;
            throw config_error(key, "(unknown key)", "one of: " + known);
        }
        it->second(v, key);
    }
}

} // namespace

backoff_strategy parse_backoff_strategy(std::string_view name, const std::string& field) {
    if (name == "grpc") return backoff_strategy::grpc;
    if (name == "full") return backoff_strategy::full;
    if (name == "equal") return backoff_strategy::equal;
    if (name == "decorrelated") return backoff_strategy::decorrelated;
    throw config_error(field, std::string(name), "grpc, full, equal or decorrelated");
}

const char* to_string(backoff_strategy s) noexcept {
    switch (s) {
    case backoff_strategy::grpc: return "grpc";
    case backoff_strategy::full: return "full";
    case backoff_strategy::equal: return "equal";
    case backoff_strategy::decorrelated: return "decorrelated";
    }
    return "grpc";
}

void liveness_config::validate() const {
    idle.validate();
    timeouts.validate();
    heartbeat.validate();
    request.validate();
    backoff.validate();
    limits.validate();
    keepalive.validate();
}

liveness_config parse_liveness_config(std::string_view text, std::string_view source) {
    toml::table root;
    try {
        root = toml::parse(text, source);
    } catch (const toml::parse_error& e) {
        std::ostringstream os;
        os << e.source().begin;
        throw config_error(std::string(source), "line " + os.str(), std::string("valid TOML: ") + std::string(e.description()));
    }
    liveness_config c;
    std::string strategy;
    const std::map<std::string, std::map<std::string, setter>> tables = {
        {"idle", {{"reader_idle", ms(c.idle.reader_idle)}, {"writer_idle", ms(c.idle.writer_idle)},
                  {"all_idle", ms(c.idle.all_idle)}, {"write_progress_is_activity", flag(c.idle.write_progress_is_activity)}}},
        {"timeouts", {{"read_timeout", ms(c.timeouts.read_timeout)}, {"write_timeout", ms(c.timeouts.write_timeout)}}},
        {"heartbeat", {{"interval", ms(c.heartbeat.interval)}, {"timeout", ms(c.heartbeat.timeout)},
                       {"misses", u32(c.heartbeat.misses)}, {"jitter", num(c.heartbeat.jitter)}}},
        {"request", {{"timeout", ms(c.request.timeout)}, {"max_outstanding", u32(c.request.max_outstanding)}}},
        {"backoff", {{"initial", ms(c.backoff.initial)}, {"multiplier", num(c.backoff.multiplier)},
                     {"jitter", num(c.backoff.jitter)}, {"max", ms(c.backoff.max)},
                     {"min_connect_timeout", ms(c.backoff.min_connect_timeout)}, {"stable_after", ms(c.backoff.stable_after)},
                     {"strategy", [&](const toml::node& n, const std::string& k) {
                          if (!n.is_string()) throw config_error(k, "(not a string)", "grpc, full, equal or decorrelated");
                          c.backoff.strategy = parse_backoff_strategy(*n.value<std::string>(), k);
                      }}}},
        {"limits", {{"handshake_timeout", ms(c.limits.handshake_timeout)}, {"max_age", ms(c.limits.max_age)},
                    {"max_age_jitter", num(c.limits.max_age_jitter)}, {"drain_grace", ms(c.limits.drain_grace)}}},
        {"keepalive", {{"enabled", flag(c.keepalive.enabled)}, {"idle", secs(c.keepalive.idle)},
                       {"interval", secs(c.keepalive.interval)}, {"count", u32(c.keepalive.count)},
                       {"user_timeout", ms(c.keepalive.user_timeout)}}},
    };
    for (const auto& [name, node] : root) {
        const std::string table(name.str());
        auto it = tables.find(table);
        if (it == tables.end() || !node.is_table())
            throw config_error(table, "(unknown table)", "idle, timeouts, heartbeat, request, backoff, limits, keepalive");
        apply_table(*node.as_table(), table, it->second);
    }
    c.validate();
    return c;
}

liveness_config load_liveness_config(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw config_error("config", path, "a readable TOML file");
    std::stringstream ss;
    ss << in.rdbuf();
    return parse_liveness_config(ss.str(), path);
}

} // namespace heartwheel::net
