// heartwheel/net/detail/receive_op.hpp — liveness_stream::async_receive's operation: wait without a
// buffer, then read into a chunk of the thread's pool (see liveness_stream.hpp for what each stream does).
//
// The idea: this is what every idle connection keeps pending, so it is as small as Asio lets it be.
// The operation is its own completion handler — the stream's core handle and the application's
// handler, nothing else: no async_compose around it, whose work guard and call count would make
// Asio's wait operation 24 bytes larger (on a socket typed with its io_context's executor, with a
// handler holding a shared_ptr: 96 bytes against 120). Asio's associators — executor, allocator,
// cancellation slot — reach the application's handler through it (the specialisations at the end),
// so the wait runs and is cancelled as the application's handler says, as a composed operation
// would; it allocates as the handler says too when the handler has an allocator of its own, and
// otherwise in memory the stream's core keeps for it (detail/stream_core.hpp: no heap block of its own).
//
// Invariants: every path ends in exactly one complete(), run on the handler's executor and never
// inside the async_receive call itself (a stream already closed completes on a later turn, as a
// full chunk's next read does); reads in flight are counted from the start to the completion; the
// step is back at start before the handler runs (it may start the next receive).
#ifndef HEARTWHEEL_NET_DETAIL_RECEIVE_OP_HPP
#define HEARTWHEEL_NET_DETAIL_RECEIVE_OP_HPP

#include <heartwheel/net/detail/arrival_stamp.hpp>
#include <heartwheel/net/detail/stream_core.hpp>
#include <heartwheel/net/detail/tls_traits.hpp>
#include <heartwheel/net/connection/read_chunk.hpp>

#include <heartwheel/asio.hpp>

#include <cerrno>
#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>

namespace heartwheel::net::detail {

template <class NextLayer, class Handler>
class receive_op {
    static constexpr bool waits = waits_for_readiness<NextLayer>;
    struct no_chunk {};

public:
    template <class H>
    receive_op(const stream_core_ref<NextLayer>& c, H&& h) : c_(c), handler_(std::forward<H>(h)) {}

    /// The application's handler, for Asio's associators.
    const Handler& handler() const noexcept { return handler_; }
    /// The stream's core (named by a moved-from operation too), for the allocator.
    stream_core<NextLayer>* core() const noexcept { return c_.get(); }

    /// Each step's completion: a wait's (ec), a read's (ec, n), a posted turn's ().
    void operator()(error_code ec = {}, std::size_t n = 0) {
        switch (c_->at()) {
        case receive_step::start:
            ++c_->reads; // until finish()
            // A closed stream completes with the close's error, and a full chunk reads again, on a
            // later turn of the executor: never inside the caller's call, and the other connections'
            // handlers get their turn first.
            if (c_->observer->close_error() || (waits && c_->more_waiting)) {
                c_->set_at(receive_step::waited);
                return asio::post(c_->next->get_executor(), std::move(*this));
            }
            if constexpr (waits) {
                return wait();
            } else if constexpr (tls_traits<NextLayer>::is_tls) {
                c_->set_at(receive_step::probed);
                return c_->next->async_read_some(asio::buffer(&c_->probe, 1), std::move(*this));
            } else {
                chunk_ = read_chunk::take();
                c_->set_at(receive_step::read);
                return c_->next->async_read_some(asio::buffer(chunk_.data(), read_chunk::capacity), std::move(*this));
            }
        case receive_step::waited:
            if (!ec && c_->observer == nullptr) ec = asio::error::operation_aborted; // the stream is gone
            if (!ec) ec = c_->observer->close_error();                               // closed meanwhile
            if constexpr (waits) {
                if (!ec) return read_now();
            }
            return finish(ec ? ec : error_code(asio::error::operation_aborted), read_chunk{});
        case receive_step::probed:
            if constexpr (!waits) {
                if (ec || n == 0 || c_->observer == nullptr) return finish(ec, std::move(chunk_));
                chunk_ = read_chunk::take();
                chunk_.data()[0] = c_->probe;
                chunk_.set_size(1);
                if constexpr (tls_traits<NextLayer>::is_tls) {
                    // The rest of the record is decrypted already: this read completes without waiting.
                    if (tls_traits<NextLayer>::has_pending(*c_->next)) {
                        c_->set_at(receive_step::read);
                        return c_->next->async_read_some(asio::buffer(chunk_.data() + 1, read_chunk::capacity - 1),
                                                         std::move(*this));
                    }
                }
                return finish({}, std::move(chunk_));
            }
            break;
        case receive_step::read:
            if constexpr (!waits) {
                chunk_.set_size(chunk_.size() + n);
                return finish(ec, std::move(chunk_));
            }
            break;
        }
    }

private:
    void wait(asio::socket_base::wait_type what = asio::socket_base::wait_read) {
        c_->set_at(receive_step::waited);
        c_->next->lowest_layer().async_wait(what, std::move(*this));
    }

