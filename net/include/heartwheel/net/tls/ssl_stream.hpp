// heartwheel/net/tls/ssl_stream.hpp — liveness_stream and connection over Asio's own TLS stream,
// asio::ssl::stream<S> (part of the heartwheel::tls target: it needs OpenSSL).
//
// Include it wherever a connection or liveness_stream is made over asio::ssl::stream; without it
// they refuse to compile (a static_assert names this header) rather than treat TLS as plain bytes.
// net::tls_socket (net/tls/tls_socket.hpp) is the leaner TLS stream: no record buffers of its own, and
// close_notify on the way out; asio::ssl::stream is supported for applications that already have one.
// What differs from a tls_socket: a receive waits with a one-byte read (OpenSSL then holds the rest
// of the record, read at once), and the close path sends no close_notify (Asio says it only through
// async_shutdown, which a closing connection does not wait for).
#ifndef HEARTWHEEL_NET_SSL_STREAM_HPP
#define HEARTWHEEL_NET_SSL_STREAM_HPP

#include <heartwheel/asio_ssl.hpp>
#include <heartwheel/net/detail/tls_traits.hpp>

#include <openssl/ssl.h>

namespace heartwheel::net::detail {

template <class S>
struct tls_traits<asio::ssl::stream<S>> {
    static constexpr bool is_tls = true;
    static bool has_pending(asio::ssl::stream<S>& s) noexcept { return ::SSL_pending(s.native_handle()) > 0; }
    static void say_goodbye(asio::ssl::stream<S>&) noexcept {}
    static bool hello_received(asio::ssl::stream<S>& s) noexcept { return ::SSL_get_state(s.native_handle()) != TLS_ST_BEFORE; }
};

} // namespace heartwheel::net::detail

#endif
