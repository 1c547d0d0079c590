// heartwheel/net/connection/close_reason.hpp — why a connection closed: net's own reasons, and the
// application's, defined by name.
//
// net/ knows the reasons its policies and its connection can decide (idle, heartbeat, timeouts,
// handshake, age, shutdown, peer, I/O); an application adds its own (the echo server's
// "line-too-long" and "busy") with define_close_reason(), so net/ never lists an application's
// vocabulary. Every reason has a stable small value, so counters index an array by it. The names are
// what logs, BYE lines and metrics labels show.
#ifndef HEARTWHEEL_NET_CLOSE_REASON_HPP
#define HEARTWHEEL_NET_CLOSE_REASON_HPP

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace heartwheel::net {

enum class close_reason : std::uint8_t {
    reader_idle, writer_idle, all_idle, heartbeat_timeout, read_timeout, write_timeout,
    handshake_timeout, handshake_failed, max_age, shutdown, peer_closed, io_error,
    slow_consumer, ///< more queued for the peer than its output_policy allows (it does not read)
};
/// Each built-in reason's name, whether a liveness policy decides it (a pending operation then
/// completes with errc::timed_out), whether it judges the peer dead (it answered nothing: the
/// close does not linger for its end of stream), and whether it judges that the peer does not read
/// (the close resets the connection). One row per reason, at its value (checked below).
struct builtin_reason {
    close_reason reason;
    const char* name;
    bool decided_by_policy;
    bool peer_dead = false;
    bool peer_not_reading = false;
};
inline constexpr builtin_reason builtin_reasons[] = {
    {close_reason::reader_idle, "reader-idle", true},
    {close_reason::writer_idle, "writer-idle", true},
    {close_reason::all_idle, "all-idle", true},
    {close_reason::heartbeat_timeout, "heartbeat-timeout", true, true},
    {close_reason::read_timeout, "read-timeout", true},
    {close_reason::write_timeout, "write-timeout", true, false, true},
    {close_reason::handshake_timeout, "handshake-timeout", true},
    {close_reason::handshake_failed, "handshake-failed", false},
    {close_reason::max_age, "max-age", true},
    {close_reason::shutdown, "shutdown", false},
    {close_reason::peer_closed, "peer-closed", false},
    {close_reason::io_error, "io-error", false},
    {close_reason::slow_consumer, "slow-consumer", false, false, true},
};
/// The reasons above; applications' reasons follow them.
inline constexpr std::size_t builtin_close_reasons = sizeof(builtin_reasons) / sizeof(builtin_reasons[0]);
namespace detail {
constexpr bool reasons_in_order() noexcept {
    for (std::size_t i = 0; i < builtin_close_reasons; ++i)
        if (static_cast<std::size_t>(builtin_reasons[i].reason) != i) return false;
    return true;
}
} // namespace detail
static_assert(detail::reasons_in_order(), "builtin_reasons: one row per close_reason, at its value");
/// Room for every reason, built in and defined (counters are arrays of this size).
inline constexpr std::size_t max_close_reasons = 48;

/// The reason called `name` (lowercase with dashes, like "line-too-long"): a built-in one if the name
/// is one, else the application's, defined at its first use. Thread-safe. Throws std::length_error
/// when more than max_close_reasons would exist.
close_reason define_close_reason(std::string_view name);
/// How many reasons exist now (built in + defined): iterate [0, count) for metrics.
std::size_t close_reason_count() noexcept;
/// "reader-idle", "heartbeat-timeout", ..., or the defined name.
const char* to_string(close_reason r) noexcept;
/// Decided by a liveness policy (idle, heartbeat, read/write/handshake timeouts, max age): an
/// operation pending when the connection closes for such a reason completes with errc::timed_out.
constexpr bool is_policy_reason(close_reason r) noexcept {
    const auto i = static_cast<std::size_t>(r);
    return i < builtin_close_reasons && builtin_reasons[i].decided_by_policy;
}
/// The peer was judged dead (the heartbeat's last miss: it answered nothing, and had nothing
/// waiting unread): a close for it does not wait for the peer's end of stream.
constexpr bool is_peer_dead_reason(close_reason r) noexcept {
    const auto i = static_cast<std::size_t>(r);
    return i < builtin_close_reasons && builtin_reasons[i].peer_dead;
}
/// The peer does not read what it is sent (write-timeout, slow-consumer): a close for it is a reset
/// (connection.hpp, finish_close), not a FIN queued behind bytes the peer will never take.
constexpr bool is_peer_not_reading_reason(close_reason r) noexcept {
    const auto i = static_cast<std::size_t>(r);
    return i < builtin_close_reasons && builtin_reasons[i].peer_not_reading;
}

} // namespace heartwheel::net

#endif
