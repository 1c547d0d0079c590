// heartwheel/net/detail/io_op.hpp — liveness_stream's async_read_some and async_write_some: one
// operation on the next layer, reported to the observer (the connection's liveness) as it completes.
//
// The idea: every write the connection makes and every read_some an application or a framing layer
// (Beast) makes goes through here, so it is as small and direct as the receive (receive_op.hpp): the
// operation is its own completion handler — the stream's core handle, the buffers, its step and the
// application's handler — with no async_compose around it (whose work guard and call count each
// pending operation would carry, and whose indirections each completion would pay). Asio's
// associators reach the application's handler through it (the specialisation at the end).
//
// A read on a plain socket waits for readiness and reads in its own completion, as the receive does,
// instead of letting Asio read in the reactor: the bytes stay in the kernel (where input_waiting()
// sees them) until the turn that hands them to the application. Asio's reactor read would take them
// out of the kernel and queue the completion, behind a wheel expiry when a write on the same socket
// completed in the same pass — after a process stall, a talking WebSocket peer was then judged idle
// with its messages read and not yet handed over. A read that filled its buffer reads again before
// waiting (epoll is edge-triggered: bytes left behind would announce nothing).
//
// An eager read (liveness_stream::async_read_some_eagerly) is the exception, for a peer expected to
// speak within moments (a client's next request right after its answer): it lets Asio read in the
// reactor — a failed attempt when it starts, then the read as the bytes arrive — instead of a
// readiness wait, which Asio's epoll reactor starts with an epoll_ctl each time. It holds its buffer
// while it waits, so its caller keeps it short (and cancels it for a wait that holds nothing).
//
// A write on a plain socket or a tls_socket is tried at once, as nginx writes: the bytes taken now complete
// the operation on a later turn (posted, as Asio's own speculative write completes), and only a write
// the socket cannot take now is started — the one the observer hears of (on_write_started), the one a
// write timeout times, waiting for writability in Asio. A response that fits the socket's buffer, which
// is nearly every one, arms no timer; the cost of trying is Asio's own (its async write tries first
// too). A short write completes short (write_some's contract): the caller's next write waits.
//
// Invariants: every path ends in exactly one completion, on the handler's executor and never inside
// the initiating call (a stream already closed completes on a later turn with the close's error);
// reads are counted in flight from their start to their completion; the observer hears bytes only
// while the stream lives.
#ifndef HEARTWHEEL_NET_DETAIL_IO_OP_HPP
#define HEARTWHEEL_NET_DETAIL_IO_OP_HPP

#include <heartwheel/net/detail/stream_core.hpp>
#include <heartwheel/net/detail/tls_traits.hpp>

