// tls_socket.cpp — the OpenSSL calls and their outcomes; see tls_socket.hpp.
#include <heartwheel/net/tls/tls_socket.hpp>

#include "tls13_records.hpp"

#include <heartwheel/net/detail/freed_memory.hpp>

#include <heartwheel/asio_ssl.hpp>
#include <heartwheel/net/policies/policies.hpp>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <utility>

namespace heartwheel::net {

namespace {

error_code ssl_error(unsigned long e) {
    return {static_cast<int>(e), asio::error::get_ssl_category()};
}

// The descriptor's BIO. OpenSSL's own socket BIO writes with write(), which raises SIGPIPE when the
// peer has reset: a process that did not ignore SIGPIPE (an application embedding us may not) would
// die of a peer's reset. This one writes with send(MSG_NOSIGNAL) and otherwise behaves as OpenSSL's
// socket BIO does: a would-block read or write sets the retry flag, a read of 0 bytes sets the
// end-of-input flag (so a TCP close without close_notify is reported as unexpected EOF), and the BIO
// never closes the descriptor (the tcp::socket owns it).
int descriptor_of(BIO* b) { return static_cast<int>(reinterpret_cast<std::intptr_t>(::BIO_get_data(b))); }

bool would_block(int e) { return e == EAGAIN || e == EWOULDBLOCK || e == EINTR; }

int bio_write(BIO* b, const char* data, std::size_t size, std::size_t* written) {
    ::BIO_clear_retry_flags(b);
    const ssize_t n = ::send(descriptor_of(b), data, size, MSG_NOSIGNAL);
    if (n >= 0) {
        *written = static_cast<std::size_t>(n);
        return 1;
    }
    if (would_block(errno)) ::BIO_set_retry_write(b);
    return 0;
}

int bio_read(BIO* b, char* data, std::size_t size, std::size_t* read) {
    ::BIO_clear_retry_flags(b);
    const ssize_t n = ::recv(descriptor_of(b), data, size, 0);
    if (n > 0) {
        *read = static_cast<std::size_t>(n);
        return 1;
    }
    if (n == 0) ::BIO_set_flags(b, BIO_FLAGS_IN_EOF);
    else if (would_block(errno)) ::BIO_set_retry_read(b);
    return 0;
}

long bio_ctrl(BIO* b, int cmd, long, void*) {
    switch (cmd) {
    case BIO_CTRL_FLUSH: return 1; // nothing is buffered here
    case BIO_CTRL_EOF: return ::BIO_test_flags(b, BIO_FLAGS_IN_EOF) != 0 ? 1 : 0;
    default: return 0;
    }
}

int bio_create(BIO* b) {
    ::BIO_set_init(b, 1);
    return 1;
}

const BIO_METHOD* descriptor_method() {
    static BIO_METHOD* const method = [] {
        BIO_METHOD* m = ::BIO_meth_new(::BIO_get_new_index() | BIO_TYPE_SOURCE_SINK | BIO_TYPE_DESCRIPTOR,
                                       "heartwheel descriptor");
        if (m == nullptr || ::BIO_meth_set_write_ex(m, bio_write) != 1 || ::BIO_meth_set_read_ex(m, bio_read) != 1 ||
            ::BIO_meth_set_ctrl(m, bio_ctrl) != 1 || ::BIO_meth_set_create(m, bio_create) != 1)
            throw system_error(ssl_error(::ERR_get_error()), "tls_socket: the descriptor BIO");
        return m;
    }(); // made once, kept for the process's life
    return method;
}

} // namespace

tls_socket::tls_socket(next_layer_type socket, asio::ssl::context& context)
    : socket_(std::move(socket)), ssl_(::SSL_new(context.native_handle())) {
    if (ssl_ == nullptr) throw system_error(ssl_error(::ERR_get_error()), "SSL_new");
    // Records go out one at a time (a write completes with what one record took), the retry of a
    // write may come from a moved buffer, and idle connections give their record buffers back.
    ::SSL_set_mode(ssl_, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
    error_code ec;
    socket_.non_blocking(true, ec); // OpenSSL's reads and writes must not block the thread
    BIO* bio = ec ? nullptr : ::BIO_new(descriptor_method());
    if (bio == nullptr) {
        ::SSL_free(ssl_);
        throw system_error(ec ? ec : ssl_error(::ERR_get_error()), "tls_socket: the socket");
    }
    ::BIO_set_data(bio, reinterpret_cast<void*>(static_cast<std::intptr_t>(socket_.native_handle())));
    ::SSL_set_bio(ssl_, bio, bio); // the SSL object owns the BIO (one reference for both directions)
    if (::SSL_CTX_get_keylog_callback(context.native_handle()) == detail::lean_records_keylog) {
        lean_.reset(new (std::nothrow) detail::tls13_records); // without it, OpenSSL's records as before
        if (lean_) ::SSL_set_ex_data(ssl_, detail::lean_records_index(), lean_.get());
    }
}

tls_socket::tls_socket(tls_socket&& other) noexcept
    : socket_(std::move(other.socket_)), ssl_(std::exchange(other.ssl_, nullptr)), lean_(std::move(other.lean_)),
      failed_(other.failed_), handshaking_(std::exchange(other.handshaking_, false)) {}

tls_socket::~tls_socket() {
    if (ssl_ != nullptr) ::SSL_free(ssl_); // before the socket closes its descriptor
    if (handshaking_) handshake_ended();
}

bool tls_socket::has_pending() const noexcept {
    if (ssl_ == nullptr) return lean_ != nullptr && lean_->has_pending();
    return ::SSL_has_pending(ssl_) == 1;
}

// The handshake is over: a server's TLS 1.3 connection whose suite the lean records know, with
// nothing left inside OpenSSL (it reads no further than the client's Finished), goes on without the
// SSL object; any other keeps it, and so does one that asked for the client's certificate (the
// application may read it, or verify it again, after the handshake).
void tls_socket::go_lean() noexcept {
    const bool ok = ::SSL_version(ssl_) == TLS1_3_VERSION && ::SSL_is_server(ssl_) == 1 &&
                    (::SSL_get_verify_mode(ssl_) & SSL_VERIFY_PEER) == 0 &&
                    ::SSL_has_pending(ssl_) == 0 && ::SSL_get_current_cipher(ssl_) != nullptr &&
                    lean_->start(::SSL_CIPHER_get_id(::SSL_get_current_cipher(ssl_)));
    ::SSL_set_ex_data(ssl_, detail::lean_records_index(), nullptr);
    if (!ok) {
        lean_.reset();
        return;
    }
    ::SSL_free(std::exchange(ssl_, nullptr));
}

// What the handshakes allocated and freed (OpenSSL's record and handshake buffers, the SSL objects
// of lean connections: ~30 KiB each) lies between the long-lived blocks of the connections made
// meanwhile, where free() cannot give it back: an idle lean connection holds ~1.4 KiB of heap, but
// its process kept ~16 KiB of resident memory per connection after a burst of handshakes. So the
// whole free pages go back (glibc's malloc_trim returns free pages inside the heap, not only its top)
// when the servers' lean handshakes pause with some ended since the last time, and every 256 during
// a storm (~1 ms against the ~250 ms of CPU those 256 handshakes cost).
namespace {
std::atomic<int> lean_handshakes_in_flight{0};
std::atomic<unsigned> lean_handshakes_since_trim{0};
} // namespace

void tls_socket::handshake_began() noexcept {
    lean_handshakes_in_flight.fetch_add(1, std::memory_order_relaxed);
}

void tls_socket::handshake_ended() noexcept {
    const int in_flight = lean_handshakes_in_flight.fetch_sub(1, std::memory_order_relaxed) - 1;
    const unsigned since = lean_handshakes_since_trim.fetch_add(1, std::memory_order_relaxed) + 1;
    if (since < 256 && !(in_flight == 0 && since >= 16)) return;
    lean_handshakes_since_trim.store(0, std::memory_order_relaxed);
    detail::return_freed_memory();
}

bool enable_lean_records(asio::ssl::context& ctx) {
    SSL_CTX* native = ctx.native_handle();
    const auto current = ::SSL_CTX_get_keylog_callback(native);
    if (current != nullptr && current != detail::lean_records_keylog) return false;
    ::SSL_CTX_set_keylog_callback(native, detail::lean_records_keylog);
    return true;
}

void tls_socket::set_host(const std::string& host) {
    X509_VERIFY_PARAM* param = ::SSL_get0_param(ssl_);
    error_code ec;
    asio::ip::make_address(host, ec);
    if (!ec) { // an address: matched against the certificate's IP entries, and no SNI (RFC 6066, 3)
        ::X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str());
        return;
    }
    ::X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    ::SSL_set1_host(ssl_, host.c_str());
    ::SSL_set_tlsext_host_name(ssl_, host.c_str());
}

namespace {

/// What an OpenSSL call that returned `ret` (not success) means: a wait, or an error.
error_code failure(SSL* ssl, int ret, tls_socket::want& w) {
    w = tls_socket::want::nothing;
    const int saved_errno = errno;
    switch (::SSL_get_error(ssl, ret)) {
    case SSL_ERROR_WANT_READ: w = tls_socket::want::read; return {};
    case SSL_ERROR_WANT_WRITE: w = tls_socket::want::write; return {};
    case SSL_ERROR_ZERO_RETURN: return asio::error::eof; // the peer's close_notify
    case SSL_ERROR_SYSCALL: {
        if (const unsigned long e = ::ERR_get_error()) return ssl_error(e);
        if (saved_errno != 0) return error_code(saved_errno, asio::error::get_system_category()); // e.g. a reset
        return asio::ssl::error::stream_truncated; // a TCP close without close_notify
    }
    case SSL_ERROR_SSL: {
        const unsigned long e = ::ERR_get_error();
        if (ERR_GET_REASON(e) == SSL_R_UNEXPECTED_EOF_WHILE_READING) return asio::ssl::error::stream_truncated;
        return ssl_error(e);
    }
    default: return ssl_error(::ERR_get_error());
    }
}

} // namespace

// Every OpenSSL call that may touch the descriptor goes through one of the four functions below, and
// each first checks that the socket is still open: OpenSSL holds the descriptor's number, and once the
// socket is closed (a failed write on the same connection, say, while this operation's wait had
// already completed) that number may belong to a new connection. A closed socket gets
// bad_descriptor, and OpenSSL is not called.
tls_socket::outcome tls_socket::handshake(handshake_type type) {
    if (!socket_.is_open()) return {0, want::nothing, asio::error::bad_descriptor};
    ::ERR_clear_error();
    errno = 0;
    if (ssl_ == nullptr) return lean_ ? outcome{} : outcome{0, want::nothing, asio::error::bad_descriptor}; // lean: done
    if (::SSL_in_before(ssl_) == 1) { // the first try only: setting the side again would restart it
        if (type == handshake_type::client) {
            ::SSL_set_connect_state(ssl_);
            ::SSL_set_ex_data(ssl_, detail::lean_records_index(), nullptr);
            lean_.reset(); // a client keeps OpenSSL's records (and takes the server's tickets)
        } else {
            ::SSL_set_accept_state(ssl_);
            if (lean_) {
                ::SSL_set_num_tickets(ssl_, 0);
                handshaking_ = true;
                handshake_began();
            }
        }
    }
    const int ret = ::SSL_do_handshake(ssl_);
    outcome o;
    if (ret != 1) o.ec = failure(ssl_, ret, o.wait);
    else if (lean_) go_lean();
    failed_ = failed_ || (o.ec && o.ec != asio::error::eof);
    if (o.wait == want::nothing && std::exchange(handshaking_, false)) handshake_ended();
    return o;
}

tls_socket::outcome tls_socket::read(asio::mutable_buffer b) {
    outcome o;
    if (b.size() == 0) return o;
    o.n = read_ready(b.data(), b.size(), o.wait, o.ec);
    if (o.ec == asio::error::would_block) o.ec = {};
    return o;
}

std::size_t tls_socket::read_ready(void* data, std::size_t size, want& w, error_code& ec, time_point* arrived) {
    w = want::nothing;
    if (!socket_.is_open()) {
        ec = asio::error::bad_descriptor;
        return 0;
    }
    if (ssl_ == nullptr) {
        if (!lean_) {
            ec = asio::error::bad_descriptor; // moved from
            return 0;
        }
        const std::size_t n = lean_->read(socket_.native_handle(), data, size, ec, arrived);
        if (ec == asio::error::would_block) w = want::read;
        failed_ = failed_ || (ec && ec != asio::error::would_block && ec != asio::error::eof);
        return n;
    }
    ::ERR_clear_error();
    errno = 0;
    std::size_t n = 0;
    const int ret = ::SSL_read_ex(ssl_, data, size, &n);
    w = want::nothing;
    ec = {};
    if (ret == 1) return n;
    ec = failure(ssl_, ret, w);
    if (w != want::nothing) ec = asio::error::would_block;
    failed_ = failed_ || (ec && ec != asio::error::would_block && ec != asio::error::eof);
    return 0;
}

tls_socket::outcome tls_socket::write(asio::const_buffer b) {
    outcome o;
    if (b.size() == 0) return o;
    if (!socket_.is_open()) return {0, want::nothing, asio::error::bad_descriptor};
    if (ssl_ == nullptr) {
        if (!lean_) return {0, want::nothing, asio::error::bad_descriptor}; // moved from
        o.n = lean_->write(socket_.native_handle(), b.data(), b.size(), o.ec);
        if (o.ec == asio::error::would_block) {
            o.ec = {};
            o.wait = want::write;
        }
        failed_ = failed_ || !!o.ec;
        return o;
    }
    ::ERR_clear_error();
    errno = 0;
    const int ret = ::SSL_write_ex(ssl_, b.data(), b.size(), &o.n);
    if (ret != 1) {
        o.n = 0;
        o.ec = failure(ssl_, ret, o.wait);
        failed_ = failed_ || !!o.ec;
    }
    return o;
}

bool tls_socket::send_close_notify() noexcept {
    if (failed_ || !socket_.is_open()) return false;
    if (ssl_ == nullptr) return lean_ && lean_->close_notify(socket_.native_handle());
    if (::SSL_is_init_finished(ssl_) != 1) return false;
    ::ERR_clear_error();
    const int ret = ::SSL_shutdown(ssl_); // 0: ours is out, the peer's not yet read; 1: both
    ::ERR_clear_error(); // a shutdown that could not go out leaves nothing for the next call to see
    return ret >= 0;
}

asio::ssl::context server_tls_context(const std::string& cert, const std::string& key, const std::string& field,
                                      const tls_policy& policy) {
    asio::ssl::context ctx(asio::ssl::context::tls_server);
    SSL_CTX* native = ctx.native_handle();
    ::SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
    ::SSL_CTX_set_options(native, SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
    ::SSL_CTX_set_mode(native, SSL_MODE_RELEASE_BUFFERS);
    if (policy.lean_records) enable_lean_records(ctx); // a new context has no key-log callback of its own
    if (::SSL_CTX_set_cipher_list(native, policy.ciphers.c_str()) != 1) {
        ::ERR_clear_error();
        throw config_error(field + "-ciphers", policy.ciphers, "TLS 1.2 cipher suites OpenSSL supports (e.g. ECDHE+AESGCM)",
                           "names no suite");
    }
    if (::SSL_CTX_set1_groups_list(native, policy.groups.c_str()) != 1) {
        ::ERR_clear_error();
        throw config_error(field + "-groups", policy.groups, "key-exchange groups OpenSSL supports (e.g. X25519:P-256)",
                           "names a group OpenSSL does not support");
    }
    error_code ec;
    ctx.use_certificate_chain_file(cert, ec);
    if (ec) throw config_error(field, field + ": cannot load the certificate chain " + cert + ": " + ec.message());
    ctx.use_private_key_file(key, asio::ssl::context::pem, ec);
    // A key that is not the certificate's (OpenSSL says "key values mismatch" for one of its type,
    // and nothing for another type, which it files beside) would start a server that fails every
    // handshake: said as such.
    const bool mismatch = ec ? ERR_GET_REASON(ec.value()) == X509_R_KEY_VALUES_MISMATCH
                             : ::SSL_CTX_check_private_key(native) != 1;
    ::ERR_clear_error();
    if (mismatch)
        throw config_error(field, field + ": the private key " + key + " does not match the certificate " + cert +
                                      " (it is not the certificate's private key)");
    if (ec) throw config_error(field, field + ": cannot load the private key " + key + ": " + ec.message());
    return ctx;
}

} // namespace heartwheel::net
