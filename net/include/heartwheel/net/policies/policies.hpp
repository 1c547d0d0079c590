// heartwheel/net/policies/policies.hpp — the liveness policies as plain structs with documented defaults, each
// with its description (policy_description.hpp: fields, units, ranges, help, scalable timeouts),
// which its validate() and every loader read. A policy may live in a file of its own
// (timeout_policy.hpp); liveness_config.hpp lists them all.
//
// validate() throws config_error naming the field, the value and the accepted range. Durations are
// std::chrono::milliseconds; zero disables a timeout where the field says so. docs/liveness.md has
// the table of knobs and how they map to Netty, Dubbo and gRPC settings. parse_duration() reads the
// text form every loader accepts: "500ms", "30s", "2m", "1h" (fractions allowed if the result is a
// whole number of milliseconds), or a bare integer in the field's own unit.
#ifndef HEARTWHEEL_NET_POLICIES_HPP
#define HEARTWHEEL_NET_POLICIES_HPP

#include <heartwheel/net/config/policy_description.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace heartwheel::net {

using std::chrono::milliseconds;

/// A policy value outside its accepted range, or one that cannot be read. what() reads e.g.
/// "heartbeat.misses = 0 is out of range: accepted 1..1000" or
/// "idle.reader_idle = \"100\" is not valid: accepted an integer number of milliseconds, or ...".
class config_error : public std::invalid_argument {
public:
    config_error(std::string field, std::string value, std::string accepted,
                 const std::string& problem = "out of range");
    /// A problem that is not about one value (a file that cannot be read): `message` is what().
    config_error(std::string field, const std::string& message);
    const std::string& field() const noexcept { return field_; }
    const std::string& value() const noexcept { return value_; }
    const std::string& accepted() const noexcept { return accepted_; }
    /// The same error with " (in SOURCE)" appended, for loaders that know the file.
    config_error in(const std::string& source) const;

private:
    std::string field_, value_, accepted_;
};

/// Parses a duration: a number with a unit (ms, s, m, h; e.g. "500ms", "1.5s", "2m"), or, when
/// `bare_unit` is non-zero, a bare integer counted in that unit. Throws config_error naming `field`.
/// Negative values parse (validate() rejects them with the field's range).
milliseconds parse_duration(std::string_view text, const std::string& field,
                            milliseconds bare_unit = milliseconds(1));

/// How far a scalable timeout may shrink under overload: to an absolute `min`, or to `fraction` of
/// its configured value (its max). Neither set: the timeout does not scale. The text form is a
/// duration ("10s", a bare number is milliseconds) or a percentage of the max ("25%").
struct scaled_min {
    milliseconds min{0};
    double fraction = 0.0; ///< 0 < fraction <= 1 when given as a percentage
    bool enabled() const noexcept { return min.count() > 0 || fraction > 0.0; }
    /// The min for a timeout whose max is `max`: never above max.
    milliseconds of(milliseconds max) const noexcept;
};
/// Parses "25%" or a duration (see parse_duration; a bare integer is milliseconds).
scaled_min parse_scaled_min(std::string_view text, const std::string& field);
std::string to_string(const scaled_min& m);

/// Netty's IdleStateHandler: an event after a period without activity of a kind (0 disables it).
struct idle_policy {
    milliseconds reader_idle{0}; ///< nothing read for this long
    milliseconds writer_idle{0}; ///< nothing written for this long
    milliseconds all_idle{0};    ///< neither read nor written for this long
    scaled_min reader_idle_min, writer_idle_min, all_idle_min; ///< under overload (`[overload] reader_idle_min`)
    /// Count partial write progress as writer activity, so a slow but draining peer is never
    /// write-idle (Netty's observeOutput, applied to the first event too).
    bool write_progress_is_activity = true;
    void validate(const std::string& prefix = "idle") const;
    static const policy_description& description();
};

