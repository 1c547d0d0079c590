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
//
// async_receive is the read for servers with many quiet peers: it holds no buffer while it waits and
// hands over the bytes in a read_chunk from the thread's pool. On a TCP socket it waits for
// readability (async_wait) and then reads without blocking (the socket is put in non-blocking mode;
// a read that filled its chunk tries again on the executor's next turn, before waiting); on a
// net::tls_socket the same, with OpenSSL decrypting into the chunk (it waits for writability instead
// when OpenSSL must write first, and reads again without waiting while OpenSSL holds bytes); on an
// asio::ssl::stream it waits with a one-byte read — the record is then decrypted inside OpenSSL, and
// the rest of it (SSL_pending) is read into the chunk; any other stream reads into a chunk taken up
// front (held while waiting).
//
// input_waiting() tells whether the peer's bytes wait for a read already pending (the kernel's
// FIONREAD, plus OpenSSL's buffer for a tls_socket): the liveness policies ask it before judging a
// peer silent. Reads count themselves in flight for it (an increment and a decrement; no system call).
#ifndef HEARTWHEEL_NET_LIVENESS_STREAM_HPP
#define HEARTWHEEL_NET_LIVENESS_STREAM_HPP

#include <heartwheel/net/detail/tls_traits.hpp>
#include <heartwheel/net/read_chunk.hpp>

#include <heartwheel/asio.hpp>

#include <cstddef>
#include <cstdint>
#include <system_error>
#include <type_traits>
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
    virtual error_code close_error() const noexcept = 0;

protected:
    ~stream_observer() = default;
};

namespace detail {
template <class T>
struct is_stream_socket : std::false_type {};
template <class P, class E>
struct is_stream_socket<asio::basic_stream_socket<P, E>> : std::true_type {};
/// Streams whose receive waits for readiness and then reads without blocking.
template <class T>
inline constexpr bool waits_for_readiness = is_stream_socket<T>::value || is_tls_socket<T>;
} // namespace detail

template <class NextLayer>
class liveness_stream {
    static_assert(detail::tls_traits_known<NextLayer>,
                  "a liveness_stream over asio::ssl::stream needs <heartwheel/net/ssl_stream.hpp> (heartwheel::tls)");

public:
    using next_layer_type = NextLayer;
    using lowest_layer_type = typename NextLayer::lowest_layer_type;
    using executor_type = typename NextLayer::executor_type;

    template <class... Args>
    explicit liveness_stream(stream_observer& observer, Args&&... next_args)
        : next_(std::forward<Args>(next_args)...), core_(observer, next_) {}
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
        return asio::async_compose<Token, void(error_code, std::size_t)>(
            io_op<MutableBuffers, false>{core_, buffers}, token, next_);
    }

    /// AsyncWriteStream: completes void(error_code, size_t); start, progress and completion are recorded.
    template <class ConstBuffers, class Token>
    auto async_write_some(const ConstBuffers& buffers, Token&& token) {
        return asio::async_compose<Token, void(error_code, std::size_t)>(
            io_op<ConstBuffers, true>{core_, buffers}, token, next_);
    }

    /// Whether bytes from the peer wait unread while a read is pending: in the kernel's receive
    /// queue (FIONREAD) or, for a tls_socket, decrypted inside OpenSSL. One system call; meant for
    /// rare judgements, not per read. False when no read is pending (an application that stopped
    /// reading does not keep its peer alive by the bytes it leaves unread).
    bool input_waiting() {
        if (core_->reads == 0) return false;
        if constexpr (detail::tls_traits<NextLayer>::is_tls) {
            if (detail::tls_traits<NextLayer>::has_pending(next_)) return true;
        }
        error_code ec;
        return next_.lowest_layer().is_open() && next_.lowest_layer().available(ec) > 0 && !ec;
    }

    /// Reads at least one byte without holding a buffer while it waits (see the top of this file).
    /// Completes void(error_code, read_chunk): the bytes, recorded as activity; on an error the
    /// chunk is empty. Bytes already read when an error follows are delivered first (the error
    /// comes with the next receive).
    template <class Token>
    auto async_receive(Token&& token) {
        return asio::async_compose<Token, void(error_code, read_chunk)>(receive_op{core_}, token, next_);
    }

