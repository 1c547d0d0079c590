// heartwheel/error.hpp — the library's error codes.
//
// One std::error_category for everything heartwheel reports: a full or stopped wheel, and the
// liveness outcomes of net/ (timed_out is distinct from asio::error::operation_aborted on purpose:
// an application must be able to tell "we gave up waiting" from "somebody cancelled").
#ifndef HEARTWHEEL_ERROR_HPP
#define HEARTWHEEL_ERROR_HPP

#include <system_error>
#include <type_traits>

namespace heartwheel {

enum class errc {
    wheel_full = 1,     ///< the wheel's cap on pending timers was reached
    wheel_stopped,      ///< the wheel was stopped; it accepts no new timers
    timed_out,          ///< a liveness policy gave up waiting (idle, heartbeat, request, handshake)
    connection_closed,  ///< the connection closed while the operation was outstanding
    duplicate_request,  ///< a request id that is already outstanding
    invalid_config,     ///< a policy value outside its accepted range
};

const std::error_category& heartwheel_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
    return {static_cast<int>(e), heartwheel_category()};
}

} // namespace heartwheel

template <>
struct std::is_error_code_enum<heartwheel::errc> : std::true_type {};

#endif
