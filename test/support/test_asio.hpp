// test_asio.hpp — the tests' side of the Asio seam. The suites built for both flavours (standalone
// Asio and Boost.Asio; test/CMakeLists.txt) include this instead of Asio's own headers and write
// `asio::` and `error_code`: the same source then tests whichever Asio heartwheel/asio.hpp chose
// (HEARTWHEEL_BOOST_ASIO, set by the heartwheel::boost_* targets).
#ifndef HEARTWHEEL_TEST_ASIO_HPP
#define HEARTWHEEL_TEST_ASIO_HPP

#include <heartwheel/asio.hpp> // TLS: heartwheel/asio_ssl.hpp, where a suite needs it

#if defined(HEARTWHEEL_BOOST_ASIO)
#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/asio/write.hpp>
namespace asio = boost::asio; // no ::asio exists in this flavour
#if defined(BOOST_ASIO_HAS_CO_AWAIT)
#define HWTEST_CO_AWAIT 1
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
/// co_await op(..., tuple_awaitable) → std::tuple<error_code, ...> instead of a throw.
inline constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);
#endif
#else
#include <asio/bind_allocator.hpp>
#include <asio/bind_cancellation_slot.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/read_until.hpp>
#include <asio/signal_set.hpp>
#include <asio/strand.hpp>
#include <asio/use_future.hpp>
#include <asio/write.hpp>
#if defined(ASIO_HAS_CO_AWAIT)
#define HWTEST_CO_AWAIT 1
#include <asio/co_spawn.hpp>
#include <asio/experimental/as_tuple.hpp>
#include <asio/experimental/awaitable_operators.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>
inline constexpr auto tuple_awaitable = asio::experimental::as_tuple(asio::use_awaitable);
#endif
#endif
/// Whether this compiler and Asio have co_await (Asio 1.22 enables it for Clang only with libc++):
/// the suites' coroutine cases are built where it is 1, and test/CMakeLists.txt leaves the
/// coroutine-only suites out where it is not.
#ifndef HWTEST_CO_AWAIT
#define HWTEST_CO_AWAIT 0
#endif

using error_code = heartwheel::error_code;

#endif
