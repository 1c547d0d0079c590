// heartwheel/net/tls/tls_socket.hpp — TLS over a TCP socket with no buffers of its own: OpenSSL reads and
// writes the socket's descriptor itself (through a BIO of ours), and Asio only says when the socket is
// ready.
//
// Why: asio::ssl::stream runs OpenSSL over a BIO pair and keeps two 17 KiB record buffers of its own
// (zero-filled, so resident from the start), and the BIO pair two more — ~68 KiB per connection that
// OpenSSL does not need, held for as long as the connection lives, idle or not. Here the only
// per-connection state is OpenSSL's SSL object; with SSL_MODE_RELEASE_BUFFERS (set on every
// tls_socket) OpenSSL frees its record buffers whenever a connection has nothing buffered. nginx
// drives OpenSSL the same way (the descriptor given to SSL, readiness from its event loop). The BIO is
// OpenSSL's socket BIO but for one thing: it writes with send(MSG_NOSIGNAL), so a peer's reset never
// raises SIGPIPE, whether or not the application ignores that signal.
//
// Lean records (enable_lean_records; server_tls_context's default): even without buffers, OpenSSL 3
// keeps ~14 KiB per connection after the handshake (the SSL object alone is ~7.6 KiB). A server's
// TLS 1.3 connection needs only its two traffic secrets, keys, IVs and sequence numbers to go on, so
// once its handshake is done the SSL object is freed and the records are protected here from the
// secrets OpenSSL derived (what kernel TLS does, in user space; src/tls/tls13_records.hpp): an idle
// TLS connection then costs ~1.4 KiB of heap. The handshake's own memory is returned to the system
// after a burst (malloc_trim), or the freed SSL objects would stay resident between live blocks.
//
// How: every operation is one OpenSSL call retried on readiness. SSL_ERROR_WANT_READ waits for the
// socket to be readable, WANT_WRITE for writable (async_wait: no buffer held while waiting), then the
// same call is made again with the same arguments, as OpenSSL requires. Errors: a TLS alert or
// protocol error comes in asio::error::get_ssl_category() (as asio::ssl::stream reports it), a peer's
// close_notify as asio::error::eof, a TCP close without close_notify as
// asio::ssl::error::stream_truncated, a socket error as itself. An operation that completes without
// waiting is still completed through the executor, never inside its initiating call. One read and
// one write may be pending at a time, each at most once (as with asio::ssl::stream); use from the
// socket's executor only. Once the socket is closed (by anyone: lowest_layer().close()), no OpenSSL
// call and no system call touches its old descriptor number again: every operation, including one
// whose wait had already completed, ends with asio::error::bad_descriptor. `read_ready` is the piece liveness_stream's buffer-free receive is made of.
#ifndef HEARTWHEEL_NET_TLS_SOCKET_HPP
#define HEARTWHEEL_NET_TLS_SOCKET_HPP

#include <heartwheel/asio_ssl.hpp>
#include <heartwheel/clock.hpp>
#include <heartwheel/net/detail/tls_traits.hpp>

#include <openssl/ssl.h>

#include <cstddef>
#include <memory>
#include <string>
#include <system_error>

namespace heartwheel::net {

namespace detail {
class tls13_records;
}

class tls_socket {
public:
    using next_layer_type = asio::ip::tcp::socket;
    using lowest_layer_type = next_layer_type::lowest_layer_type;
    using executor_type = next_layer_type::executor_type;
    using handshake_type = asio::ssl::stream_base::handshake_type;

    /// What one OpenSSL call needs next: nothing (done or failed), readability or writability.
    enum class want { nothing, read, write };

    /// Takes the (connected) socket; the context must outlive this object. Throws system_error
    /// when OpenSSL cannot make the connection's SSL object.
    tls_socket(next_layer_type socket, asio::ssl::context& context);
    tls_socket(tls_socket&& other) noexcept;
    tls_socket& operator=(tls_socket&&) = delete;
    tls_socket(const tls_socket&) = delete;
    ~tls_socket();

    executor_type get_executor() noexcept { return socket_.get_executor(); }
    next_layer_type& next_layer() noexcept { return socket_; }
    const next_layer_type& next_layer() const noexcept { return socket_; }
    lowest_layer_type& lowest_layer() noexcept { return socket_.lowest_layer(); }
    const lowest_layer_type& lowest_layer() const noexcept { return socket_.lowest_layer(); }
    /// OpenSSL's object; null once the records went lean (lean()).
    SSL* native_handle() noexcept { return ssl_; }
    /// Whether this connection's records are protected without OpenSSL's connection state: after a
    /// server's TLS 1.3 handshake over a context with enable_lean_records (the SSL object is freed).
    bool lean() const noexcept { return ssl_ == nullptr && lean_ != nullptr; }

