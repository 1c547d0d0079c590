// heartwheel/net/detail/tls_traits.hpp — what liveness_stream and connection need to know of a TLS
// stream, without OpenSSL's headers.
//
// The idea: TCP-only code (heartwheel::net) must compile and link without OpenSSL, yet the same
// templates serve TLS streams. So the templates ask tls_traits<NextLayer>, whose primary says "not
// TLS", and each TLS stream's own header — net/tls/tls_socket.hpp for net::tls_socket, net/tls/ssl_stream.hpp
// for asio::ssl::stream<S> (both in the heartwheel::tls target) — specialises it with the few things
// that need OpenSSL: whether OpenSSL holds decrypted bytes, and how to say close_notify on the way
// out. (A truncation — the peer's FIN without close_notify — is recognised here, by its error's
// category name: any TLS stream may report it.)
//
// Invariant: a stream is never silently treated as plain bytes when it is a TLS stream heartwheel
// knows: net::tls_socket cannot be used without its header (the specialisation comes with the type),
// and asio::ssl::stream without net/tls/ssl_stream.hpp fails to compile with a static_assert naming it.
#ifndef HEARTWHEEL_NET_DETAIL_TLS_TRAITS_HPP
#define HEARTWHEEL_NET_DETAIL_TLS_TRAITS_HPP

#include <heartwheel/asio.hpp>

#include <cstddef>
#include <type_traits>

namespace heartwheel::net {

class tls_socket;

namespace detail {

/// Specialised by a TLS stream's header with: is_tls = true, has_pending(stream) (decrypted bytes
/// that no socket readiness would announce), say_goodbye(stream) (what the close path sends before
/// its FIN), hello_received(stream) (server side: the peer's ClientHello was read whole).
template <class T>
struct tls_traits {
    static constexpr bool is_tls = false;
};

template <class T>
struct is_asio_ssl_stream : std::false_type {};
template <class S>
struct is_asio_ssl_stream<asio::ssl::stream<S>> : std::true_type {};

template <class T>
inline constexpr bool is_tls_socket = std::is_same_v<T, tls_socket>;

/// Whether `ec` is asio::ssl::error::stream_truncated (the peer's FIN without close_notify), from
/// any TLS stream — ours, Asio's, or one wrapping it such as Beast's. Asio declares that error's
/// category with OpenSSL's types, so it is recognised by its category's name and value, which
/// standalone Asio and Boost.Asio share (connection_test checks it against the real error).
inline bool is_tls_truncation(const error_code& ec) noexcept {
    constexpr int stream_truncated = 1;
    if (ec.value() != stream_truncated) return false;
    const char* name = ec.category().name();
    const char want[] = "asio.ssl.stream";
    for (std::size_t i = 0; i < sizeof want; ++i)
        if (name[i] != want[i]) return false;
    return true;
}

/// The check that keeps the invariant above; true when NextLayer may be used.
template <class T>
inline constexpr bool tls_traits_known = !is_asio_ssl_stream<T>::value || tls_traits<T>::is_tls;

} // namespace detail
} // namespace heartwheel::net

#endif
