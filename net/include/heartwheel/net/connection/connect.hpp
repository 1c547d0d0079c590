// heartwheel/net/connection/connect.hpp — a connect with a deadline kept on the wheel (Beast's
// tcp_stream::async_connect with expires_after, without a timer per socket).
//
// async_connect(socket, endpoint, wheel, timeout, token) starts socket.async_connect and files one
// wheel timer for the deadline. Whichever comes first wins: the connect's own completion (success, or
// its error: connection_refused, ...) cancels the timer; the deadline cancels the connect, which then
// completes with net::errc::timed_out (a distinct error, as Beast's error::timeout) — unless the
// connect had already succeeded, which a late deadline never undoes. The operation is an
// async_compose: any completion token, the handler's executor and cancellation slot honoured.
// Requirements, as for socket.async_connect: the socket outlives the operation, and the wheel and
// the socket are used on one thread (the wheel's).
#ifndef HEARTWHEEL_NET_CONNECT_HPP
#define HEARTWHEEL_NET_CONNECT_HPP

#include <heartwheel/asio_wheel.hpp>
#include <heartwheel/net/connection/errc.hpp>

#include <heartwheel/asio.hpp>

#include <chrono>
#include <memory>
#include <system_error>

namespace heartwheel::net {

namespace detail {

template <class Socket>
struct connect_op {
    Socket& socket;
    typename Socket::endpoint_type endpoint;
    asio_wheel& wheel;
    duration timeout;
    std::shared_ptr<bool> timed_out = std::make_shared<bool>(false);
    timer_handle deadline{};
    bool started = false;

    template <class Self>
    void operator()(Self& self, error_code ec = {}) {
        if (!started) {
            started = true;
            deadline = wheel.schedule_after(timeout, [flag = timed_out, s = &socket] {
                *flag = true;
                error_code ignored;
                s->cancel(ignored); // the connect completes with operation_aborted
            });
            socket.async_connect(endpoint, std::move(self));
            return;
        }
        deadline.cancel();
        if (*timed_out && ec == asio::error::operation_aborted) ec = errc::timed_out;
        self.complete(ec);
    }
};

} // namespace detail

/// Connects `socket` to `endpoint`, giving up after `timeout` with errc::timed_out. Completion
/// signature: void(error_code).
template <class Protocol, class Executor, class Token>
auto async_connect(asio::basic_stream_socket<Protocol, Executor>& socket, const typename Protocol::endpoint& endpoint,
                   asio_wheel& wheel, duration timeout, Token&& token) {
    using socket_type = asio::basic_stream_socket<Protocol, Executor>;
    return asio::async_compose<Token, void(error_code)>(
        detail::connect_op<socket_type>{socket, endpoint, wheel, timeout}, token, socket);
}

} // namespace heartwheel::net

#endif
