// heartwheel/net/connection/errc.hpp — the error codes of connection liveness (category "heartwheel.net").
//
// lib/ reports only what a wheel can say (heartwheel::errc: full, stopped); what a connection can say
// lives here. timed_out is distinct from asio::error::operation_aborted on purpose: an application
// must be able to tell "a liveness policy gave up" from "somebody cancelled".
#ifndef HEARTWHEEL_NET_ERRC_HPP
#define HEARTWHEEL_NET_ERRC_HPP

#include <system_error>
#include <type_traits>

namespace heartwheel::net {

enum class errc {
    timed_out = 1,     ///< a liveness policy closed the connection or gave up waiting (idle, heartbeat,
                       ///< read/write timeout, handshake, request deadline)
    connection_closed, ///< the connection closed (peer, application, shutdown) with the operation outstanding
    duplicate_request, ///< a request id that is already outstanding
    parked,            ///< a read ended because the connection's server parked it while idle (http::server's
                       ///< own reads only: an application never sees it)
};

const std::error_category& net_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept { return {static_cast<int>(e), net_category()}; }

} // namespace heartwheel::net

template <>
struct std::is_error_code_enum<heartwheel::net::errc> : std::true_type {};

#endif
