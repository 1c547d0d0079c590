// heartwheel/asio.hpp — the one seam between heartwheel and Asio: standalone Asio or Boost.Asio.
//
// Every header and source of lib/ and net/ reaches Asio through this header (and asio_ssl.hpp for
// TLS) and names it `heartwheel::asio`, its error code `heartwheel::error_code` and its exception
// `heartwheel::system_error`. Which Asio that is is chosen by one macro, HEARTWHEEL_BOOST_ASIO, that
// the CMake targets set: heartwheel::boost_* targets define it (Boost.Asio, boost::system error
// codes), heartwheel::* targets do not (standalone Asio, std error codes). A program uses one
// flavour: both define the same heartwheel symbols.
//
// Invariant: nothing here defines a name outside namespace heartwheel (but HEARTWHEEL_ macros), so
// a consumer's own `asio::` (standalone) and `boost::asio::` spellings keep meaning what they meant.
// The seam only re-declares Asio's own `ssl::stream` template (a declaration, no definition) and
// includes the OpenSSL-free `ssl/stream_base.hpp`, so that TCP-only code can name a TLS stream's type
// and its handshake_type without OpenSSL's headers (TLS itself: asio_ssl.hpp, the heartwheel::tls target).
// heartwheel's own error enums (heartwheel::errc, net::errc) are std error codes in both flavours;
// Boost.System (1.79 and later) converts and compares them with boost::system::error_code.
// HEARTWHEEL_ASIO_NAMESPACE spells the namespace `heartwheel::asio` names, for the one thing an alias
// cannot do: specialise Asio's traits (`asio::associator`) for heartwheel's own handler types.
// HEARTWHEEL_ASIO_REACTIVE_WAIT is defined where Asio waits on a socket with a reactor (epoll,
// kqueue, select: not IOCP, not io_uring): there its wait operation's type is known, and a stream
// keeps memory for the one wait it keeps pending (net/detail/stream_core.hpp).
// That is the one use of Asio's detail:: namespace, and it is made only on an Asio whose internals
// heartwheel was built and tested with (HEARTWHEEL_ASIO_INTERNALS_KNOWN: 1.22 to 1.26, standalone or
// Boost's); on any other Asio the stream's receive allocates as Asio does (a heap block more per
// pending receive, nothing unsafe), and the project's own tests fail loudly
// (connection_test: the_asio_in_use_is_one_heartwheel_knows) until someone checks the three things
// heartwheel assumes of Asio — the wait operation's template (net/detail/stream_core.hpp), the two
// strand types a type-erased executor is recognised by (net/detail/home_executor.hpp), and the TLS
// truncation's category name (net/detail/tls_traits.hpp) — and widens the range here.
#ifndef HEARTWHEEL_ASIO_HPP
#define HEARTWHEEL_ASIO_HPP

// A libstdc++ header before Asio's configuration: Asio picks aligned_alloc or operator new by
// whether it has seen the standard library yet, and every translation unit must pick the same.
#include <cstddef>

#if defined(HEARTWHEEL_BOOST_ASIO)
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associator.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/basic_stream_socket.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/compose.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/execution/context.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/query.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl/stream_base.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/version.hpp>
#include <boost/asio/associated_allocator.hpp>
#include <boost/asio/recycling_allocator.hpp>
#if BOOST_ASIO_VERSION >= 102200 && BOOST_ASIO_VERSION < 102700 // Asio 1.22 (Boost 1.79) to 1.26 (Boost 1.81)
#define HEARTWHEEL_ASIO_INTERNALS_KNOWN 1
#endif
#if defined(HEARTWHEEL_ASIO_INTERNALS_KNOWN) && !defined(BOOST_ASIO_HAS_IOCP) && !defined(BOOST_ASIO_HAS_IO_URING_AS_DEFAULT)
#include <boost/asio/detail/reactive_wait_op.hpp>
#define HEARTWHEEL_ASIO_REACTIVE_WAIT 1
#endif
#include <boost/system/error_code.hpp>
#include <boost/system/system_error.hpp>
#include <boost/version.hpp>
// Cancellation slots (Asio 1.19) and error_code built from std error enums (Boost.System 1.79).
static_assert(BOOST_VERSION >= 107900, "heartwheel's Boost.Asio flavour needs Boost 1.79 or later");
namespace boost::asio::ssl {
template <typename Stream>
class stream;
} // namespace boost::asio::ssl
#define HEARTWHEEL_ASIO_NAMESPACE boost::asio
namespace heartwheel {
namespace asio = ::boost::asio;
using error_code = ::boost::system::error_code;
using system_error = ::boost::system::system_error;
inline constexpr bool uses_boost_asio = true;
} // namespace heartwheel
#else
#if defined(BOOST_ASIO_DETAIL_CONFIG_HPP) // any Boost.Asio header includes its configuration
// Boost.Asio is in this translation unit, and heartwheel's standalone-Asio flavour was chosen: its
// types would not be Boost's (template errors far from the cause). Name the target to link instead.
#error "heartwheel: this program uses Boost.Asio; link heartwheel::boost_net (heartwheel::boost_driver, heartwheel::boost_tls, heartwheel::beast), which define HEARTWHEEL_BOOST_ASIO, instead of heartwheel::net / heartwheel::driver / heartwheel::tls"
#endif
#include <asio/any_io_executor.hpp>
#include <asio/associated_cancellation_slot.hpp>
#include <asio/associator.hpp>
#include <asio/associated_executor.hpp>
#include <asio/async_result.hpp>
#include <asio/basic_stream_socket.hpp>
#include <asio/bind_executor.hpp>
#include <asio/buffer.hpp>
#include <asio/cancellation_type.hpp>
#include <asio/compose.hpp>
#include <asio/dispatch.hpp>
#include <asio/error.hpp>
#include <asio/execution/context.hpp>
#include <asio/execution_context.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/ip/address.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/post.hpp>
#include <asio/query.hpp>
#include <asio/read.hpp>
#include <asio/ssl/stream_base.hpp>
#include <asio/steady_timer.hpp>
#include <asio/version.hpp>
#include <asio/associated_allocator.hpp>
#include <asio/recycling_allocator.hpp>
#if ASIO_VERSION >= 102200 && ASIO_VERSION < 102700 // Asio 1.22 to 1.26
#define HEARTWHEEL_ASIO_INTERNALS_KNOWN 1
#endif
#if defined(HEARTWHEEL_ASIO_INTERNALS_KNOWN) && !defined(ASIO_HAS_IOCP) && !defined(ASIO_HAS_IO_URING_AS_DEFAULT)
#include <asio/detail/reactive_wait_op.hpp>
#define HEARTWHEEL_ASIO_REACTIVE_WAIT 1
#endif
static_assert(ASIO_VERSION >= 102200, "heartwheel needs standalone Asio 1.22 or later");
#include <system_error>
namespace asio::ssl {
template <typename Stream>
class stream;
} // namespace asio::ssl
#define HEARTWHEEL_ASIO_NAMESPACE asio
namespace heartwheel {
namespace asio = ::asio;
using error_code = std::error_code;
using system_error = std::system_error;
inline constexpr bool uses_boost_asio = false;
} // namespace heartwheel
#endif

#endif
