// policies.cpp — range checks for every policy; each error names the field, value and range.
#include <heartwheel/net/policies.hpp>

#include <sstream>
#include <utility>

namespace heartwheel::net {
namespace {

constexpr long long max_ms = 365LL * 24 * 3600 * 1000; // a year

std::string ms_text(milliseconds v) { return std::to_string(v.count()) + " ms"; }

std::string num_text(double v) {
    std::ostringstream os;
    os << v;
    return os.str();
}

// The checks take the field's name in two parts and join them only to report an error: a valid
// policy is checked without allocating (connections validate theirs as they are made).
std::string field_name(const std::string& prefix, const char* name) { return prefix + "." + name; }

void check_ms(const std::string& prefix, const char* name, milliseconds v, long long lo, long long hi) {
    if (v.count() < lo || v.count() > hi)
        throw config_error(field_name(prefix, name), ms_text(v), std::to_string(lo) + ".." + std::to_string(hi) + " ms");
}

void check_fraction(const std::string& prefix, const char* name, double v, double lo, double hi) {
    if (!(v >= lo && v <= hi))
        throw config_error(field_name(prefix, name), num_text(v), num_text(lo) + ".." + num_text(hi));
}

void check_size(const std::string& prefix, const char* name, std::size_t v, std::size_t lo) {
    if (v < lo || v > output_policy::size_max)
        throw config_error(field_name(prefix, name), size_text(v), size_text(lo) + ".." + size_text(output_policy::size_max));
}

void check_count(const std::string& prefix, const char* name, std::uint64_t v, std::uint64_t lo, std::uint64_t hi) {
    if (v < lo || v > hi)
        throw config_error(field_name(prefix, name), std::to_string(v), std::to_string(lo) + ".." + std::to_string(hi));
}

} // namespace

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

void idle_policy::validate(const std::string& p) const {
    check_ms(p, "reader_idle", reader_idle, 0, max_ms);
    check_ms(p, "writer_idle", writer_idle, 0, max_ms);
    check_ms(p, "all_idle", all_idle, 0, max_ms);
}

const char* to_string(heartbeat_trigger t) noexcept { return t == heartbeat_trigger::outbound ? "outbound" : "inbound"; }

heartbeat_trigger parse_heartbeat_trigger(std::string_view name, const std::string& field) {
    if (name == "inbound") return heartbeat_trigger::inbound;
    if (name == "outbound") return heartbeat_trigger::outbound;
    throw config_error(field, "\"" + std::string(name) + "\"", "inbound or outbound", "not valid");
}

void heartbeat_policy::validate(const std::string& p) const {
    check_ms(p, "interval", interval, 0, max_ms);
    if (trigger != heartbeat_trigger::inbound && trigger != heartbeat_trigger::outbound)
        throw config_error(field_name(p, "trigger"), std::to_string(static_cast<int>(trigger)), "inbound or outbound", "not valid");
    check_count(p, "misses", misses, misses_min, misses_max);
    check_fraction(p, "jitter", jitter, 0.0, 0.5);
    check_fraction(p, "rtt_factor", rtt_factor, 0.0, 100.0);
    if (!enabled()) return;
    // Independent of the interval: one ping is outstanding at a time (see heartbeat.hpp).
    check_ms(p, "timeout", timeout, 1, max_ms);
}

void output_policy::validate(const std::string& p) const {
    check_size(p, "high_water", high_water, 1);
    check_size(p, "low_water", low_water, 0);
    if (low_water > high_water)
        throw config_error(field_name(p, "low_water"), size_text(low_water),
                           "0.." + size_text(high_water) + " (at most " + p + ".high_water)");
    check_size(p, "hard_limit", hard_limit, 0);
    check_size(p, "soft_limit", soft_limit, 0);
    if (hard_limit > 0 && soft_limit > hard_limit)
        throw config_error(field_name(p, "soft_limit"), size_text(soft_limit),
                           "0.." + size_text(hard_limit) + " (at most " + p + ".hard_limit)");
    if (soft_limit > 0) check_ms(p, "soft_limit_time", soft_limit_time, 1, max_ms);
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

void request_policy::validate(const std::string& p) const {
    check_ms(p, "timeout", timeout, 0, max_ms);
    check_count(p, "max_outstanding", max_outstanding, max_outstanding_min, max_outstanding_max);
}

void timeout_policy::validate(const std::string& p) const {
    check_ms(p, "read_timeout", read_timeout, 0, max_ms);
    check_ms(p, "write_timeout", write_timeout, 0, max_ms);
}

void backoff_policy::validate(const std::string& p) const {
    check_ms(p, "initial", initial, 1, max_ms);
    check_fraction(p, "multiplier", multiplier, 1.0, 10.0);
    check_fraction(p, "jitter", jitter, 0.0, 1.0);
    if (max < initial)
        throw config_error(p + ".max", ms_text(max),
                           std::to_string(initial.count()) + ".." + std::to_string(max_ms) + " ms (at least " + p +
                               ".initial, which is " + ms_text(initial) + ")");
    check_ms(p, "max", max, 1, max_ms);
    check_ms(p, "min_connect_timeout", min_connect_timeout, 1, max_ms);
    check_ms(p, "stable_after", stable_after, 0, max_ms);
}

void server_limits::validate(const std::string& p) const {
    check_ms(p, "handshake_timeout", handshake_timeout, 0, max_ms);
    check_ms(p, "max_age", max_age, 0, max_ms);
    check_fraction(p, "max_age_jitter", max_age_jitter, 0.0, 0.5);
}

milliseconds scaled_min::of(milliseconds max) const noexcept {
    milliseconds m = min;
    if (fraction > 0.0) m = milliseconds(static_cast<milliseconds::rep>(static_cast<double>(max.count()) * fraction));
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

void overload_policy::validate(const std::string& p) const {
    check_fraction(p, "threshold", threshold, 0.0, 0.99);
    const std::pair<const char*, const scaled_min*> all[] = {
        {"reader_idle_min", &reader_idle}, {"writer_idle_min", &writer_idle}, {"all_idle_min", &all_idle},
        {"read_timeout_min", &read_timeout}, {"handshake_timeout_min", &handshake_timeout}, {"max_age_min", &max_age}};
    for (const auto& [name, m] : all) {
        check_ms(p, name, m->min, 0, max_ms);
        check_fraction(p, name, m->fraction, 0.0, 1.0);
    }
}

void keepalive_options::validate(const std::string& p) const {
    check_count(p, "idle", static_cast<std::uint64_t>(idle.count()), 0, 32767);
    check_count(p, "interval", static_cast<std::uint64_t>(interval.count()), 0, 32767);
    check_count(p, "count", count, 0, count_max);
    check_ms(p, "user_timeout", user_timeout, 0, 0x7fffffff);
    if (!enabled || user_timeout.count() == 0) return;
    const std::chrono::seconds probe = interval.count() > 0 ? interval : system_default_interval;
    const auto probe_ms = std::chrono::duration_cast<milliseconds>(probe);
    if (user_timeout < probe_ms)
        throw config_error(p + ".user_timeout", ms_text(user_timeout),
                           "0 (off) or at least " + p + ".interval (" + std::to_string(probe.count()) + " s" +
                               (interval.count() > 0 ? "" : ", the kernel's default") +
                               "): a shorter user timeout kills a healthy connection after one lost keepalive probe");
}

} // namespace heartwheel::net
