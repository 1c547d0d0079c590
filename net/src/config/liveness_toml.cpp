// liveness_toml.cpp — TOML tables to policy structs (heartwheel::toml), with errors that name the key
// and the source. A table is a registered policy's (liveness_config.hpp), a key one of its fields
// (find_field), read by the field's kind; the policies' validate() then judges the values.
#include <heartwheel/net/config/liveness_toml.hpp>

#include <algorithm>
#include <sstream>

namespace heartwheel::net {
namespace {

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

// A duration's TOML forms: an integer in the field's unit, or a string with a unit of its own.
double duration_of(const toml::node& n, const config_field& f, const std::string& key) {
    if (auto v = n.value_exact<std::int64_t>()) {
        if (*v > 1'000'000'000'000'000LL || *v < -1'000'000'000'000'000LL)
            throw config_error(key, text_of(n), "a duration of at most a year", "out of range");
        return static_cast<double>(*v);
    }
    if (auto s = n.value_exact<std::string>()) return parse_field(*f.field, *s, key, false);
    const char* unit = f.field->kind == field_kind::seconds ? "seconds" : "milliseconds";
    throw config_error(key, text_of(n),
                       std::string("an integer number of ") + unit + ", or a string with a unit (\"500ms\", \"30s\", \"2m\")",
                       "not valid");
}

// One key's node into its field, by the field's kind: the node's type is checked here, the value's
// range by the policy's validate() (a count's here: a number that does not fit names its range).
void set_from(const config_field& f, const toml::node& n, const std::string& key) {
    const field_description& d = *f.field;
    if (f.is_min) {
        if (auto s = n.value_exact<std::string>()) return f.set(*s, key, false);
        return void(*d.min_at(f.at) = scaled_min{milliseconds(as_int(n, key, "a duration, or a string \"N%\"")), 0.0});
    }
    switch (d.kind) {
    case field_kind::duration:
    case field_kind::seconds: return d.set(f.at, duration_of(n, f, key));
    case field_kind::count: {
        const std::string range = range_text(d);
        const auto v = as_int(n, key, "an integer " + range);
        if (static_cast<double>(v) < d.lo || static_cast<double>(v) > d.hi) throw config_error(key, std::to_string(v), range);
        return d.set(f.at, static_cast<double>(v));
    }
    case field_kind::size:
        if (auto s = n.value_exact<std::string>()) return d.set(f.at, parse_field(d, *s, key, true));
        if (const auto v = as_int(n, key, "a size: bytes, or a string with a unit (\"8MiB\")"); v >= 0)
            return d.set(f.at, static_cast<double>(v));
        throw config_error(key, text_of(n), range_text(d));
    case field_kind::number:
        if (!n.is_integer() && !n.is_floating_point()) throw config_error(key, text_of(n), "a number", "not valid");
        return d.set(f.at, *n.value<double>());
    case field_kind::flag:
        if (!n.is_boolean()) throw config_error(key, text_of(n), "true or false", "not valid");
        return d.set(f.at, *n.value<bool>() ? 1 : 0);
    case field_kind::choice:
        if (!n.is_string()) throw config_error(key, text_of(n), range_text(d), "not valid");
        return d.set(f.at, parse_field(d, *n.value<std::string>(), key, false));
    }
}

std::string table_names(const policy_refs& c) {
    std::string out;
    for (const auto& r : c) out += (out.empty() ? "" : ", ") + std::string(r.description->table);
    return out;
}

bool has_table(const policy_refs& c, std::string_view name) {
    return std::any_of(c.begin(), c.end(), [name](const policy_ref& r) { return name == r.description->table; });
}

// The keys a table accepts: its policy's fields, and for [overload] every scalable timeout's minimum.
std::string keys_of(const policy_refs& c, std::string_view table) {
    std::vector<std::string> keys;
    for (const auto& r : c) {
        for (const auto& f : r.description->fields) {
            if (table == r.description->table) keys.emplace_back(f.name);
            if (table == "overload" && f.scalable()) keys.push_back(std::string(f.name) + "_min");
        }
    }
    std::sort(keys.begin(), keys.end());
    std::string out;
    for (const auto& k : keys) out += (out.empty() ? "" : ", ") + k;
    return out;
}

void apply_table(const policy_refs& c, const toml::table& t, const std::string& name) {
    std::uint64_t given = 0;
    const policy_description* policy = nullptr;
    void* at = nullptr;
    for (const auto& [k, v] : t) {
        const std::string key = name + "." + std::string(k.str());
        const config_field f = find_field(c, key);
        if (!f) throw config_error(key, "(unknown key)", "one of: " + keys_of(c, name), "not valid");
        set_from(f, v, key);
        if (!f.is_min) {
            given |= std::uint64_t{1} << f.policy->index_of(f.field->name);
            policy = f.policy;
            at = f.at;
        }
    }
    if (policy && policy->derive) policy->derive(at, given);
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
    bool found = false;
    const liveness_config c;
    c.for_each_policy([&](const policy_description& d, const void*) { found = found || name == d.table; });
    return found;
}

void apply_liveness_tables(liveness_config& c, const toml::table& doc, std::string_view source,
                           const std::vector<std::string>& own_keys) {
    apply_tables(policies_of(c), doc, source, own_keys);
}

void apply_tables(const policy_refs& c, const toml::table& doc, std::string_view source,
                  const std::vector<std::string>& own_keys) {
    try {
        for (const auto& [name, node] : doc) {
            const std::string table(name.str());
            if (!has_table(c, table)) {
                if (std::find(own_keys.begin(), own_keys.end(), table) != own_keys.end()) continue;
                std::string accepted = table_names(c);
                for (const auto& k : own_keys) accepted += ", " + k;
                throw config_error(table, "(unknown key)", accepted, "not valid");
            }
            if (!node.is_table()) throw config_error(table, text_of(node), std::string("a table [") + table + "]", "not valid");
            apply_table(c, *node.as_table(), table);
        }
    } catch (const config_error& e) {
        throw e.in(std::string(source));
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
    return load_liveness_config(path, liveness_config{});
}

toml::table load_toml_file(const std::string& path) { return parse_toml(read_config_file(path), path); }

liveness_config load_liveness_config(const std::string& path, liveness_config base) {
    apply_liveness_tables(base, load_toml_file(path), path);
    try {
        base.validate();
    } catch (const config_error& e) {
        throw e.in(path);
    }
    return base;
}

} // namespace heartwheel::net
