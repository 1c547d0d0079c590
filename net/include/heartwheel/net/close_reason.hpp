// heartwheel/net/close_reason.hpp — why a connection closed: net's own reasons, and the
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
/// The reasons above; applications' reasons follow them.
inline constexpr std::size_t builtin_close_reasons = 13;
/// Room for every reason, built in and defined (counters are arrays of this size).
inline constexpr std::size_t max_close_reasons = 32;

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
    return r <= close_reason::handshake_timeout || r == close_reason::max_age;
}

} // namespace heartwheel::net

#endif
