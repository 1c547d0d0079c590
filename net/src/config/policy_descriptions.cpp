// policy_descriptions.cpp — the descriptions of the policies declared in policies.hpp: each field's
// range and help once, and each policy's rules between its fields. validate() is the description's.
// Every description is a static array of fields built once: reading one allocates nothing.
#include <heartwheel/net/policies/policies.hpp>

namespace heartwheel::net {
namespace {

const char* const trigger_names[] = {"inbound", "outbound"};
const char* const strategy_names[] = {"grpc", "full", "equal", "decorrelated"};

std::string ms(milliseconds v) { return std::to_string(v.count()) + " ms"; }

template <class P> const P& as(const void* p) { return *static_cast<const P*>(p); }

} // namespace

const policy_description& idle_policy::description() {
    static const field_description fields[] = {
        scalable<&idle_policy::reader_idle_min>(
            off_at_zero(field<&idle_policy::reader_idle>("reader_idle", 0, year_ms, "event after this long without a read")),
            close_reason::reader_idle),
        scalable<&idle_policy::writer_idle_min>(
            off_at_zero(field<&idle_policy::writer_idle>("writer_idle", 0, year_ms, "event after this long without a write")),
            close_reason::writer_idle),
        scalable<&idle_policy::all_idle_min>(
            off_at_zero(field<&idle_policy::all_idle>("all_idle", 0, year_ms, "event after this long without either")),
            close_reason::all_idle),
        field<&idle_policy::write_progress_is_activity>(
            "write_progress_is_activity", 0, 1, "partial write progress counts (a slow but draining peer is never write-idle)")};
    static const policy_description d{"idle", fields};
    return d;
}
void idle_policy::validate(const std::string& p) const { validate_policy(description(), this, p); }

const policy_description& heartbeat_policy::description() {
    static const field_description fields[] = {
        off_at_zero(field<&heartbeat_policy::interval>("interval", 0, year_ms, "send a ping after this long of silence (± jitter)")),
        choice<&heartbeat_policy::trigger>("trigger", trigger_names,
                                           "the silence a ping follows: nothing received (gRPC's keepalive) or nothing sent "
                                           "(Netty's writer-idle ping; the only behaviour before)"),
        // Independent of the interval (one ping is outstanding at a time), judged when pings are on.
        only_when(noted(field<&heartbeat_policy::timeout>("timeout", 1, year_ms,
                                                          "a ping with nothing at all received within this is a miss"),
                        "1..1 year, independent of `interval`"),
                  [](const void* p) { return as<heartbeat_policy>(p).enabled(); }),
        field<&heartbeat_policy::misses>("misses", misses_min, misses_max,
                                         "close with `heartbeat-timeout` at this many consecutive misses"),
        field<&heartbeat_policy::jitter>("jitter", 0, 0.5, "each interval varies by up to ± this fraction"),
        field<&heartbeat_policy::rtt_factor>("rtt_factor", 0, 100,
                                             "a ping is judged no earlier than this many `srtt + 4 * rttvar` after it (0: off)")};
    static const policy_description d{"heartbeat", fields};
    return d;
}
void heartbeat_policy::validate(const std::string& p) const { validate_policy(description(), this, p); }

const policy_description& request_policy::description() {
    static const field_description fields[] = {
        off_at_zero(field<&request_policy::timeout>("timeout", 0, year_ms,
                                                     "default per-request deadline (each request may set its own)")),
        field<&request_policy::max_outstanding>("max_outstanding", max_outstanding_min, max_outstanding_max,
                                                "more requests are refused with `wheel_full`")};
    static const policy_description d{"request", fields};
    return d;
}
void request_policy::validate(const std::string& p) const { validate_policy(description(), this, p); }

const policy_description& backoff_policy::description() {
    static const field_description fields[] = {
        field<&backoff_policy::initial>("initial", 1, year_ms, "first reconnect delay (gRPC: 1 s)"),
        field<&backoff_policy::multiplier>("multiplier", 1, 10, "growth per failure (gRPC: 1.6)"),
        field<&backoff_policy::jitter>("jitter", 0, 1, "± fraction for the `grpc` strategy (gRPC: 0.2)"),
        noted(field<&backoff_policy::max>("max", 1, year_ms,
                                          "hard cap, jitter included: no delay is longer (gRPC: 120 s, which its jitter may "
                                          "exceed by 20 %)"),
              "initial..1 year"),
        field<&backoff_policy::min_connect_timeout>("min_connect_timeout", 1, year_ms,
                                                    "an attempt may take max(this, current backoff) (gRPC: 20 s)"),
        choice<&backoff_policy::strategy>("strategy", strategy_names, "jitter family (AWS's names for the last three)"),
        field<&backoff_policy::stable_after>("stable_after", 0, year_ms,
                                             "the backoff resets only after a connection stayed up this long from its proof "
                                             "(`reconnector::proven()`: the peer's first bytes)")};
    static const policy_description d{
        "backoff", fields,
        [](const void* p, const std::string& prefix) {
            const auto& v = as<backoff_policy>(p);
            if (v.max < v.initial)
                throw config_error(prefix + ".max", ms(v.max),
                                   std::to_string(v.initial.count()) + ".." + std::to_string(static_cast<long long>(year_ms)) +
                                       " ms (at least " + prefix + ".initial, which is " + ms(v.initial) + ")");
        },
        // Setting only the largest delay lowers the first one to it when the default is larger.
        [](void* p, std::uint64_t given) {
            auto& v = *static_cast<backoff_policy*>(p);
            const auto& self = backoff_policy::description();
            const bool max_given = (given >> self.index_of("max") & 1) != 0;
            const bool initial_given = (given >> self.index_of("initial") & 1) != 0;
            if (max_given && !initial_given && v.initial > v.max && v.max.count() > 0) v.initial = v.max;
        }};
    return d;
}
void backoff_policy::validate(const std::string& p) const { validate_policy(description(), this, p); }

const policy_description& output_policy::description() {
    constexpr double top = static_cast<double>(size_max);
    static const field_description fields[] = {
        field<&output_policy::high_water>("high_water", 1, top,
                                          "above this queued for a connection it is not `writable()` (producers hold; its own "
                                          "reads stop)"),
        noted(field<&output_policy::low_water>("low_water", 0, top, "`on_writable()` once it drains to this"), "0..high_water"),
        off_at_zero(field<&output_policy::hard_limit>("hard_limit", 0, top, "queued past this: closed `slow-consumer` at once")),
        noted(off_at_zero(field<&output_policy::soft_limit>("soft_limit", 0, top,
                                                            "queued above this for `soft_limit_time`: closed `slow-consumer`")),
              "0 (off)..hard_limit"),
        only_when(field<&output_policy::soft_limit_time>("soft_limit_time", 1, year_ms,
                                                         "how long a connection may stay above `soft_limit`"),
                  [](const void* p) { return as<output_policy>(p).soft_limit > 0; })};
    static const policy_description d{"output", fields, [](const void* p, const std::string& prefix) {
                                          const auto& v = as<output_policy>(p);
                                          if (v.low_water > v.high_water)
                                              throw config_error(prefix + ".low_water", size_text(v.low_water),
                                                                 "0.." + size_text(v.high_water) + " (at most " + prefix +
                                                                     ".high_water)");
                                          if (v.hard_limit > 0 && v.soft_limit > v.hard_limit)
                                              throw config_error(prefix + ".soft_limit", size_text(v.soft_limit),
                                                                 "0.." + size_text(v.hard_limit) + " (at most " + prefix +
                                                                     ".hard_limit)");
                                      }};
    return d;
}
void output_policy::validate(const std::string& p) const { validate_policy(description(), this, p); }

const policy_description& server_limits::description() {
    static const field_description fields[] = {
        scalable<&server_limits::handshake_timeout_min>(
            off_at_zero(field<&server_limits::handshake_timeout>("handshake_timeout", 0, year_ms, "TLS handshake deadline")),
            close_reason::handshake_timeout),
        scalable<&server_limits::max_age_min>(
            off_at_zero(field<&server_limits::max_age>("max_age", 0, year_ms,
                                                       "retire connections older than this (gRPC's MAX_CONNECTION_AGE)")),
            close_reason::max_age),
        field<&server_limits::max_age_jitter>("max_age_jitter", 0, 0.5, "± fraction, so a fleet does not reconnect at once")};
    static const policy_description d{"limits", fields};
    return d;
}
void server_limits::validate(const std::string& p) const { validate_policy(description(), this, p); }

const policy_description& overload_policy::description() {
    static const field_description fields[] = {field<&overload_policy::threshold>(
        "threshold", 0, 0.99, "pressure above which scalable timeouts shrink (below: every timeout at its max)")};
    static const policy_description d{"overload", fields};
    return d;
}
void overload_policy::validate(const std::string& p) const { validate_policy(description(), this, p); }

const policy_description& keepalive_options::description() {
    static const field_description fields[] = {
        field<&keepalive_options::enabled>("enabled", 0, 1, "`SO_KEEPALIVE`, set when a connection is made with a context (`apply_keepalive()` otherwise)"),
        field<&keepalive_options::idle>("idle", 0, 32767, "`TCP_KEEPIDLE`: idle time before the first probe (0: the system's)"),
        field<&keepalive_options::interval>("interval", 0, 32767, "`TCP_KEEPINTVL`: between probes (0: the system's)"),
        field<&keepalive_options::count>("count", 0, count_max, "`TCP_KEEPCNT`: probes before the kernel gives up (0: the system's)"),
        noted(field<&keepalive_options::user_timeout>("user_timeout", 0, 0x7fffffff,
                                                      "`TCP_USER_TIMEOUT`: unacknowledged data for this long kills the "
                                                      "connection (0: the system's)"),
              "0, or at least `interval` when `enabled`")};
    static const policy_description d{"keepalive", fields, [](const void* p, const std::string& prefix) {
                                          const auto& v = as<keepalive_options>(p);
                                          if (!v.enabled || v.user_timeout.count() == 0) return;
                                          const std::chrono::seconds probe =
                                              v.interval.count() > 0 ? v.interval : system_default_interval;
                                          if (v.user_timeout < std::chrono::duration_cast<milliseconds>(probe))
                                              throw config_error(
                                                  prefix + ".user_timeout", ms(v.user_timeout),
                                                  "0 (off) or at least " + prefix + ".interval (" +
                                                      std::to_string(probe.count()) + " s" +
                                                      (v.interval.count() > 0 ? "" : ", the kernel's default") +
                                                      "): a shorter user timeout kills a healthy connection after one "
                                                      "lost keepalive probe");
                                      }};
    return d;
}
void keepalive_options::validate(const std::string& p) const { validate_policy(description(), this, p); }

} // namespace heartwheel::net
