// policy_description.cpp — the generic side of a policy's description: range checks in each field's
// unit, the scalable minimums (and their text form), a field's text form, and parsing a field from text.
#include <heartwheel/net/policies/policies.hpp>
#include <heartwheel/net/config/policy_description.hpp>

#include <limits>
#include <sstream>

namespace heartwheel::net {
namespace {

std::string num_text(double v) {
    std::ostringstream os;
    os << v;
    return os.str();
}

std::string whole(double v) { return std::to_string(std::llround(v)); }

std::string unit_suffix(field_kind k) {
    return k == field_kind::duration ? " ms" : k == field_kind::seconds ? " s" : "";
}

std::string choices_text(const field_description& f) {
    std::string out;
    for (std::size_t i = 0; i < f.choice_count; ++i)
        out += (i == 0 ? "" : i + 1 == f.choice_count ? " or " : ", ") + std::string(f.choices[i]);
    return out;
}

// A size held as a double, back in bytes: a value past size_t (a derived default's sentinel, which as
// a double is 2^64) is its largest rather than a conversion out of range.
std::size_t bytes_of(double v) {
    return v < 18446744073709551615.0 ? static_cast<std::size_t>(v) : std::numeric_limits<std::size_t>::max();
}

std::string value_text(const field_description& f, double v) {
    switch (f.kind) {
    case field_kind::duration:
    case field_kind::seconds: return whole(v) + unit_suffix(f.kind);
    case field_kind::size: return size_text(bytes_of(v));
    case field_kind::number: return num_text(v);
    default: return whole(v);
    }
}

void check_min(const field_description& f, const void* policy, const std::string& prefix) {
    const scaled_min& m = f.min_of(policy);
    auto name = [&f] { return std::string("overload.") + f.name + "_min"; }; // only to report: a check allocates nothing
    if (m.min.count() < 0 || static_cast<double>(m.min.count()) > year_ms)
        throw config_error(name(), whole(static_cast<double>(m.min.count())) + " ms", "0.." + whole(year_ms) + " ms");
    if (!(m.fraction >= 0.0 && m.fraction <= 1.0)) throw config_error(name(), num_text(m.fraction), "0..1");
    // An absolute min above the timeout it scales is a mistake (it would never scale).
    const auto max = static_cast<long long>(f.get(policy));
    if (m.min.count() > 0 && max > 0 && m.min.count() > max)
        throw config_error(name(), std::to_string(m.min.count()) + " ms",
                           "1.." + std::to_string(max) + " ms (at most " + prefix + "." + f.name + ", which is " +
                               std::to_string(max) + " ms), or a percentage");
}

} // namespace

const field_description* policy_description::find(std::string_view name) const noexcept {
    const std::size_t i = index_of(name);
    return i < fields.size() ? &fields[i] : nullptr;
}

std::size_t policy_description::index_of(std::string_view name) const noexcept {
    for (std::size_t i = 0; i < fields.size(); ++i)
        if (name == fields[i].name) return i;
    return fields.size();
}

std::string range_text(const field_description& f) {
    switch (f.kind) {
    case field_kind::flag: return "true or false";
    case field_kind::choice: return choices_text(f);
    case field_kind::size: return size_text(static_cast<std::size_t>(f.lo)) + ".." + size_text(static_cast<std::size_t>(f.hi));
    case field_kind::number: return num_text(f.lo) + ".." + num_text(f.hi);
    default: return whole(f.lo) + ".." + whole(f.hi) + unit_suffix(f.kind);
    }
}

std::string field_text(const field_description& f, double v) {
    switch (f.kind) {
    case field_kind::flag: return v != 0 ? "true" : "false";
    case field_kind::choice: {
        const auto i = static_cast<std::size_t>(std::llround(v));
        return i < f.choice_count ? f.choices[i] : whole(v);
    }
    case field_kind::duration: {
        const long long ms = std::llround(v);
        if (ms == 0) return "0";
        if (ms % 3'600'000 == 0) return std::to_string(ms / 3'600'000) + "h";
        if (ms % 60'000 == 0) return std::to_string(ms / 60'000) + "m";
        if (ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
        return std::to_string(ms) + "ms";
    }
    case field_kind::seconds: return whole(v) + "s";
    case field_kind::size: return size_text(bytes_of(v));
    case field_kind::number: return num_text(v);
    case field_kind::count: return whole(v);
    }
    return whole(v);
}

namespace {
bool in_range(const field_description& f, const void* policy) {
    if (f.kind == field_kind::flag || (f.applies && !f.applies(policy))) return true;
    const double v = f.get(policy);
    if (f.unset_note && v > f.hi) return true; // not set: derived
    return v >= f.lo && v <= f.hi;
}
[[noreturn]] void out_of_range(const field_description& f, const void* policy, const std::string& who) {
    const bool named = f.kind == field_kind::choice;
    throw config_error(who, value_text(f, f.get(policy)), range_text(f), named ? "not valid" : "out of range");
}
} // namespace

void check_field(const field_description& f, const void* policy, const std::string& who) {
    if (!in_range(f, policy)) out_of_range(f, policy, who);
}

void validate_policy(const policy_description& d, const void* policy, const std::string& prefix) {
    for (const auto& f : d.fields)
        if (!in_range(f, policy)) out_of_range(f, policy, prefix + "." + f.name);
    for (const auto& f : d.fields)
        if (f.scalable()) check_min(f, policy, prefix);
    if (d.check) d.check(policy, prefix);
}

double parse_field(const field_description& f, std::string_view text, const std::string& who, bool bare_integers) {
    const std::string t(text);
    switch (f.kind) {
    case field_kind::duration:
        return static_cast<double>(parse_duration(text, who, milliseconds(bare_integers ? 1 : 0)).count());
    case field_kind::seconds: {
        const milliseconds ms = parse_duration(text, who, milliseconds(bare_integers ? 1000 : 0));
        if (ms.count() % 1000 != 0) throw config_error(who, "\"" + t + "\"", "a whole number of seconds", "not valid");
        return static_cast<double>(ms.count() / 1000);
    }
    case field_kind::count:
        return static_cast<double>(parse_count(text, who, static_cast<std::uint64_t>(f.lo), static_cast<std::uint64_t>(f.hi)));
    case field_kind::size: return static_cast<double>(parse_size(text, who));
    case field_kind::number: {
        std::size_t used = 0;
        double v = 0;
        try {
            v = std::stod(t, &used);
        } catch (const std::logic_error&) {
            used = 0;
        }
        if (used == 0 || used != t.size()) throw config_error(who, "\"" + t + "\"", "a number", "not valid");
        return v;
    }
    case field_kind::flag:
        if (t == "true" || t == "yes" || t == "on" || t == "1") return 1;
        if (t == "false" || t == "no" || t == "off" || t == "0") return 0;
        throw config_error(who, "\"" + t + "\"", "true or false", "not valid");
    case field_kind::choice:
        for (std::size_t i = 0; i < f.choice_count; ++i)
            if (text == f.choices[i]) return static_cast<double>(i);
        throw config_error(who, "\"" + t + "\"", choices_text(f), "not valid");
    }
    throw config_error(who, "\"" + t + "\"", range_text(f), "not valid");
}

milliseconds scaled_min::of(milliseconds max) const noexcept {
    milliseconds m = min;
    if (fraction > 0.0) {
        // In doubles, the product can round up past the largest count (100 % of milliseconds::max()):
        // compared before it is cast back, never cast out of range.
        const double part = static_cast<double>(max.count()) * fraction;
        if (part >= static_cast<double>(max.count())) return max;
        m = milliseconds(static_cast<milliseconds::rep>(part));
    }
    return m < max ? m : max;
}

scaled_min parse_scaled_min(std::string_view text, const std::string& field) {
    scaled_min m;
    if (!text.empty() && text.back() == '%') {
        const std::string number(text.substr(0, text.size() - 1));
        std::size_t used = 0;
        double pct = -1;
        try {
            pct = std::stod(number, &used);
        } catch (const std::logic_error&) {
            used = 0;
        }
        if (used == 0 || used != number.size() || !(pct > 0.0 && pct <= 100.0))
            throw config_error(field, "\"" + std::string(text) + "\"", "a percentage of the timeout, 0%..100% (exclusive of 0), or a duration");
        m.fraction = pct / 100.0;
        return m;
    }
    m.min = parse_duration(text, field, milliseconds(1));
    return m;
}

std::string to_string(const scaled_min& m) {
    if (m.fraction > 0.0) return num_text(m.fraction * 100.0) + "%";
    return std::to_string(m.min.count()) + "ms";
}

} // namespace heartwheel::net
