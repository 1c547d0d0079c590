// policies.cpp — range checks for every policy; each error names the field, value and range.
#include <heartwheel/net/policies.hpp>

#include <sstream>

namespace heartwheel::net {
namespace {

constexpr long long max_ms = 365LL * 24 * 3600 * 1000; // a year

std::string ms_text(milliseconds v) { return std::to_string(v.count()) + " ms"; }

std::string num_text(double v) {
    std::ostringstream os;
    os << v;
    return os.str();
}

void check_ms(const std::string& field, milliseconds v, long long lo, long long hi) {
    if (v.count() < lo || v.count() > hi)
        throw config_error(field, ms_text(v), std::to_string(lo) + ".." + std::to_string(hi) + " ms");
}

void check_fraction(const std::string& field, double v, double lo, double hi) {
    if (!(v >= lo && v <= hi)) throw config_error(field, num_text(v), num_text(lo) + ".." + num_text(hi));
}

void check_count(const std::string& field, std::uint64_t v, std::uint64_t lo, std::uint64_t hi) {
    if (v < lo || v > hi)
        throw config_error(field, std::to_string(v), std::to_string(lo) + ".." + std::to_string(hi));
}

} // namespace

config_error::config_error(std::string field, std::string value, std::string accepted)
    : std::invalid_argument(field + " = " + value + " is out of range: accepted " + accepted),
      field_(std::move(field)), value_(std::move(value)), accepted_(std::move(accepted)) {}

void idle_policy::validate(const std::string& p) const {
    check_ms(p + ".reader_idle", reader_idle, 0, max_ms);
    check_ms(p + ".writer_idle", writer_idle, 0, max_ms);
    check_ms(p + ".all_idle", all_idle, 0, max_ms);
}

void heartbeat_policy::validate(const std::string& p) const {
    check_ms(p + ".interval", interval, 0, max_ms);
    check_count(p + ".misses", misses, 1, 1000);
    check_fraction(p + ".jitter", jitter, 0.0, 0.5);
    if (!enabled()) return;
    check_ms(p + ".timeout", timeout, 1, max_ms);
    // Each miss is judged before the next ping goes out (the next one is sent `interval` after it).
    if (timeout > interval)
        throw config_error(p + ".timeout", ms_text(timeout),
                           "1.." + std::to_string(interval.count()) + " ms (at most " + p +
                               ".interval, the time until the next ping)");
}

void request_policy::validate(const std::string& p) const {
    check_ms(p + ".timeout", timeout, 0, max_ms);
    check_count(p + ".max_outstanding", max_outstanding, 1, 1u << 24);
}

void timeout_policy::validate(const std::string& p) const {
    check_ms(p + ".read_timeout", read_timeout, 0, max_ms);
    check_ms(p + ".write_timeout", write_timeout, 0, max_ms);
}

void backoff_policy::validate(const std::string& p) const {
    check_ms(p + ".initial", initial, 1, max_ms);
    check_fraction(p + ".multiplier", multiplier, 1.0, 10.0);
    check_fraction(p + ".jitter", jitter, 0.0, 1.0);
    check_ms(p + ".max", max, initial.count(), max_ms);
    check_ms(p + ".min_connect_timeout", min_connect_timeout, 1, max_ms);
    check_ms(p + ".stable_after", stable_after, 0, max_ms);
}

void server_limits::validate(const std::string& p) const {
    check_ms(p + ".handshake_timeout", handshake_timeout, 0, max_ms);
    check_ms(p + ".max_age", max_age, 0, max_ms);
    check_fraction(p + ".max_age_jitter", max_age_jitter, 0.0, 0.5);
    check_ms(p + ".drain_grace", drain_grace, 0, max_ms);
}

void keepalive_options::validate(const std::string& p) const {
    check_count(p + ".idle", static_cast<std::uint64_t>(idle.count()), 0, 32767);
    check_count(p + ".interval", static_cast<std::uint64_t>(interval.count()), 0, 32767);
    check_count(p + ".count", count, 0, 127);
    check_ms(p + ".user_timeout", user_timeout, 0, 0x7fffffff);
}

} // namespace heartwheel::net