/// Application-level ping/pong. After `interval` with nothing sent, send a ping; if nothing at all is
/// received within `timeout` after it, that is a miss; close at the `misses`-th consecutive miss.
/// The peer is thus declared dead after (misses - 1) * interval + timeout of silence.
/// What silence a ping follows. inbound: nothing received for `interval` (gRPC's keepalive: a
/// frozen peer is found even while we keep sending); outbound: nothing sent for `interval` (Netty's
/// writer-idle ping, the only behaviour before; kept for compatibility).
enum class heartbeat_trigger { inbound, outbound };
/// (Its names, "inbound" and "outbound", are its field's in heartbeat_policy::description().)

struct heartbeat_policy {
    milliseconds interval{0}; ///< 0 disables heartbeats
    milliseconds timeout{10'000};
    std::uint32_t misses = 3;
    static constexpr std::uint32_t misses_min = 1, misses_max = 1000;
    heartbeat_trigger trigger = heartbeat_trigger::inbound; // beside misses: no padding (each heartbeat holds a copy)
    double jitter = 0.0; ///< the interval varies by up to ±jitter (fraction) per ping
    /// k: a ping is judged no earlier than k * (srtt + 4 * rttvar) after it (RFC 6298's estimator
    /// over the pong round trips; QUIC uses 3). 0 disables the floor. Never shortens `timeout`.
    double rtt_factor = 3.0;
    void validate(const std::string& prefix = "heartbeat") const;
    static const policy_description& description();
    bool enabled() const noexcept { return interval.count() > 0; }
};

/// Per-request deadlines.
struct request_policy {
    milliseconds timeout{0}; ///< 0: requests never time out
    std::uint32_t max_outstanding = 65536;
    static constexpr std::uint32_t max_outstanding_min = 1, max_outstanding_max = 1u << 24;
    void validate(const std::string& prefix = "request") const;
    static const policy_description& description();
};

enum class backoff_strategy { grpc, full, equal, decorrelated };

/// gRPC's connection-backoff defaults, and AWS's full / equal / decorrelated jitter.
struct backoff_policy {
    milliseconds initial{1'000};
    double multiplier = 1.6;
    double jitter = 0.2; ///< ±fraction, for the grpc strategy
    milliseconds max{120'000};
    milliseconds min_connect_timeout{20'000};
    backoff_strategy strategy = backoff_strategy::grpc;
    /// The backoff resets only after a connection stayed up this long; a shorter one is a failure.
    milliseconds stable_after{5'000};
    void validate(const std::string& prefix = "backoff") const;
    static const policy_description& description();
};

/// A connection's output bound, against slow consumers (Redis's client-output-buffer-limit
/// hard/soft/seconds, NATS's slow consumer, Netty's WriteBufferWaterMark). In a fan-out server the
/// bytes for a peer come from other connections: only a bound on what is queued for it protects the
/// server from one peer that never reads. Sizes count bytes queued and not yet taken by the kernel.
struct output_policy {
    std::size_t high_water = 1 << 20;  ///< above this the connection is not writable (producers hold; its own reads stop)
    std::size_t low_water = 256 << 10; ///< writable again at or below this (on_writable)
    std::size_t hard_limit = 8 << 20;  ///< queued past this: closed at once, slow-consumer (0: no limit)
    std::size_t soft_limit = 2 << 20;  ///< queued above this for soft_limit_time: closed, slow-consumer (0: no limit)
    milliseconds soft_limit_time{10'000};
    static constexpr std::size_t size_max = 0xffffffffu; ///< 4 GiB - 1: the largest size any of these takes
    void validate(const std::string& prefix = "output") const;
    friend bool operator==(const output_policy& a, const output_policy& b) noexcept { // C++17: spelled out
        return a.high_water == b.high_water && a.low_water == b.low_water && a.hard_limit == b.hard_limit &&
               a.soft_limit == b.soft_limit && a.soft_limit_time == b.soft_limit_time;
    }
    static const policy_description& description();
};

/// Parses a byte size: an integer (bytes) or a number with a unit, "512KiB", "8MiB", "1GiB" (1024s)
/// or "64kB", "8MB", "1GB" (1000s), "100B". Raises config_error naming `field`.
std::size_t parse_size(std::string_view text, const std::string& field);
/// "8MiB", "256KiB", "1000B": the largest binary unit that divides it.
std::string size_text(std::size_t bytes);
/// Parses a whole number in lo..hi (a count, or a flag given in a fixed unit). Raises config_error
/// naming `field` and the range.
std::uint64_t parse_count(std::string_view text, const std::string& field, std::uint64_t lo, std::uint64_t hi);

/// Server-side limits on each connection.
struct server_limits {
    milliseconds handshake_timeout{10'000}; ///< TLS handshake must finish within this (0 disables)
    milliseconds max_age{0};                ///< close connections older than this (0 disables)
    scaled_min handshake_timeout_min, max_age_min; ///< under overload (`[overload] max_age_min`)
    double max_age_jitter = 0.1;            ///< ±fraction, so a fleet does not reconnect at once
    void validate(const std::string& prefix = "limits") const;
    static const policy_description& description();
};

/// Timeouts that shrink under overload (Envoy's overload manager, reduce_timeouts): each timeout
/// given a min (a `*_min` beside it in its own policy, `[overload] <name>_min` in TOML) scales between
/// min and its configured value as the pressure rises above `threshold` — no scaling at or below it,
/// linearly to the min at pressure 1 (timeout_scale.hpp). liveness_config::scales() says whether any does.
struct overload_policy {
    double threshold = 0.8;
    void validate(const std::string& prefix = "overload") const;
    static const policy_description& description();
};

/// TCP keepalive and user-timeout socket options (see docs/liveness.md on why they complement,
/// and do not replace, heartbeats). 0 leaves the system default. With keepalive on, user_timeout
/// must be 0 or at least the probe interval (the kernel's 75 s when interval is 0): a shorter one
/// kills a healthy connection after a single lost probe (gRPC A18, grpc-go #6250).
struct keepalive_options {
    bool enabled = false;
    std::chrono::seconds idle{0};     ///< TCP_KEEPIDLE
    std::chrono::seconds interval{0}; ///< TCP_KEEPINTVL
    std::uint32_t count = 0;          ///< TCP_KEEPCNT
    static constexpr std::uint32_t count_max = 127;
    milliseconds user_timeout{0};     ///< TCP_USER_TIMEOUT
    /// Linux's default TCP_KEEPINTVL (net.ipv4.tcp_keepalive_intvl), used when interval is 0.
    static constexpr std::chrono::seconds system_default_interval{75};
    void validate(const std::string& prefix = "keepalive") const;
    static const policy_description& description();
};

/// Each policy's place in liveness_config (`config.idle`, ...): a slot names the member.
struct idle_slot {
    idle_policy idle;
    idle_policy& policy() noexcept { return idle; }
};
struct heartbeat_slot {
    heartbeat_policy heartbeat;
    heartbeat_policy& policy() noexcept { return heartbeat; }
};
struct request_slot {
    request_policy request;
    request_policy& policy() noexcept { return request; }
};
struct backoff_slot {
    backoff_policy backoff;
    backoff_policy& policy() noexcept { return backoff; }
};
struct limits_slot {
    server_limits limits;
    server_limits& policy() noexcept { return limits; }
};
struct keepalive_slot {
    keepalive_options keepalive;
    keepalive_options& policy() noexcept { return keepalive; }
};
struct overload_slot {
    overload_policy overload;
    overload_policy& policy() noexcept { return overload; }
};
struct output_slot {
    output_policy output; ///< the connection's queue, not its timers (connection_options::output)
    output_policy& policy() noexcept { return output; }
};

namespace detail {
/// A policy judged (config_error) before a constructor's initializers compute anything from it: a
/// time past its range would overflow on the way to nanoseconds.
template <class Policy>
const Policy& validated(const Policy& p) {
    p.validate();
    return p;
}
} // namespace detail

} // namespace heartwheel::net

#endif
