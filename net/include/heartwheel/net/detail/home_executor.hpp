// heartwheel/net/detail/home_executor.hpp — whether the calling thread is inside an object's own
// strand, so that a call from elsewhere can be posted there instead of racing.
//
// In the thread-pool model (one io_context run by N threads) each shard — a wheel and the connections
// it times — lives on one strand, and everything of the shard runs inside it. A call from another
// strand or thread (a broadcast from another shard's connection, a close from a control thread, a
// backend's answer) must not run inline: running_in_home() says false there and the caller posts.
// An executor that is not a strand (a thread-per-core io_context's own executor) has no such check:
// its objects are called from its one thread, which is the caller's discipline, as in Asio itself;
// running_in_home() says true so that calls stay inline (and synchronous) there.
#ifndef HEARTWHEEL_NET_DETAIL_HOME_EXECUTOR_HPP
#define HEARTWHEEL_NET_DETAIL_HOME_EXECUTOR_HPP

#include <heartwheel/asio.hpp>

#if defined(HEARTWHEEL_BOOST_ASIO)
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#else
#include <asio/io_context.hpp>
#include <asio/strand.hpp>
#endif

#include <type_traits>
#include <typeinfo>

namespace heartwheel::net::detail {

template <class T>
struct is_strand : std::false_type {};
template <class Inner>
struct is_strand<asio::strand<Inner>> : std::true_type {};

/// Whether `ex` is (or, type-erased, holds) a strand: only then can a call come from outside it
/// while the program runs (an object asks once, when it is made, and skips the check otherwise).
template <class Executor>
bool is_strand_executor(const Executor& ex) noexcept {
    if constexpr (is_strand<Executor>::value) {
        return true;
    } else if constexpr (std::is_same_v<Executor, asio::any_io_executor>) {
        const std::type_info& type = ex.target_type();
        return type == typeid(asio::strand<asio::io_context::executor_type>) ||
               type == typeid(asio::strand<asio::any_io_executor>);
    } else {
        return false;
    }
}

/// False only when `ex` is (or, type-erased, holds) a strand that is not running in this thread.
template <class Executor>
bool running_in_home(const Executor& ex) noexcept {
    if constexpr (is_strand<Executor>::value) {
        return ex.running_in_this_thread();
    } else if constexpr (std::is_same_v<Executor, asio::any_io_executor>) {
        // target_type() first: Asio 1.22's any_executor::target<T>() returns its target as a T
        // without checking that it is one.
        using io_strand = asio::strand<asio::io_context::executor_type>;
        using any_strand = asio::strand<asio::any_io_executor>;
        const std::type_info& type = ex.target_type();
        if (type == typeid(io_strand)) return ex.template target<io_strand>()->running_in_this_thread();
        if (type == typeid(any_strand)) return ex.template target<any_strand>()->running_in_this_thread();
        return true;
    } else {
        return true;
    }
}

} // namespace heartwheel::net::detail

#endif