private:
    /// The steps of a receive (see receive_op).
    enum class step : std::uint8_t { start, waited, probed, read };

    /// What an operation needs after it started: the observer, or nullptr once the stream is gone,
    /// and the next layer, used only while the stream is alive. Shared by the stream and its pending
    /// operations through core_ref (a count of its own: 16 bytes less per connection than a
    /// shared_ptr's control block and two-word handles). 24 bytes, a heap block of 32: the next
    /// layer's pointer and the receive's step live here, not in each operation, so that a pending
    /// receive on a socket is one pointer (Asio's operation around it fits a heap block of 144).
    struct core {
        stream_observer* observer;
        NextLayer* next;
        std::uint32_t refs = 1;    ///< the stream and its operations (all on the stream's executor)
        std::uint16_t reads = 0;   ///< reads (read_some, receive) started and not yet completed
        std::uint8_t at_ : 2;      ///< the receive's step: at(), set_at()
        std::uint8_t more_waiting : 1; ///< the last receive filled its chunk: read before waiting
        char probe = 0;            ///< TLS: the one byte a receive waits with
        core(stream_observer& o, NextLayer& n) noexcept : observer(&o), next(&n), at_(0), more_waiting(0) {}
        /// The receive in progress (one at a time, as any read): back to start before it completes.
        step at() const noexcept { return static_cast<step>(at_); }
        void set_at(step s) noexcept { at_ = static_cast<std::uint8_t>(s) & 3u; }
        error_code outcome(error_code ec) const noexcept {
            if (!ec || observer == nullptr) return ec;
            const error_code closed = observer->close_error();
            return closed ? closed : ec;
        }
    };

    /// An owning handle on the core. Not atomic: the stream and its operations run on the stream's
    /// executor (an operation is moved, never copied, between threads on its way back to it).
    class core_ref {
    public:
        core_ref(stream_observer& o, NextLayer& n) : p_(new core(o, n)) {}
        core_ref(const core_ref& r) noexcept : p_(r.p_) { ++p_->refs; }
        core_ref(core_ref&& r) noexcept : p_(std::exchange(r.p_, nullptr)) {}
        core_ref& operator=(const core_ref&) = delete;
        core_ref& operator=(core_ref&&) = delete;
        ~core_ref() {
            if (p_ != nullptr && --p_->refs == 0) delete p_;
        }
        core* operator->() const noexcept { return p_; }

    private:
        core* p_;
    };

    /// One read_some or write_some on the next layer, recorded on completion.
    template <class Buffers, bool Write>
    struct io_op {
        core_ref c;
        Buffers buffers;
        bool started = false;
        template <class Self>
        void operator()(Self& self, error_code ec = {}, std::size_t n = 0) {
            if (!started) {
                started = true;
                if (auto closed = c->observer->close_error()) return self.complete(closed, 0);
                if constexpr (Write) {
                    c->observer->on_write_started();
                    return c->next->async_write_some(buffers, std::move(self)); // alive: it started it
                } else {
                    ++c->reads;
                    return c->next->async_read_some(buffers, std::move(self));
                }
            }
            if constexpr (!Write) --c->reads;
            if (n > 0 && c->observer) {
                if constexpr (Write) c->observer->on_bytes_written(n, asio::buffer_size(buffers));
                else c->observer->on_bytes_read(n);
            }
            self.complete(c->outcome(ec), n);
        }
    };

    /// One receive: wait without a buffer, then read into a chunk. Its step is the core's (one
    /// receive at a time per stream), its next layer too (used only while the stream is alive,
    /// checked through c->observer).
    struct receive_op {
        static constexpr bool waits = detail::waits_for_readiness<NextLayer>;
        struct no_chunk {};
        core_ref c;
        // Held across an asynchronous read (asio::ssl::stream's, another stream's). A stream that waits
        // for readiness reads without blocking once it is readable and needs no chunk here: every
        // pending receive of a socket is 16 bytes smaller (a heap block of 160 instead of 176), and
        // with the step and the next layer in the core 16 more (144).
        [[no_unique_address]] std::conditional_t<waits, no_chunk, read_chunk> chunk{};

        template <class Self>
        void operator()(Self& self, error_code ec = {}, std::size_t n = 0) {
            switch (c->at()) {
            case step::start:
                if (auto closed = c->observer->close_error()) return self.complete(closed, read_chunk{});
                ++c->reads; // until finish()
                if constexpr (waits) {
                    if (c->more_waiting) {
                        // Bytes are likely there: read them on a later turn of the executor, not
                        // inline, so the caller's handler never runs inside its own call and the
                        // other connections' handlers get their turn first.
                        c->set_at(step::waited);
                        return asio::post(c->next->get_executor(), std::move(self));
                    }
                    return wait(self);
                } else if constexpr (detail::tls_traits<NextLayer>::is_tls) {
                    c->set_at(step::probed);
                    return c->next->async_read_some(asio::buffer(&c->probe, 1), std::move(self));
                } else {
                    chunk = read_chunk::take();
                    c->set_at(step::read);
                    return c->next->async_read_some(asio::buffer(chunk.data(), read_chunk::capacity), std::move(self));
                }
            case step::waited:
                if constexpr (waits) {
                    if (ec || c->observer == nullptr)
                        return finish(self, ec ? ec : asio::error::operation_aborted, read_chunk{});
                    return read_now(self);
                }
                break;
            case step::probed:
                if constexpr (!waits) {
                    if (ec || n == 0 || c->observer == nullptr) return finish(self, ec, std::move(chunk));
                    chunk = read_chunk::take();
                    chunk.data()[0] = c->probe;
                    chunk.set_size(1);
                    if constexpr (detail::tls_traits<NextLayer>::is_tls) {
                        // The rest of the record is decrypted already: this read completes without waiting.
                        if (detail::tls_traits<NextLayer>::has_pending(*c->next)) {
                            c->set_at(step::read);
                            return c->next->async_read_some(asio::buffer(chunk.data() + 1, read_chunk::capacity - 1),
                                                         std::move(self));
                        }
                    }
                    return finish(self, {}, std::move(chunk));
                }
                break;
            case step::read:
                if constexpr (!waits) {
                    chunk.set_size(chunk.size() + n);
                    return finish(self, ec, std::move(chunk));
                }
                break;
            }
        }

        template <class Self>
        void wait(Self& self, asio::socket_base::wait_type what = asio::socket_base::wait_read) {
            c->set_at(step::waited);
            c->next->lowest_layer().async_wait(what, std::move(self));
        }

        template <class Self>
        void read_now(Self& self) {
            error_code ec;
            std::size_t n = 0;
            auto what = asio::socket_base::wait_read;
            read_chunk got = read_chunk::take();
            if constexpr (detail::is_tls_socket<NextLayer>) {
                using want = typename NextLayer::want;
                want w = want::nothing;
                n = c->next->read_ready(got.data(), read_chunk::capacity, w, ec);
                if (w == want::write) what = asio::socket_base::wait_write;
            } else {
                if (!c->next->non_blocking()) c->next->non_blocking(true, ec);
                if (!ec) n = c->next->read_some(asio::buffer(got.data(), read_chunk::capacity), ec);
            }
            if (ec == asio::error::would_block || ec == asio::error::try_again) {
                got.reset(); // nothing there after all: wait holding nothing
                c->more_waiting = false;
                return wait(self, what);
            }
            c->more_waiting = n == read_chunk::capacity || has_pending();
            got.set_size(n);
            finish(self, ec, std::move(got));
        }

        /// Bytes that no readiness of the socket would announce (OpenSSL's, for a tls_socket).
        bool has_pending() const noexcept {
            if constexpr (detail::is_tls_socket<NextLayer>)
                return c->observer != nullptr && detail::tls_traits<NextLayer>::has_pending(*c->next);
            else
                return false;
        }

        template <class Self>
        void finish(Self& self, error_code ec, read_chunk got) {
            --c->reads;
            c->set_at(step::start); // the next receive starts afresh (from inside the handler, too)
            if (got.empty()) {
                got.reset(); // an error brings no bytes: the chunk goes back
                return self.complete(c->outcome(ec), std::move(got));
            }
            if (c->observer) c->observer->on_bytes_read(got.size());
            self.complete(error_code{}, std::move(got));
        }
    };

    NextLayer next_;
    core_ref core_;
};

} // namespace heartwheel::net

#endif
