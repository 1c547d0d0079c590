// heartwheel/net/connection/liveness_stream.hpp — a stream that records its own activity (Beast's basic_stream
// idea): wraps any Asio AsyncStream (tcp::socket, ssl::stream<tcp::socket>, a user's own) and is
// itself an AsyncReadStream and AsyncWriteStream, so asio::async_read, async_write, async_read_until
// and coroutines work on it unchanged.
//
// Every completed read that brought bytes, every write start, partial write and completed write is
// reported to an observer (net::connection: its liveness policies), so the application never reports
// I/O by hand. When the observer's connection has closed, a pending operation completes with the
// close's distinct error — errc::timed_out if a liveness policy closed it, errc::connection_closed
// otherwise — never a bare operation_aborted. Operations keep their handler's executor, allocator and
// per-operation cancellation: each is its own completion handler, with Asio's associators forwarded
// to the application's (detail/io_op.hpp, detail/receive_op.hpp; no async_compose around them), and
// completes on a later turn, never inside its initiating call. As with an Asio socket, the stream may
// be destroyed with operations pending: they complete with operation_aborted (each holds a small
// shared core, not the stream: detail/stream_core.hpp). Use from the stream's executor only.
//
// async_receive is the read for servers with many quiet peers: it holds no buffer while it waits and
// hands over the bytes in a read_chunk from the thread's pool. On a TCP socket it waits for
// readability (async_wait) and then reads without blocking (the socket is put in non-blocking mode;
// a read that filled its chunk tries again on the executor's next turn, before waiting); on a
// net::tls_socket the same, with OpenSSL decrypting into the chunk (it waits for writability instead
// when OpenSSL must write first, and reads again without waiting while OpenSSL holds bytes); on an
// asio::ssl::stream it waits with a one-byte read — the record is then decrypted inside OpenSSL, and
// the rest of it (SSL_pending) is read into the chunk; any other stream reads into a chunk taken up
// front (held while waiting). async_read_some_eagerly is its opposite, for a peer about to speak:
// Asio reads as the bytes arrive, without a readiness wait (whose epoll_ctl each wait pays), the
// buffer held meanwhile — short waits only (the HTTP layer's next request right after an answer).
//
// enable_arrival_stamps() asks a TCP socket (a net::tls_socket's too: its lean records read the socket
// themselves) for the kernel's receive stamps: each async_receive then
// tells the observer when its newest byte reached the host (detail/arrival_stamp.hpp), and a
// heartbeat counts the peer's silence from there, not from a read that a busy loop made late.
//
// input_waiting() tells whether the peer's bytes wait for a read already pending (the kernel's
// FIONREAD, plus OpenSSL's buffer for a tls_socket): the liveness policies ask it before judging a
// peer silent. Reads count themselves in flight for it (an increment and a decrement; no system call).
#ifndef HEARTWHEEL_NET_LIVENESS_STREAM_HPP
#define HEARTWHEEL_NET_LIVENESS_STREAM_HPP

#include <heartwheel/net/detail/io_op.hpp>
#include <heartwheel/net/detail/receive_op.hpp>
#include <heartwheel/net/detail/stream_core.hpp>
#include <heartwheel/net/detail/tls_traits.hpp>
#include <heartwheel/net/connection/read_chunk.hpp>
#include <heartwheel/net/connection/stream_observer.hpp>

#include <heartwheel/asio.hpp>

#include <cstddef>
#include <type_traits>
#include <system_error>
#include <utility>

namespace heartwheel::net {

template <class NextLayer>
class liveness_stream {
    static_assert(detail::tls_traits_known<NextLayer>,
                  "a liveness_stream over asio::ssl::stream needs <heartwheel/net/tls/ssl_stream.hpp> (heartwheel::tls)");

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
        return asio::async_initiate<Token, void(error_code, std::size_t)>(detail::initiate_io<NextLayer, false>{}, token,
                                                                           core_, buffers);
    }

    /// async_read_some for a peer expected to speak within moments (a client's next request right
    /// after its answer): on a TCP socket Asio reads the bytes as they arrive, a failed attempt at the
    /// start instead of the readiness wait that each async_read_some begins with (an epoll_ctl in
    /// Asio's epoll reactor) — but `buffers` are held while it waits: keep such waits short, and
    /// cancel one that lasts for a wait that holds nothing (async_receive). Other streams: as
    /// async_read_some. Recorded as async_read_some is.
    template <class MutableBuffers, class Token>
    auto async_read_some_eagerly(const MutableBuffers& buffers, Token&& token) {
        return asio::async_initiate<Token, void(error_code, std::size_t)>(detail::initiate_io<NextLayer, false, true>{},
                                                                           token, core_, buffers);
    }

    /// AsyncWriteStream: completes void(error_code, size_t); start, progress and completion are recorded.
    template <class ConstBuffers, class Token>
    auto async_write_some(const ConstBuffers& buffers, Token&& token) {
        return asio::async_initiate<Token, void(error_code, std::size_t)>(detail::initiate_io<NextLayer, true>{}, token,
                                                                           core_, buffers);
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

    /// Asks a TCP socket for the kernel's receive stamps (SO_TIMESTAMPNS): async_receive then tells
    /// the observer when the bytes it read arrived, not only that they were read
    /// (detail/arrival_stamp.hpp). A net::tls_socket's TCP socket too: its lean records read the
    /// socket themselves and bring the stamp (while OpenSSL reads — the handshake, a connection kept
    /// by OpenSSL — reads report no arrival). Linux only; elsewhere, on other streams or when the
    /// socket refuses, nothing changes (returns false). A closed socket asks again when it is open.
    bool enable_arrival_stamps() noexcept {
#if defined(__linux__) && defined(SO_TIMESTAMPNS)
        if constexpr (detail::is_stream_socket<NextLayer>::value || detail::is_tls_socket<NextLayer>) {
            if constexpr (std::is_same_v<typename lowest_layer_type::protocol_type, asio::ip::tcp>) {
                auto& socket = next_.lowest_layer();
                if (!socket.is_open()) return false;
                const int on = 1;
                if (::setsockopt(socket.native_handle(), SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on) != 0) return false;
                core_->stamps = 1;
                detail::prime_wall_offset_guard();
                return true;
            }
        }
#endif
        return false;
    }

    /// Reads at least one byte without holding a buffer while it waits (see the top of this file).
    /// Completes void(error_code, read_chunk): the bytes, recorded as activity; on an error the
    /// chunk is empty. Bytes already read when an error follows are delivered first (the error
    /// comes with the next receive).
    template <class Token>
    auto async_receive(Token&& token) {
        return asio::async_initiate<Token, void(error_code, read_chunk)>(detail::initiate_receive<NextLayer>{}, token,
                                                                          core_);
    }

private:
    using core_ref = detail::stream_core_ref<NextLayer>;

    NextLayer next_;
    core_ref core_;
};

} // namespace heartwheel::net

#endif
