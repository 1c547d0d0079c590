// heartwheel/testing/memory_stream.hpp — two connected in-memory streams: what a test runs a
// net::connection (or any Asio code) over instead of a socket pair. Beast's test::stream is the model.
//
// make_memory_pair(executor) returns two ends of one pipe. Each end is an AsyncReadStream and
// AsyncWriteStream (and a SyncReadStream/SyncWriteStream that never blocks: would_block), and its
// own lowest layer with the socket calls a net::connection makes — is_open, available, shutdown,
// close, async_wait — so `net::connection<testing::memory_stream>` runs unchanged, and with a
// manual_scheduler as its context's clock a test of "a silent peer is closed after 30 s" runs in
// microseconds with nothing on the network and no sleeping.
//
// What it models, as TCP does for the case a liveness test cares about:
// - bytes written on one end are read on the other, in order, as soon as they are written;
// - shutdown(shutdown_send) or close() on one end is the other's end of stream (eof), once it has
//   read every byte sent before it; a write to an end that was closed fails connection_reset, a
//   write after one's own shutdown_send broken_pipe;
// - set_receive_capacity(n) bounds what an end holds unread: past it the peer's writes wait (a
//   partial write moves what fits) — a peer that does not read, its socket buffers full;
// - close() and cancel() complete the end's own pending operations with operation_aborted; an
//   operation on a closed end fails bad_descriptor.
// Not modelled: a reset's loss of unread bytes, per-operation cancellation slots, wait_error.
//
// Completions: each is posted to its handler's associated executor (the end's by default), never
// run inside its initiating call; a pending operation counts as outstanding work, as a socket's
// does, so io_context::run() does not return while a read waits — a test polls (io.poll()) or
// runs for a bound. The two ends may live on different executors and threads (a mutex guards the
// pipe); each end is used as one socket is: one read and one write pending at most.
//
// Invariants: an end's pending read (or wait for readability) is pending only while it has nothing
// unread and no end of stream to report; a pending write (or wait for writability) only while the
// peer's unread bytes fill its capacity; every operation completes exactly once, or is destroyed
// unrun by its execution context's shutdown (detail/memory_pipe.hpp).
#ifndef HEARTWHEEL_TESTING_MEMORY_STREAM_HPP
#define HEARTWHEEL_TESTING_MEMORY_STREAM_HPP

#include <heartwheel/asio.hpp>
#include <heartwheel/testing/detail/memory_pipe.hpp>

#include <cstddef>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace heartwheel::testing {

/// One end of an in-memory pipe (see the top of this file). Made in pairs: make_memory_pair().
class memory_stream {
public:
    using executor_type = asio::any_io_executor;
    using lowest_layer_type = memory_stream;
    /// Not a TCP socket: a connection applies no TCP option to it.
    struct protocol_type {};

    /// An end connected to nothing, as a socket not yet connected: closed until a pair's end is
    /// moved into it.
    explicit memory_stream(executor_type ex) : ex_(std::move(ex)) {}
    template <class Context, std::enable_if_t<std::is_convertible_v<Context&, asio::execution_context&>, int> = 0>
    explicit memory_stream(Context& ctx) : ex_(ctx.get_executor()) {}

    memory_stream(memory_stream&& o) noexcept : pipe_(std::move(o.pipe_)), side_(o.side_), ex_(o.ex_) {}
    memory_stream& operator=(memory_stream&& o) noexcept {
        if (this != &o) {
            close();
            pipe_ = std::move(o.pipe_);
            side_ = o.side_;
            ex_ = o.ex_;
        }
        return *this;
    }
    memory_stream(const memory_stream&) = delete;
    memory_stream& operator=(const memory_stream&) = delete;
    /// Closes this end, as a socket's destructor does: the peer reads the end of the stream.
    ~memory_stream() { close(); }

    executor_type get_executor() const noexcept { return ex_; }
    lowest_layer_type& lowest_layer() noexcept { return *this; }
    const lowest_layer_type& lowest_layer() const noexcept { return *this; }

    /// AsyncReadStream: completes void(error_code, size_t) once bytes or the end of the stream are there.
    template <class MutableBuffers, class Token>
    auto async_read_some(const MutableBuffers& buffers, Token&& token) {
        return asio::async_initiate<Token, void(error_code, std::size_t)>(
            [this](auto&& handler, const MutableBuffers& b) {
                this->template start<detail::op_kind::read>(b, std::move(handler), asio::buffer_size(b) == 0);
            },
            token, buffers);
    }
    /// AsyncWriteStream: completes void(error_code, size_t) once the peer's capacity took some bytes.
    template <class ConstBuffers, class Token>
    auto async_write_some(const ConstBuffers& buffers, Token&& token) {
        return asio::async_initiate<Token, void(error_code, std::size_t)>(
            [this](auto&& handler, const ConstBuffers& b) {
                this->template start<detail::op_kind::write>(b, std::move(handler), asio::buffer_size(b) == 0);
            },
            token, buffers);
    }
    /// A socket's async_wait for wait_read (bytes or the end of the stream to read) or wait_write
    /// (room in the peer's capacity); wait_error is not modelled (operation_not_supported).
    template <class Token>
    auto async_wait(asio::socket_base::wait_type what, Token&& token) {
        return asio::async_initiate<Token, void(error_code)>(
            [this, what](auto&& handler) {
                auto h = std::move(handler);
                if (what == asio::socket_base::wait_error) {
                    auto ex = asio::get_associated_executor(h, ex_);
                    return asio::post(ex, [h = std::move(h)]() mutable { std::move(h)(asio::error::operation_not_supported); });
                }
                const auto none = asio::const_buffer();
                if (what == asio::socket_base::wait_read) this->template start<detail::op_kind::wait>(none, std::move(h), false, true);
                else this->template start<detail::op_kind::wait>(none, std::move(h), false, false);
            },
            token);
    }

