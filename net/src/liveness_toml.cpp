// liveness_toml.cpp — TOML tables to policy structs (heartwheel::toml), with errors that name the key
// and the source. Each table maps its keys to setters that parse one node into one field; the
// structs' own validate() then judges the values.
#include <heartwheel/net/liveness_toml.hpp>

#include <algorithm>
#include <functional>
#include <map>
#include <sstream>

namespace heartwheel::net {
namespace {

using setter = std::function<void(const toml::node&, const std::string& key)>;

constexpr const char* table_names = "idle, timeouts, heartbeat, request, backoff, limits, keepalive, overload, output";

std::string text_of(const toml::node& n) {
    if (auto s = n.value_exact<std::string>()) return "\"" + *s + "\"";
    std::ostringstream os;
    n.visit([&os](const auto& v) { os << v; });
    return os.str();
}

std::int64_t as_int(const toml::node& n, const std::string& key, const std::string& what) {
    if (auto v = n.value_exact<std::int64_t>()) return *v;
    throw config_error(key, text_of(n), what, "not valid");
}

// A duration: an integer in `unit`, or a string with a unit of its own.
milliseconds as_duration(const toml::node& n, const std::string& key, milliseconds unit, const char* unit_name) {
    if (auto v = n.value_exact<std::int64_t>()) {
        if (*v > 1'000'000'000'000'000LL || *v < -1'000'000'000'000'000LL)
            throw config_error(key, text_of(n), "a duration of at most a year", "out of range");
        return milliseconds(*v * unit.count());
    }
    if (auto s = n.value_exact<std::string>()) return parse_duration(*s, key, milliseconds(0));
    throw config_error(key, text_of(n),
                       std::string("an integer number of ") + unit_name + ", or a string with a unit (\"500ms\", \"30s\", \"2m\")",
                       "not valid");
}

setter ms(milliseconds& f) {
    return [&f](const toml::node& n, const std::string& k) { f = as_duration(n, k, milliseconds(1), "milliseconds"); };
}
setter secs(std::chrono::seconds& f) {
    return [&f](const toml::node& n, const std::string& k) {
        const milliseconds v = as_duration(n, k, milliseconds(1000), "seconds");
        if (v.count() % 1000 != 0) throw config_error(k, text_of(n), "a whole number of seconds", "not valid");
        f = std::chrono::duration_cast<std::chrono::seconds>(v);
    };
}
/// A count with the policy's own range (the one its validate() checks), so a value that does not
/// even fit the field names the range that matters.
setter u32(std::uint32_t& f, std::uint32_t lo, std::uint32_t hi) {
    return [&f, lo, hi](const toml::node& n, const std::string& k) {
        const auto v = as_int(n, k, "an integer " + std::to_string(lo) + ".." + std::to_string(hi));
        if (v < lo || v > hi) throw config_error(k, std::to_string(v), std::to_string(lo) + ".." + std::to_string(hi));
        f = static_cast<std::uint32_t>(v);
    };
}
// A byte size: an integer number of bytes, or a string with a unit ("8MiB").
setter bytes(std::size_t& f) {
    return [&f](const toml::node& n, const std::string& k) {
        if (auto s = n.value_exact<std::string>()) return void(f = parse_size(*s, k));
        const auto v = as_int(n, k, "a size: bytes, or a string with a unit (\"8MiB\")");
        if (v < 0) throw config_error(k, std::to_string(v), "0.." + size_text(output_policy::size_max));
        f = static_cast<std::size_t>(v);
    };
}
setter num(double& f) {
    return [&f](const toml::node& n, const std::string& k) {
        if (!n.is_integer() && !n.is_floating_point()) throw config_error(k, text_of(n), "a number", "not valid");
        f = *n.value<double>();
    };
}
setter flag(bool& f) {
    return [&f](const toml::node& n, const std::string& k) {
        if (!n.is_boolean()) throw config_error(k, text_of(n), "true or false", "not valid");
        f = *n.value<bool>();
    };
}

// A scalable timeout's min: "25%" of its max, or a duration.
setter min_of(scaled_min& f) {
    return [&f](const toml::node& n, const std::string& k) {
        if (auto str = n.value_exact<std::string>(); str && !str->empty() && str->back() == '%') {
            f = parse_scaled_min(*str, k);
            return;
        }
        f = scaled_min{as_duration(n, k, milliseconds(1), "milliseconds"), 0.0};
    };
}

using key_table = std::map<std::string, setter>;

std::map<std::string, key_table> tables_of(liveness_config& c) {
    return {
        {"idle", {{"reader_idle", ms(c.idle.reader_idle)}, {"writer_idle", ms(c.idle.writer_idle)},
                  {"all_idle", ms(c.idle.all_idle)}, {"write_progress_is_activity", flag(c.idle.write_progress_is_activity)}}},
        {"timeouts", {{"read_timeout", ms(c.timeouts.read_timeout)}, {"write_timeout", ms(c.timeouts.write_timeout)}}},
        {"heartbeat", {{"interval", ms(c.heartbeat.interval)}, {"timeout", ms(c.heartbeat.timeout)},
                       {"trigger", [&c](const toml::node& n, const std::string& k) {
                            if (!n.is_string()) throw config_error(k, text_of(n), "\"inbound\" or \"outbound\"", "not valid");
                            c.heartbeat.trigger = parse_heartbeat_trigger(*n.value<std::string>(), k);
                        }},
                       {"misses", u32(c.heartbeat.misses, heartbeat_policy::misses_min, heartbeat_policy::misses_max)}, {"jitter", num(c.heartbeat.jitter)},
                       {"rtt_factor", num(c.heartbeat.rtt_factor)}}},
        {"request", {{"timeout", ms(c.request.timeout)}, {"max_outstanding", u32(c.request.max_outstanding, request_policy::max_outstanding_min, request_policy::max_outstanding_max)}}},
        {"backoff", {{"initial", ms(c.backoff.initial)}, {"multiplier", num(c.backoff.multiplier)},
                     {"jitter", num(c.backoff.jitter)}, {"max", ms(c.backoff.max)},
                     {"min_connect_timeout", ms(c.backoff.min_connect_timeout)}, {"stable_after", ms(c.backoff.stable_after)},
                     {"strategy", [&c](const toml::node& n, const std::string& k) {
                          if (!n.is_string()) throw config_error(k, text_of(n), "grpc, full, equal or decorrelated", "not valid");
                          c.backoff.strategy = parse_backoff_strategy(*n.value<std::string>(), k);
                      }}}},
        {"output", {{"high_water", bytes(c.output.high_water)}, {"low_water", bytes(c.output.low_water)},
                    {"hard_limit", bytes(c.output.hard_limit)}, {"soft_limit", bytes(c.output.soft_limit)},
                    {"soft_limit_time", ms(c.output.soft_limit_time)}}},
        {"limits", {{"handshake_timeout", ms(c.limits.handshake_timeout)}, {"max_age", ms(c.limits.max_age)},
                    {"max_age_jitter", num(c.limits.max_age_jitter)}}},
        {"keepalive", {{"enabled", flag(c.keepalive.enabled)}, {"idle", secs(c.keepalive.idle)},
                       {"interval", secs(c.keepalive.interval)}, {"count", u32(c.keepalive.count, 0, keepalive_options::count_max)},
                       {"user_timeout", ms(c.keepalive.user_timeout)}}},
        {"overload", {{"threshold", num(c.overload.threshold)}, {"reader_idle_min", min_of(c.overload.reader_idle)},
                      {"writer_idle_min", min_of(c.overload.writer_idle)}, {"all_idle_min", min_of(c.overload.all_idle)},
                      {"read_timeout_min", min_of(c.overload.read_timeout)},
                      {"handshake_timeout_min", min_of(c.overload.handshake_timeout)},
                      {"max_age_min", min_of(c.overload.max_age)}}},
    };
}

void apply_table(const toml::table& t, const std::string& name, const key_table& keys) {
    for (const auto& [k, v] : t) {
        const std::string key = name + "." + std::string(k.str());
        auto it = keys.find(std::string(k.str()));
        if (it == keys.end()) {
            std::string known;
            for (const auto& [kn, _] : keys) known += (known.empty() ? "" : ", ") + kn;
            throw config_error(key, "(unknown key)", "one of: " + known, "not valid");
        }
        it->second(v, key);
    }
}

toml::table parse_toml(std::string_view text, std::string_view source) {
    try {
        return toml::parse(text, source);
    } catch (const toml::parse_error& e) {
        std::ostringstream os;
        os << source << ": invalid TOML at line " << e.source().begin.line << ", column " << e.source().begin.column
           << ": " << e.description();
        throw config_error(std::string(source), os.str());
    }
}

} // namespace

bool is_liveness_table(std::string_view name) noexcept {
    for (const char* t : {"idle", "timeouts", "heartbeat", "request", "backoff", "limits", "keepalive", "overload", "output"})
        if (name == t) return true;
    return false;
}

void apply_liveness_tables(liveness_config& c, const toml::table& doc, std::string_view source,
                           const std::vector<std::string>& own_keys) {
    const std::string src(source);
    const auto tables = tables_of(c);
    try {
        for (const auto& [name, node] : doc) {
            const std::string table(name.str());
            auto it = tables.find(table);
            if (it == tables.end()) {
                if (std::find(own_keys.begin(), own_keys.end(), table) != own_keys.end()) continue;
                std::string accepted = table_names;
                for (const auto& k : own_keys) accepted += ", " + k;
                throw config_error(table, "(unknown key)", accepted, "not valid");
            }
            if (!node.is_table()) throw config_error(table, text_of(node), std::string("a table [") + table + "]", "not valid");
            const auto& t = *node.as_table();
            const milliseconds initial_before = c.backoff.initial;
            apply_table(t, table, it->second);
            // backoff.max alone: an initial delay above it (the default 1 s) follows it down.
            if (table == "backoff" && t.contains("max") && !t.contains("initial") && initial_before > c.backoff.max &&
                c.backoff.max.count() > 0)
                c.backoff.initial = c.backoff.max;
        }
    } catch (const config_error& e) {
        throw e.in(src);
    }
}

liveness_config parse_liveness_config(const toml::table& doc, std::string_view source,
                                      const std::vector<std::string>& own_keys) {
    liveness_config c;
    apply_liveness_tables(c, doc, source, own_keys);
    try {
        c.validate();
    } catch (const config_error& e) {
        throw e.in(std::string(source));
    }
    return c;
}

liveness_config parse_liveness_config(std::string_view text, std::string_view source) {
    return parse_liveness_config(parse_toml(text, source), source);
}

liveness_config load_liveness_config(const std::string& path) {
    return parse_liveness_config(read_config_file(path), path);
}

} // namespace heartwheel::net