#include <heartwheel/asio.hpp>

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace heartwheel::net::detail {

/// What a write tried at once took (empty for everything else: a pending read costs no byte more).
template <bool TriesFirst>
struct io_op_taken {};
template <>
struct io_op_taken<true> {
    std::size_t taken = 0;
};

template <class NextLayer, class Buffers, bool Write, class Handler, bool Eager = false>
class io_op : private io_op_taken<Write && waits_for_readiness<NextLayer>> {
    static constexpr bool waits = !Write && !Eager && waits_for_readiness<NextLayer> && !is_tls_socket<NextLayer>;
    static constexpr bool tries_first = Write && waits_for_readiness<NextLayer>; // a plain socket, a tls_socket

public:
    template <class H>
    io_op(const stream_core_ref<NextLayer>& c, const Buffers& b, H&& h)
        : c_(c), buffers_(b), handler_(std::forward<H>(h)) {}

    /// The application's handler, for Asio's associators.
    const Handler& handler() const noexcept { return handler_; }

    /// The start (), a closed stream's later turn (), the next layer's completion (ec, n).
    void operator()(error_code ec = {}, std::size_t n = 0) {
        switch (step_) {
        case step::start:
            if (c_->observer->close_error()) {
                step_ = step::closed;
                return asio::post(c_->next->get_executor(), std::move(*this));
            }
            step_ = step::running;
            if constexpr (Write) {
                if constexpr (tries_first) {
                    std::size_t now = 0;
                    if constexpr (is_tls_socket<NextLayer>) {
                        now = c_->next->write_ready(buffers_, ec);
                    } else {
                        if (!c_->next->non_blocking()) c_->next->non_blocking(true, ec);
                        if (!ec) now = c_->next->write_some(buffers_, ec);
                    }
                    if (!ec && (now > 0 || asio::buffer_size(buffers_) == 0)) {
                        this->taken = now;
                        step_ = step::taken;
                        return asio::post(c_->next->get_executor(), std::move(*this));
                    }
                    // Not taken now (would block), or failed: the write waits, or reports the failure.
                }
                c_->observer->on_write_started();
                return c_->next->async_write_some(buffers_, std::move(*this)); // alive: it started it
            } else {
                ++c_->reads;
                if constexpr (waits) {
                    // The last read filled its buffer, or this one reads nothing (async_read_until
                    // asks for an empty read to complete a line it already holds): read on a later turn.
                    if (c_->more_waiting || asio::buffer_size(buffers_) == 0) {
                        step_ = step::waited;
                        return asio::post(c_->next->get_executor(), std::move(*this));
                    }
                    step_ = step::waited;
                    return c_->next->lowest_layer().async_wait(asio::socket_base::wait_read, std::move(*this));
                } else {
                    return c_->next->async_read_some(buffers_, std::move(*this));
                }
            }
        case step::waited:
            if constexpr (waits) {
                if (!ec && c_->observer == nullptr) ec = asio::error::operation_aborted; // the stream is gone
                if (!ec) ec = c_->observer->close_error();                               // closed meanwhile
                if (!ec) {
                    if (!c_->next->non_blocking()) c_->next->non_blocking(true, ec);
                    if (!ec) n = c_->next->read_some(buffers_, ec);
                    if (ec == asio::error::would_block || ec == asio::error::try_again) {
                        c_->more_waiting = false; // drained: the next bytes announce themselves
                        return c_->next->lowest_layer().async_wait(asio::socket_base::wait_read, std::move(*this));
                    }
                    c_->more_waiting = !ec && n > 0 && n == asio::buffer_size(buffers_);
                }
                step_ = step::running;
                break;
            }
            [[fallthrough]];
        case step::closed:
            // The close's error (it does not reopen), or operation_aborted once the stream is gone.
            if (c_->observer != nullptr) ec = c_->observer->close_error();
            return std::move(handler_)(ec ? ec : error_code(asio::error::operation_aborted), std::size_t{0});
        case step::taken:
            if constexpr (tries_first) {
                n = this->taken; // written, whatever happened since: reported as Asio reports a write
                step_ = step::running;
                break;
            }
            [[fallthrough]];
        case step::running:
            break;
        }
        if constexpr (!Write) --c_->reads;
        if constexpr (Eager) c_->more_waiting = !ec && n > 0 && n == asio::buffer_size(buffers_);
        if (n > 0 && c_->observer) {
            if constexpr (Write) c_->observer->on_bytes_written(n, asio::buffer_size(buffers_));
            else c_->observer->on_bytes_read(n, no_arrival);
        }
        std::move(handler_)(c_->outcome(ec), n);
    }

private:
    enum class step : std::uint8_t { start, closed, running, waited, taken };
    stream_core_ref<NextLayer> c_;
    Buffers buffers_;
    step step_ = step::start;
    Handler handler_;
};

/// async_read_some's (Write false), async_write_some's or an eager read's initiation: the first step
/// runs in the call.
template <class NextLayer, bool Write, bool Eager = false>
struct initiate_io {
    template <class Handler, class Buffers>
    void operator()(Handler&& h, const stream_core_ref<NextLayer>& c, const Buffers& b) const {
        io_op<NextLayer, Buffers, Write, std::decay_t<Handler>, Eager>(c, b, std::forward<Handler>(h))();
    }
};

} // namespace heartwheel::net::detail

namespace HEARTWHEEL_ASIO_NAMESPACE {
/// A read or write runs where, with what allocator and under what cancellation slot its handler says.
template <template <class, class> class Associator, class NextLayer, class Buffers, bool Write, class Handler,
          bool Eager, class DefaultCandidate>
struct associator<Associator, heartwheel::net::detail::io_op<NextLayer, Buffers, Write, Handler, Eager>, DefaultCandidate>
    : Associator<Handler, DefaultCandidate> {
    using op = heartwheel::net::detail::io_op<NextLayer, Buffers, Write, Handler, Eager>;
    static typename Associator<Handler, DefaultCandidate>::type get(const op& o) noexcept {
        return Associator<Handler, DefaultCandidate>::get(o.handler());
    }
    static auto get(const op& o, const DefaultCandidate& c) noexcept
        -> decltype(Associator<Handler, DefaultCandidate>::get(o.handler(), c)) {
        return Associator<Handler, DefaultCandidate>::get(o.handler(), c);
    }
};
} // namespace HEARTWHEEL_ASIO_NAMESPACE

#endif