    /// SyncReadStream, never blocking: what is unread now, else eof, else would_block.
    template <class MutableBuffers>
    std::size_t read_some(const MutableBuffers& buffers, error_code& ec) {
        ec = {};
        if (!pipe_) return ec = asio::error::bad_descriptor, 0;
        std::lock_guard<std::mutex> lock(pipe_->mutex);
        auto& s = me();
        if (!s.open) return ec = asio::error::bad_descriptor, 0;
        if (asio::buffer_size(buffers) == 0) return 0;
        if (s.reader && !s.reader_waits) throw std::logic_error("heartwheel::testing::memory_stream: a read while another is pending");
        if (s.inbound.empty()) {
            ec = s.end_of_input ? error_code(asio::error::eof) : error_code(asio::error::would_block);
            return 0;
        }
        const std::size_t n = asio::buffer_copy(buffers, asio::buffer(s.inbound));
        s.inbound.erase(0, n);
        pipe_->wake_writer(1 - side_);
        return n;
    }
    /// SyncWriteStream, never blocking: what the peer's capacity takes now, else would_block.
    template <class ConstBuffers>
    std::size_t write_some(const ConstBuffers& buffers, error_code& ec) {
        ec = {};
        if (!pipe_) return ec = asio::error::bad_descriptor, 0;
        std::lock_guard<std::mutex> lock(pipe_->mutex);
        auto& s = me();
        if (const error_code refused = write_refused(s)) return ec = refused, 0;
        if (s.writer && !s.writer_waits) throw std::logic_error("heartwheel::testing::memory_stream: a write while another is pending");
        auto& peer = pipe_->sides[1 - side_];
        const std::size_t n = detail::append_up_to(buffers, peer.inbound, peer.room());
        if (n == 0 && asio::buffer_size(buffers) > 0) return ec = asio::error::would_block, 0;
        pipe_->wake_reader(1 - side_);
        return n;
    }
    template <class MutableBuffers>
    std::size_t read_some(const MutableBuffers& buffers) {
        error_code ec;
        const std::size_t n = read_some(buffers, ec);
        return detail::or_throw(ec, n, "memory_stream read_some");
    }
    template <class ConstBuffers>
    std::size_t write_some(const ConstBuffers& buffers) {
        error_code ec;
        const std::size_t n = write_some(buffers, ec);
        return detail::or_throw(ec, n, "memory_stream write_some");
    }

    // --- the socket calls a connection makes ---------------------------------------------------------
    bool is_open() const noexcept {
        if (!pipe_) return false;
        std::lock_guard<std::mutex> lock(pipe_->mutex);
        return pipe_->sides[side_].open;
    }
    /// Bytes written by the peer and not read yet (a socket's FIONREAD).
    std::size_t available(error_code& ec) const {
        ec = {};
        if (!pipe_) return ec = asio::error::bad_descriptor, 0;
        std::lock_guard<std::mutex> lock(pipe_->mutex);
        const auto& s = pipe_->sides[side_];
        if (!s.open) return ec = asio::error::bad_descriptor, 0;
        return s.inbound.size();
    }
    std::size_t available() const {
        error_code ec;
        const std::size_t n = available(ec);
        return detail::or_throw(ec, n, "memory_stream available");
    }
    /// shutdown_send: the peer reads the end of the stream after what was sent (and this end's
    /// pending write fails broken_pipe); shutdown_receive: this end reads it after what it holds.
    void shutdown(asio::socket_base::shutdown_type what, error_code& ec) {
        ec = {};
        if (!pipe_) return void(ec = asio::error::bad_descriptor);
        std::lock_guard<std::mutex> lock(pipe_->mutex);
        auto& s = me();
        if (!s.open) return void(ec = asio::error::bad_descriptor);
        if (what != asio::socket_base::shutdown_receive) {
            s.send_shut = true;
            detail::memory_pipe::finish(s.writer, asio::error::broken_pipe);
            pipe_->sides[1 - side_].end_of_input = true;
            pipe_->wake_reader(1 - side_);
        }
        if (what != asio::socket_base::shutdown_send) {
            s.end_of_input = true;
            pipe_->wake_reader(side_);
        }
    }
    void shutdown(asio::socket_base::shutdown_type what) {
        error_code ec;
        shutdown(what, ec);
        detail::or_throw(ec, 0, "memory_stream shutdown");
    }
    /// Closes this end: its pending operations complete operation_aborted, what it held unread is
    /// dropped, the peer reads the end of the stream and its writes fail connection_reset.
    void close(error_code& ec) {
        ec = {};
        if (!pipe_) return;
        std::lock_guard<std::mutex> lock(pipe_->mutex);
        auto& s = me();
        if (!s.open) return;
        s.open = false;
        s.inbound.clear();
        detail::memory_pipe::finish(s.reader, asio::error::operation_aborted);
        detail::memory_pipe::finish(s.writer, asio::error::operation_aborted);
        auto& peer = pipe_->sides[1 - side_];
        peer.end_of_input = true;
        peer.peer_gone = true;
        pipe_->wake_reader(1 - side_);
        pipe_->wake_writer(1 - side_);
    }
    void close() {
        error_code ignored;
        close(ignored);
    }
    /// Completes this end's pending operations with operation_aborted; the stream stays open.
    void cancel() {
        if (!pipe_) return;
        std::lock_guard<std::mutex> lock(pipe_->mutex);
        detail::memory_pipe::finish(me().reader, asio::error::operation_aborted);
        detail::memory_pipe::finish(me().writer, asio::error::operation_aborted);
    }

