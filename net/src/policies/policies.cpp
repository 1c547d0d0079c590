// policies.cpp — config_error, and the text forms every loader reads: durations, sizes, counts,
// the heartbeat trigger. The policies' ranges are their descriptions' (policy_descriptions.cpp).
#include <heartwheel/net/policies/policies.hpp>

#include <sstream>
#include <utility>

namespace heartwheel::net {

config_error::config_error(std::string field, std::string value, std::string accepted, const std::string& problem)
    : std::invalid_argument(field + " = " + value + " is " + problem + ": accepted " + accepted),
      field_(std::move(field)), value_(std::move(value)), accepted_(std::move(accepted)) {}

config_error::config_error(std::string field, const std::string& message)
    : std::invalid_argument(message), field_(std::move(field)) {}

config_error config_error::in(const std::string& source) const {
    config_error e(field_, std::string(what()) + " (in " + source + ")");
    e.value_ = value_;
    e.accepted_ = accepted_;
    return e;
}

milliseconds parse_duration(std::string_view text, const std::string& field, milliseconds bare_unit) {
    const std::string accepted = bare_unit.count() > 0
        ? std::string("a duration: an integer number of ") +
              (bare_unit == milliseconds(1000) ? "seconds" : "milliseconds") +
              ", or a number with a unit (500ms, 30s, 2m, 1h)"
        : "a duration with a unit (500ms, 30s, 2m, 1h) or an integer number of milliseconds";
    auto fail = [&]() -> milliseconds {
        throw config_error(field, "\"" + std::string(text) + "\"", accepted, "not valid");
    };
    std::size_t i = 0;
    const bool negative = !text.empty() && text[0] == '-';
    if (negative) ++i;
    const std::size_t digits_start = i;
    long double value = 0, scale = 0;
    bool any_digit = false;
    for (; i < text.size(); ++i) {
        const char c = text[i];
        if (c >= '0' && c <= '9') {
            any_digit = true;
            if (scale > 0) {
                value += (c - '0') * scale;
                scale /= 10;
            } else {
                value = value * 10 + (c - '0');
            }
        } else if (c == '.' && scale == 0) {
            scale = 0.1L;
        } else {
            break;
        }
        if (value > 1e15L) return fail();
    }
    if (!any_digit || i == digits_start) return fail();
    const std::string_view unit = text.substr(i);
    long double ms_per_unit = 0;
    if (unit.empty()) {
        if (bare_unit.count() == 0 || scale != 0) return fail(); // a bare number must be an integer
        ms_per_unit = static_cast<long double>(bare_unit.count());
    } else if (unit == "ms") {
        ms_per_unit = 1;
    } else if (unit == "s") {
        ms_per_unit = 1000;
    } else if (unit == "m" || unit == "min") {
        ms_per_unit = 60'000;
    } else if (unit == "h") {
        ms_per_unit = 3'600'000;
    } else {
        return fail();
    }
    const long double ms = value * ms_per_unit;
    const auto whole = static_cast<long long>(ms + 0.5L);
    if (ms - static_cast<long double>(whole) > 1e-6L || static_cast<long double>(whole) - ms > 1e-6L) return fail();
    return milliseconds(negative ? -whole : whole);
}

std::size_t parse_size(std::string_view text, const std::string& field) {
    const std::string t(text);
    std::size_t used = 0;
    double v = -1;
    try {
        v = std::stod(t, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    std::string unit = t.substr(used);
    while (!unit.empty() && unit.front() == ' ') unit.erase(0, 1);
    struct u {
        const char* name;
        double bytes;
    };
    static constexpr u units[] = {{"", 1}, {"B", 1}, {"KiB", 1024.0}, {"MiB", 1024.0 * 1024}, {"GiB", 1024.0 * 1024 * 1024},
                                  {"kB", 1e3}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}};
    for (const auto& x : units)
        if (used > 0 && unit == x.name && v >= 0) {
            const double bytes = v * x.bytes;
            if (bytes > static_cast<double>(output_policy::size_max))
                throw config_error(field, t, "0.." + size_text(output_policy::size_max) + " bytes");
            return static_cast<std::size_t>(bytes + 0.5);
        }
    throw config_error(field, "\"" + t + "\"",
                       "a size: bytes, or a number with a unit (\"512KiB\", \"8MiB\", \"1GiB\", \"64kB\", \"8MB\")",
                       "not valid");
}

std::uint64_t parse_count(std::string_view text, const std::string& field, std::uint64_t lo, std::uint64_t hi) {
    const std::string t(text);
    std::size_t used = 0;
    unsigned long long v = 0;
    try {
        if (!t.empty() && t.front() != '-' && t.front() != '+' && t.front() != ' ') v = std::stoull(t, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    const std::string range = std::to_string(lo) + ".." + std::to_string(hi);
    if (used == 0 || used != t.size()) throw config_error(field, "\"" + t + "\"", "a whole number in " + range, "not valid");
    if (v < lo || v > hi) throw config_error(field, t, range);
    return v;
}

std::string size_text(std::size_t bytes) {
    if (bytes > 0 && bytes % (1u << 30) == 0) return std::to_string(bytes >> 30) + "GiB";
    if (bytes > 0 && bytes % (1u << 20) == 0) return std::to_string(bytes >> 20) + "MiB";
    if (bytes > 0 && bytes % (1u << 10) == 0) return std::to_string(bytes >> 10) + "KiB";
    return std::to_string(bytes) + "B";
}

} // namespace heartwheel::net
