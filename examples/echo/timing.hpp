// timing.hpp — how the echo server times its sessions, chosen by --timers NAME. The example's own
// timing is the library's: "wheel", net's connection_liveness on the worker's wheel. Any other
// timing is plugged in from outside the example by name (a `timing` registered before main runs):
// the benchmarks' baselines are registered this way by tools/echo_baselines, which echo_server is
// linked with, so the example's sources hold only the wheel and never name what compares with it.
// A timing starts a session over each kind of stream the server accepts; the registry is filled
// during static initialisation and only read afterwards (no lock).
#ifndef HEARTWHEEL_ECHO_TIMING_HPP
#define HEARTWHEEL_ECHO_TIMING_HPP

#include "worker.hpp"

#include <heartwheel/net/tls/tls_socket.hpp>

#include <asio/ip/address.hpp>

#include <string>
#include <string_view>

namespace echo {

struct timing {
    std::string name; ///< its --timers value
    std::string help; ///< "NAME for <help>" in --help
    /// Whether scaled timeouts (--*-min, [overload]) may be asked for with it; if not, asking for both
    /// is a usage error.
    bool scales = false;
    /// Start a session on `w` over a stream accepted for it: plain TCP with a thread per core, plain
    /// TCP on the thread pool, TLS.
    void (*start_plain)(worker& w, core_socket s, const asio::ip::address& peer) = nullptr;
    void (*start_pooled)(worker& w, strand_socket s, const asio::ip::address& peer) = nullptr;
    void (*start_tls)(worker& w, heartwheel::net::tls_socket s, const asio::ip::address& peer) = nullptr;
};

/// Adds a timing (during static initialisation); returns true so that a namespace-scope constant can
/// hold the result. A name already taken, or "wheel", is a programming error: std::logic_error.
bool register_timing(timing t);
/// The timing registered as `name`; nullptr for "wheel" (the library's) or a name nobody registered.
const timing* find_timing(std::string_view name);
/// The values --timers accepts: "wheel, asio or none" (for an error), or with each one's help
/// ("wheel, asio for ..., or none for ...") for --help.
std::string timing_choices(bool with_help);

} // namespace echo

#endif