    // --- what a test sets --------------------------------------------------------------------------
    /// The most this end holds unread: past it the peer's writes wait (partial writes move what fits).
    /// Unbounded by default. Lowering it keeps what is held; raising it lets a waiting write go on.
    void set_receive_capacity(std::size_t bytes) {
        if (bytes == 0) throw std::invalid_argument("heartwheel::testing::memory_stream: a receive capacity of 0 bytes");
        std::lock_guard<std::mutex> lock(pipe_->mutex);
        me().capacity = bytes;
        pipe_->wake_writer(1 - side_);
    }

private:
    friend std::pair<memory_stream, memory_stream> make_memory_pair(executor_type, executor_type);
    memory_stream(std::shared_ptr<detail::memory_pipe> p, int side, executor_type ex)
        : pipe_(std::move(p)), side_(side), ex_(std::move(ex)) {}

    detail::memory_pipe::side& me() noexcept { return pipe_->sides[side_]; }
    error_code write_refused(const detail::memory_pipe::side& s) const noexcept {
        if (!s.open) return asio::error::bad_descriptor;
        if (s.send_shut) return asio::error::broken_pipe;
        if (s.peer_gone) return asio::error::connection_reset;
        return {};
    }

    /// Starts a read, a write or a wait (`for_read`: which side of the end it waits on). `nothing`:
    /// a read or write of no bytes, which completes at once.
    template <detail::op_kind Kind, class Buffers, class Handler>
    void start(const Buffers& buffers, Handler&& handler, bool nothing, bool for_read = Kind == detail::op_kind::read) {
        using handler_type = std::decay_t<Handler>;
        auto op = std::make_unique<detail::memory_op_impl<Kind, Buffers, handler_type, executor_type>>(
            buffers, std::forward<Handler>(handler), ex_);
        if (!pipe_) return op->complete(asio::error::bad_descriptor, 0);
        std::lock_guard<std::mutex> lock(pipe_->mutex);
        auto& s = me();
        error_code refused;
        if (!s.open) refused = asio::error::bad_descriptor;
        else if (!for_read) refused = write_refused(s);
        if (refused || nothing) return op->complete(refused, 0);
        auto& slot = for_read ? s.reader : s.writer;
        if (slot)
            throw std::logic_error(for_read ? "heartwheel::testing::memory_stream: a read while another is pending"
                                            : "heartwheel::testing::memory_stream: a write while another is pending");
        slot = std::move(op);
        (for_read ? s.reader_waits : s.writer_waits) = Kind == detail::op_kind::wait;
        if (for_read) pipe_->wake_reader(side_);
        else pipe_->wake_writer(side_);
    }

    std::shared_ptr<detail::memory_pipe> pipe_;
    int side_ = 0;
    executor_type ex_;
};

/// Two connected ends, each completing on its own executor (the same one by default).
inline std::pair<memory_stream, memory_stream> make_memory_pair(memory_stream::executor_type a,
                                                                memory_stream::executor_type b) {
    auto pipe = std::make_shared<detail::memory_pipe>();
    pipe->register_with(detail::memory_pipe_service::of(a), detail::memory_pipe_service::of(b));
    return {memory_stream(pipe, 0, std::move(a)), memory_stream(pipe, 1, std::move(b))};
}
inline std::pair<memory_stream, memory_stream> make_memory_pair(const memory_stream::executor_type& ex) {
    return make_memory_pair(ex, ex);
}

} // namespace heartwheel::testing

#endif