    /// Client side, before the handshake: the name sent as SNI (not for an IP address) and the name
    /// or address the server's certificate must match (with the context's verify_peer).
    void set_host(const std::string& host);

    /// Completes void(error_code).
    template <class Token>
    auto async_handshake(handshake_type type, Token&& token) {
        return asio::async_compose<Token, void(error_code)>(
            op<handshake_call, false>{this, handshake_call{type}}, token, socket_);
    }
    /// AsyncReadStream: completes void(error_code, size_t) with the bytes of at most one record.
    template <class MutableBuffers, class Token>
    auto async_read_some(const MutableBuffers& buffers, Token&& token) {
        return asio::async_compose<Token, void(error_code, std::size_t)>(
            op<read_call, true>{this, read_call{first_buffer<asio::mutable_buffer>(buffers)}}, token, socket_);
    }
    /// AsyncWriteStream: completes void(error_code, size_t) once at least one record went out.
    template <class ConstBuffers, class Token>
    auto async_write_some(const ConstBuffers& buffers, Token&& token) {
        return asio::async_compose<Token, void(error_code, std::size_t)>(
            op<write_call, true>{this, write_call{first_buffer<asio::const_buffer>(buffers)}}, token, socket_);
    }

    /// Without blocking: decrypts into [data, data + size). Returns the bytes read (ec clear), or 0
    /// with ec set — asio::error::would_block when OpenSSL wants `w` (read or write) first. With
    /// `arrived`, a lean connection whose socket was asked for the kernel's receive stamps
    /// (SO_TIMESTAMPNS: liveness_stream::enable_arrival_stamps) sets it to when the newest byte of the
    /// record read reached the host (detail/arrival_stamp.hpp); otherwise it is left as it was (the
    /// caller's no_arrival: OpenSSL reads the socket itself, and plaintext kept from an earlier read
    /// was stamped with that read).
    std::size_t read_ready(void* data, std::size_t size, want& w, error_code& ec, time_point* arrived = nullptr);
    /// Without blocking: protects and sends bytes of the first non-empty buffer (a record at most).
    /// Returns the bytes taken (ec clear), or 0 with ec set — asio::error::would_block when the
    /// socket (or OpenSSL) must wait first: the same bytes are then to be written again, as
    /// async_write_some does (it starts by writing). How liveness_stream writes only what waits.
    template <class ConstBuffers>
    std::size_t write_ready(const ConstBuffers& buffers, error_code& ec) {
        const outcome o = write(first_buffer<asio::const_buffer>(buffers));
        ec = o.wait != want::nothing ? error_code(asio::error::would_block) : o.ec;
        return o.n;
    }
    /// Whether bytes are held (decrypted or not) that no readiness of the socket will announce.
    bool has_pending() const noexcept;
    /// Server side: whether the peer's ClientHello has been read whole (the handshake moved past it).
    bool hello_received() const noexcept { return ssl_ == nullptr || ::SSL_get_state(ssl_) != TLS_ST_BEFORE; }
    /// Says close_notify now, without waiting: the peer can tell this close from a cut connection.
    /// Best effort — not after a failed operation or before the handshake finished (OpenSSL forbids
    /// both), and a peer whose window is shut may not get it. Nothing may be written after it.
    /// Returns whether it went out.
    bool send_close_notify() noexcept;

private:
    /// One OpenSSL call's outcome: bytes, what it waits for, or an error.
    struct outcome {
        std::size_t n = 0;
        want wait = want::nothing;
        error_code ec;
    };
    outcome handshake(handshake_type type);
    outcome read(asio::mutable_buffer b);
    outcome write(asio::const_buffer b);

    struct handshake_call {
        handshake_type type;
        outcome operator()(tls_socket& s) const { return s.handshake(type); }
    };
    struct read_call {
        asio::mutable_buffer b;
        outcome operator()(tls_socket& s) const { return s.read(b); }
    };
    struct write_call {
        asio::const_buffer b;
        outcome operator()(tls_socket& s) const { return s.write(b); }
    };

    /// The first non-empty buffer of a sequence (one OpenSSL call takes one), or an empty one.
    template <class Buffer, class Buffers>
    static Buffer first_buffer(const Buffers& buffers) {
        for (auto it = asio::buffer_sequence_begin(buffers); it != asio::buffer_sequence_end(buffers); ++it) {
            const Buffer b(*it); // (*it, not it->: Beast's buffer iterators have no operator->)
            if (b.size() > 0) return b;
        }
        return Buffer();
    }

