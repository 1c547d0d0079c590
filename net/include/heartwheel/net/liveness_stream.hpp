// heartwheel/net/liveness_stream.hpp — a stream that records its own activity (Beast's basic_stream
// idea): wraps any Asio AsyncStream (tcp::socket, ssl::stream<tcp::socket>, a user's own) and is
// itself an AsyncReadStream and AsyncWriteStream, so asio::async_read, async_write, async_read_until
// and coroutines work on it unchanged.
//
// Every completed read that brought bytes, every write start, partial write and completed write is
// reported to an observer (net::connection: its liveness policies), so the application never reports
// I/O by hand. When the observer's connection has closed, a pending operation completes with the
// close's distinct error — errc::timed_out if a liveness policy closed it, errc::connection_closed
// otherwise — never a bare operation_aborted. Operations keep their handler's executor, allocator and
// per-operation cancellation (asio::async_compose). As with an Asio socket, the stream may be
// destroyed with operations pending: they complete with operation_aborted (each holds a small shared
// core, not the stream). Use from the stream's executor only.
#ifndef HEARTWHEEL_NET_LIVENESS_STREAM_HPP
#define HEARTWHEEL_NET_LIVENESS_STREAM_HPP

#include <asio/async_result.hpp>
#include <asio/buffer.hpp>
#include <asio/compose.hpp>

#include <cstddef>
#include <memory>
#include <system_error>
#include <utility>

namespace heartwheel::net {

/// Told about a stream's I/O as it happens (implemented by net::connection).
class stream_observer {
public:
    virtual void on_bytes_read(std::size_t n) = 0;
    virtual void on_write_started() = 0;
    /// `n` bytes of a write of `size` went out (n == size: the write is complete).
    virtual void on_bytes_written(std::size_t n, std::size_t size) = 0;
    /// The error a pending operation completes with once the connection closed; none while open.
    virtual std::error_code close_error() const noexcept = 0;

protected:
    ~stream_observer() = default;
};

template <class NextLayer>
class liveness_stream {
public:
    using next_layer_type = NextLayer;
    using lowest_layer_type = typename NextLayer::lowest_layer_type;
    using executor_type = typename NextLayer::executor_type;

    template <class... Args>
    explicit liveness_stream(stream_observer& observer, Args&&... next_args)
        : next_(std::forward<Args>(next_args)...), core_(std::make_shared<core>(core{&observer})) {}
    ~liveness_stream() { core_->observer = nullptr; }
    liveness_stream(const liveness_stream&) = delete;
    liveness_stream& operator=(const liveness_stream&) = delete;

    executor_type get_executor() noexcept { return next_.get_executor(); }
    next_layer_type& next_layer() noexcept { return next_; }
    const next_layer_type& next_layer() const noexcept { return next_; }
    lowest_layer_type& lowest_layer() noexcept { return next_.lowest_layer(); }
    const lowest_layer_type& lowest_layer() const noexcept { return next_.lowest_layer(); }

    /// AsyncReadStream: completes void(error_code, size_t); bytes read are recorded as activity.
    template <class MutableBuffers, class Token>
    auto async_read_some(const MutableBuffers& buffers, Token&& token) {
        return asio::async_compose<Token, void(std::error_code, std::size_t)>(
            io_op<MutableBuffers, false>{core_, &next_, buffers}, token, next_);
    }

    /// AsyncWriteStream: completes void(error_code, size_t); start, progress and completion are recorded.
    template <class ConstBuffers, class Token>
    auto async_write_some(const ConstBuffers& buffers, Token&& token) {
        return asio::async_compose<Token, void(std::error_code, std::size_t)>(
            io_op<ConstBuffers, true>{core_, &next_, buffers}, token, next_);
    }

private:
    /// What an operation needs after it started: the observer, or nullptr once the stream is gone.
    struct core {
        stream_observer* observer;
        std::error_code outcome(std::error_code ec) const noexcept {
            if (!ec || observer == nullptr) return ec;
            const std::error_code closed = observer->close_error();
            return closed ? closed : ec;
        }
    };

    /// One read_some or write_some on the next layer, recorded on completion.
    template <class Buffers, bool Write>
    struct io_op {
        std::shared_ptr<core> c;
        NextLayer* next; ///< used only to start (the stream is alive then)
        Buffers buffers;
        bool started = false;
        template <class Self>
        void operator()(Self& self, std::error_code ec = {}, std::size_t n = 0) {
            if (!started) {
                started = true;
                if (auto closed = c->observer->close_error()) return self.complete(closed, 0);
                if constexpr (Write) {
                    c->observer->on_write_started();
                    return next->async_write_some(buffers, std::move(self));
                } else {
                    return next->async_read_some(buffers, std::move(self));
                }
            }
            if (n > 0 && c->observer) {
                if constexpr (Write) c->observer->on_bytes_written(n, asio::buffer_size(buffers));
                else c->observer->on_bytes_read(n);
            }
            self.complete(c->outcome(ec), n);
        }
    };

    NextLayer next_;
    std::shared_ptr<core> core_;
};

} // namespace heartwheel::net

#endif
