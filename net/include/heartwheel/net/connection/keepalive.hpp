// heartwheel/net/connection/keepalive.hpp — TCP keepalive and TCP_USER_TIMEOUT on an Asio socket.
//
// These complement heartbeats, they do not replace them: kernel keepalives prove only that the peer's
// TCP stack answers (not that the application is alive or its event loop is not stuck), they are
// answered by middleboxes that terminate TCP, and their probes start only after the idle time.
// TCP_USER_TIMEOUT bounds how long sent data may stay unacknowledged, which catches a dead peer while
// we are writing — a case where keepalive probes are never sent. See docs/liveness.md.
#ifndef HEARTWHEEL_NET_KEEPALIVE_HPP
#define HEARTWHEEL_NET_KEEPALIVE_HPP

#include <heartwheel/asio.hpp>
#include <heartwheel/net/policies/policies.hpp>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <system_error>

namespace heartwheel::net {

/// Applies the options to a connected or listening TCP socket (anything with native_handle()).
/// Returns the first error from setsockopt; unset (zero) values keep the system default.
template <class Socket>
error_code apply_keepalive(Socket& socket, const keepalive_options& o) {
    o.validate();
    const int fd = socket.native_handle();
    auto set = [fd](int level, int name, int value) -> error_code {
        if (::setsockopt(fd, level, name, &value, sizeof value) != 0) return error_code(errno, asio::error::get_system_category());
        return {};
    };
    if (auto ec = set(SOL_SOCKET, SO_KEEPALIVE, o.enabled ? 1 : 0)) return ec;
    if (o.enabled && o.idle.count() > 0)
        if (auto ec = set(IPPROTO_TCP, TCP_KEEPIDLE, static_cast<int>(o.idle.count()))) return ec;
    if (o.enabled && o.interval.count() > 0)
        if (auto ec = set(IPPROTO_TCP, TCP_KEEPINTVL, static_cast<int>(o.interval.count()))) return ec;
    if (o.enabled && o.count > 0)
        if (auto ec = set(IPPROTO_TCP, TCP_KEEPCNT, static_cast<int>(o.count))) return ec;
    if (o.user_timeout.count() > 0)
        if (auto ec = set(IPPROTO_TCP, TCP_USER_TIMEOUT, static_cast<int>(o.user_timeout.count()))) return ec;
    return {};
}

} // namespace heartwheel::net

#endif