    /// Makes `call` until it needs no readiness, waiting for what it wants in between. `Sized`: the
    /// completion carries the byte count.
    template <class Call, bool Sized>
    struct op {
        tls_socket* s;
        Call call;
        outcome last{};
        bool done = false;
        bool waited = false;
        template <class Self>
        void operator()(Self& self, error_code wait_ec = {}) {
            if (done) return finish(self);
            if (wait_ec) {
                last = outcome{0, want::nothing, wait_ec};
                return finish(self);
            }
            last = call(*s);
            if (last.wait != want::nothing) {
                waited = true;
                return s->socket_.async_wait(last.wait == want::read ? asio::socket_base::wait_read
                                                                      : asio::socket_base::wait_write,
                                             std::move(self));
            }
            if (!waited) { // completed at once: complete from the executor, not inside the caller's call
                done = true;
                return asio::post(s->socket_.get_executor(), std::move(self));
            }
            finish(self);
        }
        template <class Self>
        void finish(Self& self) {
            if constexpr (Sized) self.complete(last.ec, last.n);
            else self.complete(last.ec);
        }
    };

    /// After a server's TLS 1.3 handshake, the records without OpenSSL (see enable_lean_records).
    void go_lean() noexcept;
    /// A lean server handshake began / ended (done, failed, or its socket destroyed): after a burst,
    /// the memory the handshakes freed goes back to the system.
    static void handshake_began() noexcept;
    static void handshake_ended() noexcept;

    next_layer_type socket_;
    SSL* ssl_;
    std::unique_ptr<detail::tls13_records> lean_; ///< the traffic secrets while handshaking, then the records
    bool failed_ = false; ///< an operation failed (not a clean close_notify): no shutdown may follow
    bool handshaking_ = false; ///< a lean server handshake under way (counted: handshake_began)
};

/// Lets every server tls_socket over `ctx` drop OpenSSL's connection state once its TLS 1.3
/// handshake is over (~14 KiB per connection with OpenSSL 3: the SSL object, its cipher contexts,
/// session, certificate state and ephemeral keys) and protect its records itself from the traffic
/// secrets (AES-GCM or ChaCha20-Poly1305; KeyUpdate and close_notify understood; see
/// src/tls/tls13_records.hpp). The context's key-log callback is how the secrets are taken, so this
/// returns false and changes nothing when the context has one of its own. Such servers issue no
/// session tickets (a ticket needs the SSL object; a restarted process could not read them anyway).
/// TLS 1.2 connections, clients, servers that ask for the client's certificate (SSL_VERIFY_PEER), and
/// a handshake that ends with bytes buffered inside OpenSSL keep OpenSSL's state as before. Once lean,
/// native_handle() is null: what the application wants of the handshake (ALPN, SNI) it takes during
/// the handshake, from the context's callbacks (ALPN selection, servername), or it keeps OpenSSL's
/// state (tls_policy::lean_records = false).
bool enable_lean_records(asio::ssl::context& ctx);

/// What a server's TLS context agrees to, beyond TLS 1.2 or later. The defaults are what a server
/// exposed to the Internet wants rather than OpenSSL's: forward-secret AEAD suites only for TLS 1.2
/// (no static RSA key exchange, no CBC), and elliptic-curve groups only — OpenSSL 3 also offers the
/// ffdhe groups, whose key share an unauthenticated peer can make the server compute for ~110 ms of
/// CPU (ffdhe8192) per ClientHello, where X25519 costs ~0.2 ms. TLS 1.3 suites are all AEAD.
struct tls_policy {
    std::string ciphers = "ECDHE+AESGCM:ECDHE+CHACHA20"; ///< TLS 1.2 suites, OpenSSL syntax
    std::string groups = "X25519:P-256:P-384";           ///< key-exchange groups, OpenSSL syntax
    /// TLS 1.3 connections drop OpenSSL's state after the handshake (enable_lean_records).
    bool lean_records = true;
};

/// A server's TLS context from a certificate chain and its private key (PEM files), with `policy`'s
/// suites and groups, TLS 1.2 or later, no renegotiation, no compression, the server's cipher order,
/// and record buffers released while a connection holds nothing (an idle connection's memory), and
/// with `policy.lean_records`, TLS 1.3 connections without OpenSSL's state once handshaken. A file
/// that cannot be loaded, a key that is not the certificate's, or a suite or group list OpenSSL
/// cannot use throws config_error naming `field` (the flag or key), the file or list, and the reason.
asio::ssl::context server_tls_context(const std::string& cert, const std::string& key, const std::string& field = "tls",
                                      const tls_policy& policy = {});

namespace detail {
/// liveness_stream and connection over a tls_socket (see detail/tls_traits.hpp).
template <>
struct tls_traits<tls_socket> {
    static constexpr bool is_tls = true;
    static bool has_pending(const tls_socket& s) noexcept { return s.has_pending(); }
    static bool hello_received(const tls_socket& s) noexcept { return s.hello_received(); }
    /// It leaves with close_notify before the last words' FIN, so the peer can tell a goodbye from a cut.
    static void say_goodbye(tls_socket& s) noexcept { s.send_close_notify(); }
};
} // namespace detail

} // namespace heartwheel::net

#endif
