// heartwheel/asio_ssl.hpp — the seam's TLS half: Asio's ssl (standalone or Boost, as
// heartwheel/asio.hpp chooses), reached as heartwheel::asio::ssl. Kept apart so that code without TLS
// never includes OpenSSL's headers.
#ifndef HEARTWHEEL_ASIO_SSL_HPP
#define HEARTWHEEL_ASIO_SSL_HPP

#include <heartwheel/asio.hpp>

#if defined(HEARTWHEEL_BOOST_ASIO)
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/ssl/stream_base.hpp>
#else
#include <asio/ssl/context.hpp>
#include <asio/ssl/error.hpp>
#include <asio/ssl/stream.hpp>
#include <asio/ssl/stream_base.hpp>
#endif

#endif
