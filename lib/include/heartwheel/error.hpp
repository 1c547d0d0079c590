// heartwheel/error.hpp — the timer core's error codes: what a wheel can refuse.
//
// Connection outcomes (timed out, connection closed, ...) are net/'s: heartwheel/net/connection/errc.hpp.
#ifndef HEARTWHEEL_ERROR_HPP
#define HEARTWHEEL_ERROR_HPP

#include <system_error>
#include <type_traits>

namespace heartwheel {

enum class errc {
    wheel_full = 1, ///< the wheel's cap on pending timers was reached
    wheel_stopped,  ///< the wheel was stopped; it accepts no new timers
};

const std::error_category& heartwheel_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
    return {static_cast<int>(e), heartwheel_category()};
}

} // namespace heartwheel

template <>
struct std::is_error_code_enum<heartwheel::errc> : std::true_type {};

#endif
