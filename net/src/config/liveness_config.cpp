// liveness_config.cpp — what walks the registered policies (validation, scales(), find_field(), the
// docs' table of knobs), the backoff strategy names, and reading a config file's text. TOML is liveness_toml.cpp's
// (heartwheel::toml): nothing here needs toml++.
#include <heartwheel/net/config/liveness_config.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace heartwheel::net {

void liveness_config::validate() const {
    for_each_policy([](const policy_description& d, const void* p) { validate_policy(d, p, d.table); });
}

bool liveness_config::scales() const noexcept {
    bool any = false;
    for_each_policy([&any](const policy_description& d, const void* p) {
        for (const auto& f : d.fields)
            if (f.scalable() && f.min_of(p).enabled()) any = true;
    });
    return any;
}

std::string config_field::text() const {
    if (!is_min) return field_text(*field, field->get(at));
    const scaled_min& m = field->min_of(at);
    return m.enabled() ? to_string(m) : "off";
}

void config_field::set(std::string_view text, const std::string& who, bool bare_integers) const {
    if (!is_min) return field->set(at, parse_field(*field, text, who, bare_integers));
    scaled_min& m = *field->min_at(at);
    if (!text.empty() && text.back() == '%') m = parse_scaled_min(text, who);
    else m = scaled_min{parse_duration(text, who, milliseconds(bare_integers ? 1 : 0)), 0.0};
}

config_field find_field(const policy_refs& c, std::string_view name) {
    const auto dot = name.find('.');
    if (dot == std::string_view::npos) return {};
    const std::string_view table = name.substr(0, dot), key = name.substr(dot + 1);
    for (const auto& [d, p] : c) {
        if (table == d->table)
            if (const auto* f = d->find(key)) return {d, f, p, false};
        // A scalable timeout's minimum: "overload.<field>_min".
        constexpr std::string_view suffix = "_min";
        if (table == "overload" && key.size() > suffix.size() && key.substr(key.size() - suffix.size()) == suffix)
            if (const auto* f = d->find(key.substr(0, key.size() - suffix.size())); f && f->scalable()) return {d, f, p, true};
    }
    return {};
}

config_field find_field(liveness_config& c, std::string_view name) { return find_field(policies_of(c), name); }

namespace {
config_field flag_field(const policy_refs& config, const field_flag& f) {
    const config_field out = find_field(config, f.field);
    if (!out) throw std::logic_error("field_flag " + std::string(f.flag) + ": no field " + std::string(f.field));
    return out;
}
const char* value_form(const config_field& f) {
    switch (f.is_min ? field_kind::duration : f.field->kind) {
    case field_kind::duration: return "MS";
    case field_kind::seconds: return "S";
    case field_kind::size: return "BYTES";
    case field_kind::flag: return "BOOL";
    case field_kind::choice: return "NAME";
    default: return "N";
    }
}
} // namespace

bool parse_field_flag(int argc, const char* const* argv, int& i, const policy_refs& config,
                      std::initializer_list<field_flag> flags) {
    const std::string_view arg = argv[i];
    for (const auto& fl : flags) {
        if (arg != fl.flag) continue;
        const config_field f = flag_field(config, fl);
        const std::string who(fl.flag);
        if (i + 1 >= argc) throw config_error(who, "", "a value", "missing");
        f.set(argv[++i], who, true);
        if (!f.is_min) check_field(*f.field, f.at, who);
        return true;
    }
    return false;
}

std::string field_flags_help(const policy_refs& config, std::initializer_list<field_flag> flags) {
    std::ostringstream os;
    for (const auto& fl : flags) {
        const config_field f = flag_field(config, fl);
        std::string head = "  " + std::string(fl.flag) + " " + value_form(f);
        head.resize(std::max<std::size_t>(head.size() + 1, 24), ' ');
        os << head << f.field->help << " (" << range_text(*f.field) << "; default " << f.text() << ")\n";
    }
    return os.str();
}

std::string knob_table() {
    liveness_config defaults;
    return knob_table(policies_of(defaults));
}

std::string knob_table(const policy_refs& defaults) {
    std::ostringstream os;
    os << "| table.key | default | range | what it does |\n| --- | --- | --- | --- |\n";
    auto range_of = [](const field_description& f) -> std::string {
        if (f.range_note) return f.range_note;
        if (f.kind == field_kind::duration) {
            const auto lo = std::to_string(static_cast<long long>(f.lo));
            return (f.zero_is_off && f.lo == 0 ? "0 (off)" : lo) + ".." + (f.hi == year_ms ? std::string("1 year") : field_text(f, f.hi));
        }
        if (f.kind == field_kind::choice) {
            std::string out;
            for (std::size_t i = 0; i < f.choice_count; ++i) out += (i ? ", `" : "`") + std::string(f.choices[i]) + "`";
            return out;
        }
        if (f.kind == field_kind::flag) return "bool";
        if (f.kind == field_kind::size) {
            const auto lo = static_cast<std::size_t>(f.lo), hi = static_cast<std::size_t>(f.hi);
            return (lo == 0 ? std::string(f.zero_is_off ? "0 (off)" : "0") : size_text(lo)) + ".." +
                   (hi == output_policy::size_max ? std::string("4GiB-1") : size_text(hi));
        }
        const std::string r = range_text(f);
        return f.zero_is_off && f.lo == 0 ? "0 (off)" + r.substr(1) : r;
    };
    std::vector<std::string> mins;
    for (const auto& [d, p] : defaults) {
        for (const auto& f : d->fields) {
            const double v = f.get(p);
            std::string def = f.unset_note && v > f.hi ? f.unset_note : field_text(f, v);
            if (f.kind == field_kind::choice) def = '`' + std::move(def) + '`'; // (not "`" + s: GCC 12's -O3 -Wrestrict)
            if (v == 0 && f.kind != field_kind::flag && f.kind != field_kind::choice) def = f.zero_is_off ? "0 (off)" : "0";
            os << "| `" << d->table << '.' << f.name << "` | " << def << " | " << range_of(f) << " | " << f.help << " |\n";
            if (f.scalable())
                mins.push_back(std::string("| `overload.") + f.name + "_min` | off | a duration up to `" + d->table + "." +
                               f.name + "`, or `\"N%\"` of it | makes `" + d->table + "." + f.name +
                               "` scalable: at full pressure it shrinks to this |\n");
        }
    }
    for (const auto& m : mins) os << m;
    return os.str();
}

std::string read_config_file(const std::string& path, const std::string& what) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
        throw config_error(what, what + " " + path + ": cannot read the file: " + std::strerror(errno));
    if (S_ISDIR(st.st_mode)) throw config_error(what, what + " " + path + ": is a directory, not a TOML file");
    if (!S_ISREG(st.st_mode))
        throw config_error(what, what + " " + path + ": is not a regular file (a device, pipe or socket), not a TOML file");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw config_error(what, what + " " + path + ": cannot read the file: " + std::strerror(errno));
    std::stringstream ss;
    ss << in.rdbuf();
    std::string text = ss.str();
    if (text.find_first_not_of(" \t\r\n") == std::string::npos)
        throw config_error(what, what + " " + path + ": the file is empty (no settings); give a TOML file with at least one key");
    return text;
}

} // namespace heartwheel::net