    void read_now() {
        error_code ec;
        std::size_t n = 0;
        auto what = asio::socket_base::wait_read;
        read_chunk got = read_chunk::take();
        time_point arrived = no_arrival;
        if constexpr (is_tls_socket<NextLayer>) {
            using want = typename NextLayer::want;
            want w = want::nothing;
            n = c_->next->read_ready(got.data(), read_chunk::capacity, w, ec, c_->stamps ? &arrived : nullptr);
            if (w == want::write) what = asio::socket_base::wait_write;
        } else {
            if (!c_->next->non_blocking()) c_->next->non_blocking(true, ec);
#ifdef __linux__
            if (!ec && c_->stamps) n = read_stamped(got, arrived, ec);
            else
#endif
            if (!ec) n = c_->next->read_some(asio::buffer(got.data(), read_chunk::capacity), ec);
        }
        if (ec == asio::error::would_block || ec == asio::error::try_again) {
            got.reset(); // nothing there after all: wait holding nothing
            c_->more_waiting = false;
            return wait(what);
        }
        c_->more_waiting = n == read_chunk::capacity || has_pending();
        got.set_size(n);
        finish(ec, std::move(got), arrived);
    }

#ifdef __linux__
    // A TCP socket asked for the kernel's receive stamps (liveness_stream::enable_arrival_stamps): the
    // read is a recvmsg that brings the stamp of its newest byte (detail/arrival_stamp.hpp) along.
    // What read_some does otherwise: EINTR retried, an orderly end is eof.
    std::size_t read_stamped(read_chunk& got, time_point& arrived, error_code& ec) {
        ssize_t r = 0;
        do r = recv_stamped(c_->next->native_handle(), got.data(), read_chunk::capacity, arrived);
        while (r < 0 && errno == EINTR);
        if (r < 0) {
            ec = error_code(errno, asio::error::get_system_category());
            return 0;
        }
        if (r == 0) {
            ec = asio::error::eof;
            return 0;
        }
        return static_cast<std::size_t>(r);
    }
#endif

    /// Bytes that no readiness of the socket would announce (OpenSSL's, for a tls_socket).
    bool has_pending() const noexcept {
        if constexpr (is_tls_socket<NextLayer>)
            return c_->observer != nullptr && tls_traits<NextLayer>::has_pending(*c_->next);
        else
            return false;
    }

    void finish(error_code ec, read_chunk got, time_point arrived = no_arrival) {
        --c_->reads;
        c_->set_at(receive_step::start); // the next receive starts afresh (from inside the handler, too)
        if (got.empty()) {
            got.reset(); // an error brings no bytes: the chunk goes back
            return std::move(handler_)(c_->outcome(ec), std::move(got));
        }
        if (c_->observer) c_->observer->on_bytes_read(got.size(), arrived);
        std::move(handler_)(error_code{}, std::move(got));
    }

    stream_core_ref<NextLayer> c_;
    // Held across an asynchronous read (asio::ssl::stream's, another stream's). A stream that waits for
    // readiness reads without blocking once it is readable and needs no chunk here.
    [[no_unique_address]] std::conditional_t<waits, no_chunk, read_chunk> chunk_{};
    Handler handler_;
};

/// async_receive's initiation: the operation's first step runs in the caller's call.
template <class NextLayer>
struct initiate_receive {
    template <class Handler>
    void operator()(Handler&& h, const stream_core_ref<NextLayer>& c) const {
        receive_op<NextLayer, std::decay_t<Handler>>(c, std::forward<Handler>(h))();
    }
};

} // namespace heartwheel::net::detail

namespace HEARTWHEEL_ASIO_NAMESPACE {
/// A receive runs where, with what allocator and under what cancellation slot its handler says.
template <template <class, class> class Associator, class NextLayer, class Handler, class DefaultCandidate>
struct associator<Associator, heartwheel::net::detail::receive_op<NextLayer, Handler>, DefaultCandidate>
    : Associator<Handler, DefaultCandidate> {
    static typename Associator<Handler, DefaultCandidate>::type
    get(const heartwheel::net::detail::receive_op<NextLayer, Handler>& op) noexcept {
        return Associator<Handler, DefaultCandidate>::get(op.handler());
    }
    static auto get(const heartwheel::net::detail::receive_op<NextLayer, Handler>& op, const DefaultCandidate& c) noexcept
        -> decltype(Associator<Handler, DefaultCandidate>::get(op.handler(), c)) {
        return Associator<Handler, DefaultCandidate>::get(op.handler(), c);
    }
};

/// ...but a handler without an allocator of its own has its receive's operations placed in the
/// stream's core (detail/stream_core.hpp), where the stream keeps memory for them.
template <class NextLayer, class Handler, class DefaultCandidate>
struct associator<associated_allocator, heartwheel::net::detail::receive_op<NextLayer, Handler>, DefaultCandidate> {
private:
    using op = heartwheel::net::detail::receive_op<NextLayer, Handler>;
    using own = heartwheel::net::detail::receive_allocator<void, NextLayer>;
    static constexpr bool in_core = heartwheel::net::detail::stream_core<NextLayer>::memory_size != 0 &&
                                    std::is_same_v<DefaultCandidate, std::allocator<void>> &&
                                    std::is_same_v<associated_allocator_t<Handler, DefaultCandidate>, DefaultCandidate>;

public:
    using type = std::conditional_t<in_core, own, associated_allocator_t<Handler, DefaultCandidate>>;
    static type get(const op& o, const DefaultCandidate& c = DefaultCandidate()) noexcept {
        if constexpr (in_core)
            return own(o.core());
        else
            return associated_allocator<Handler, DefaultCandidate>::get(o.handler(), c);
    }
};
} // namespace HEARTWHEEL_ASIO_NAMESPACE

#endif
