// tls13_records.cpp — TLS 1.3 records from the traffic secrets; see tls13_records.hpp.
#include "tls13_records.hpp"

#include <heartwheel/asio_ssl.hpp>
#include <heartwheel/net/detail/arrival_stamp.hpp>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace heartwheel::net::detail {

namespace {

constexpr std::size_t header_size = 5;
constexpr std::size_t tag_size = 16;
constexpr std::size_t max_plaintext = 16384;                 // 2^14 (RFC 8446 §5.1)
constexpr std::size_t max_ciphertext = max_plaintext + 256;  // §5.2: the record's length at most
constexpr unsigned char type_alert = 21, type_handshake = 22, type_application_data = 23;
constexpr unsigned char handshake_key_update = 24;
constexpr unsigned char alert_close_notify = 0, alert_user_canceled = 90;

error_code ssl_reason(int reason) {
    return {static_cast<int>(ERR_PACK(ERR_LIB_SSL, 0, reason)), asio::error::get_ssl_category()};
}

bool would_block(int e) { return e == EAGAIN || e == EWOULDBLOCK; }

// What each thread shares between its connections: the cipher context (keyed per record) and the
// room one whole record is decrypted or made in.
struct thread_crypto {
    EVP_CIPHER_CTX* ctx = ::EVP_CIPHER_CTX_new();
    std::unique_ptr<unsigned char[]> scratch{new unsigned char[header_size + max_ciphertext + 2 * (header_size + 32)]};
    thread_crypto() {
        if (ctx == nullptr) throw std::bad_alloc();
    }
    ~thread_crypto() { ::EVP_CIPHER_CTX_free(ctx); }
    thread_crypto(const thread_crypto&) = delete;
    thread_crypto& operator=(const thread_crypto&) = delete;
};

thread_crypto& crypto() {
    thread_local thread_crypto t;
    return t;
}

// The suites' algorithms, fetched once (an explicit fetch: keying a context per record then looks
// nothing up).
struct algorithms {
    EVP_CIPHER* aes128 = ::EVP_CIPHER_fetch(nullptr, "AES-128-GCM", nullptr);
    EVP_CIPHER* aes256 = ::EVP_CIPHER_fetch(nullptr, "AES-256-GCM", nullptr);
    EVP_CIPHER* chacha = ::EVP_CIPHER_fetch(nullptr, "ChaCha20-Poly1305", nullptr);
    EVP_MD* sha256 = ::EVP_MD_fetch(nullptr, "SHA256", nullptr);
    EVP_MD* sha384 = ::EVP_MD_fetch(nullptr, "SHA384", nullptr);
};

const algorithms& algos() {
    static const algorithms a; // kept for the process's life
    return a;
}

// HKDF-Expand-Label(secret, label, "", n) for n at most the hash's length (RFC 8446 §7.1): one HMAC.
bool expand_label(const EVP_MD* md, const unsigned char* secret, std::size_t secret_len, const char* label,
                  unsigned char* out, std::size_t n) {
    unsigned char info[2 + 1 + 6 + 16 + 1 + 1];
    const std::size_t label_len = std::strlen(label);
    if (label_len > 16) return false;
    std::size_t i = 0;
    info[i++] = static_cast<unsigned char>(n >> 8);
    info[i++] = static_cast<unsigned char>(n);
    info[i++] = static_cast<unsigned char>(6 + label_len);
    std::memcpy(info + i, "tls13 ", 6);
    i += 6;
    std::memcpy(info + i, label, label_len);
    i += label_len;
    info[i++] = 0; // the empty context
    info[i++] = 1; // HKDF-Expand's counter: T(1)
    unsigned char t[EVP_MAX_MD_SIZE];
    unsigned int t_len = 0;
    if (::HMAC(md, secret, static_cast<int>(secret_len), info, i, t, &t_len) == nullptr || t_len < n) return false;
    std::memcpy(out, t, n);
    ::OPENSSL_cleanse(t, sizeof t);
    return true;
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// The secret of a key-log line "<LABEL> <client random> <secret>", in hex; its length (0: none).
std::size_t parse_secret(const char* line, std::size_t label_len, unsigned char* out) {
    const char* p = line + label_len;
    if (*p != ' ') return 0;
    p = std::strchr(p + 1, ' ');
    if (p == nullptr) return 0;
    ++p;
    std::size_t n = 0;
    for (; p[0] != '\0' && p[1] != '\0' && n < 48; p += 2) {
        const int hi = hex_value(p[0]), lo = hex_value(p[1]);
        if (hi < 0 || lo < 0) return 0;
        out[n++] = static_cast<unsigned char>(hi << 4 | lo);
    }
    return *p == '\0' ? n : 0;
}

} // namespace

tls13_records::~tls13_records() {
    ::OPENSSL_cleanse(&rx_, sizeof rx_);
    ::OPENSSL_cleanse(&tx_, sizeof tx_);
}

void tls13_records::on_keylog(const char* line) noexcept {
    static constexpr char client[] = "CLIENT_TRAFFIC_SECRET_0", server[] = "SERVER_TRAFFIC_SECRET_0";
    // A server's receive secret is the client's, its send secret its own; both of the suite's hash length.
    const auto take = [&](std::size_t label_len, direction& d, bool& have) {
        const std::size_t n = parse_secret(line, label_len, d.secret);
        have = n != 0 && (hash_len_ == 0 || n == hash_len_);
        hash_len_ = static_cast<unsigned char>(n);
    };
    if (std::strncmp(line, client, sizeof client - 1) == 0) take(sizeof client - 1, rx_, have_rx_secret_);
    else if (std::strncmp(line, server, sizeof server - 1) == 0) take(sizeof server - 1, tx_, have_tx_secret_);
}

bool tls13_records::start(std::uint32_t cipher_id) noexcept {
    const algorithms& a = algos();
    unsigned char hash_len = 0;
    switch (cipher_id & 0xFFFF) {
    case 0x1301: cipher_ = a.aes128, md_ = a.sha256, key_len_ = 16, hash_len = 32; break; // TLS_AES_128_GCM_SHA256
    case 0x1302: cipher_ = a.aes256, md_ = a.sha384, key_len_ = 32, hash_len = 48; break; // TLS_AES_256_GCM_SHA384
    case 0x1303: cipher_ = a.chacha, md_ = a.sha256, key_len_ = 32, hash_len = 32; break; // TLS_CHACHA20_POLY1305_SHA256
    default: return false;
    }
    if (cipher_ == nullptr || md_ == nullptr || !have_rx_secret_ || !have_tx_secret_ || hash_len_ != hash_len) return false;
    return derive(rx_) && derive(tx_);
}

bool tls13_records::derive(direction& d) noexcept {
    d.seq = 0;
    return expand_label(md_, d.secret, hash_len_, "key", d.key, key_len_) &&
           expand_label(md_, d.secret, hash_len_, "iv", d.iv, sizeof d.iv);
}

bool tls13_records::update(direction& d) noexcept {
    unsigned char next[48];
    if (!expand_label(md_, d.secret, hash_len_, "traffic upd", next, hash_len_)) return false;
    std::memcpy(d.secret, next, hash_len_);
    ::OPENSSL_cleanse(next, sizeof next);
    return derive(d);
}

// One record's AEAD in place (§5.2): `inner` bytes of `body`, the header as additional data, the
// nonce the IV xor the sequence number (§5.3); sealing writes the tag after them, opening checks it.
// The sequence moves on only when it succeeded, and never wraps (§5.5).
bool tls13_records::aead(direction& d, bool seal, const unsigned char* header, unsigned char* body,
                         std::size_t inner) noexcept {
    if (d.seq == UINT64_MAX) return false;
    unsigned char nonce[12];
    std::memcpy(nonce, d.iv, sizeof nonce);
    for (int i = 0; i < 8; ++i) nonce[11 - i] ^= static_cast<unsigned char>(d.seq >> (8 * i));
    EVP_CIPHER_CTX* ctx = crypto().ctx;
    int len = 0, final_len = 0;
    const bool ok = ::EVP_CipherInit_ex2(ctx, cipher_, d.key, nonce, seal ? 1 : 0, nullptr) == 1 &&
                    ::EVP_CipherUpdate(ctx, nullptr, &len, header, header_size) == 1 &&
                    ::EVP_CipherUpdate(ctx, body, &len, body, static_cast<int>(inner)) == 1 &&
                    (seal || ::EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, tag_size, body + inner) == 1) &&
                    ::EVP_CipherFinal_ex(ctx, body + len, &final_len) == 1 &&
                    (!seal || ::EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, tag_size, body + inner) == 1);
    if (!ok) return false;
    ++d.seq;
    return true;
}

std::size_t tls13_records::seal(direction& d, unsigned char type, const unsigned char* in, std::size_t n,
                                unsigned char* out) noexcept {
    const std::size_t inner = n + 1, length = inner + tag_size;
    out[0] = type_application_data; // every protected record says application data outside (§5.2)
    out[1] = 3;
    out[2] = 3;
    out[3] = static_cast<unsigned char>(length >> 8);
    out[4] = static_cast<unsigned char>(length);
    unsigned char* body = out + header_size;
    if (n > 0) std::memmove(body, in, n);
    body[n] = type;
    return aead(d, true, out, body, inner) ? header_size + length : 0;
}

bool tls13_records::open(unsigned char* header, unsigned char* body, std::size_t& n) noexcept {
    if (n < 1 + tag_size || !aead(rx_, false, header, body, n - tag_size)) return false;
    n -= tag_size;
    return true;
}

std::size_t tls13_records::take_plain(void* data, std::size_t size) noexcept {
    const std::size_t n = std::min<std::size_t>(size, plain_len_ - plain_off_);
    std::memcpy(data, plain_.get() + plain_off_, n);
    plain_off_ = static_cast<std::uint16_t>(plain_off_ + n);
    if (plain_off_ == plain_len_) {
        plain_.reset();
        plain_off_ = plain_len_ = 0;
    }
    return n;
}

std::size_t tls13_records::deliver(unsigned char* body, std::size_t len, void* data, std::size_t size, error_code& ec) {
    std::size_t n = len;
    if (!open(hdr_, body, n)) {
        ec = ssl_reason(SSL_R_DECRYPTION_FAILED_OR_BAD_RECORD_MAC);
        return 0;
    }
    while (n > 0 && body[n - 1] == 0) --n; // the padding
    if (n == 0) {
        ec = ssl_reason(SSL_R_UNEXPECTED_MESSAGE); // no content type: all padding
        return 0;
    }
    const unsigned char type = body[--n];
    if (n > max_plaintext) {
        ec = ssl_reason(SSL_R_DATA_LENGTH_TOO_LONG);
        return 0;
    }
    switch (type) {
    case type_application_data: {
        const std::size_t k = std::min(n, size);
        std::memcpy(data, body, k);
        if (n > k) {
            plain_.reset(new char[n - k]);
            std::memcpy(plain_.get(), body + k, n - k);
            plain_off_ = 0;
            plain_len_ = static_cast<std::uint16_t>(n - k);
        }
        return k; // 0 for an empty record: the caller reads on
    }
    case type_alert:
        if (n != 2) {
            ec = ssl_reason(SSL_R_BAD_LENGTH);
        } else if (body[1] == alert_close_notify) {
            closed_by_peer_ = true;
            ec = asio::error::eof;
        } else if (body[1] != alert_user_canceled) {
            ec = ssl_reason(SSL_AD_REASON_OFFSET + body[1]); // as OpenSSL reports a peer's alert
        }
        return 0;
    case type_handshake:
        // After the handshake a server's peer may send KeyUpdate only (no post-handshake
        // authentication was asked for); it ends its record (§5.1: no message may span a key change).
        if (n != 5 || body[0] != handshake_key_update || body[1] != 0 || body[2] != 0 || body[3] != 1 || body[4] > 1) {
            ec = ssl_reason(n >= 1 && body[0] == handshake_key_update ? SSL_R_BAD_KEY_UPDATE : SSL_R_UNEXPECTED_MESSAGE);
            return 0;
        }
        if (!update(rx_)) {
            ec = ssl_reason(SSL_R_BAD_KEY_UPDATE);
            return 0;
        }
        if (body[4] == 1) key_update_due_ = true; // update_requested
        return 0;
    default: ec = ssl_reason(SSL_R_UNEXPECTED_RECORD); return 0;
    }
}

std::size_t tls13_records::read(int fd, void* data, std::size_t size, error_code& ec, time_point* arrived) {
    ec = {};
    if (size == 0) return 0;
    if (has_pending()) return take_plain(data, size);
    if (closed_by_peer_) {
        ec = asio::error::eof;
        return 0;
    }
    if (broken_) {
        ec = ssl_reason(SSL_R_PROTOCOL_IS_SHUTDOWN);
        return 0;
    }
    const std::size_t n = read_records(fd, data, size, ec, arrived);
    // A record that does not authenticate, a malformed one or a fatal alert ends the connection for
    // reading and writing alike, as OpenSSL's fatal errors do.
    if (ec && ec.category() == asio::error::get_ssl_category()) broken_ = true;
    return n;
}

// One recv of the socket; with `arrived`, one that brings the segment's stamp along (the newest of a
// record's segments is the last one read: each read overwrites it).
ssize_t tls13_records::receive(int fd, void* into, std::size_t want, time_point* arrived) noexcept {
#ifdef __linux__
    if (arrived != nullptr) return detail::recv_stamped(fd, into, want, *arrived);
#else
    (void)arrived;
#endif
    return ::recv(fd, into, want, 0);
}

std::size_t tls13_records::read_records(int fd, void* data, std::size_t size, error_code& ec, time_point* arrived) {
    for (;;) {
        unsigned char* into = nullptr;
        std::size_t want = 0;
        const std::size_t len = record_length();
        if (hdr_n_ < header_size) {
            into = hdr_ + hdr_n_;
            want = header_size - hdr_n_;
        } else if (body_) {
            into = body_.get() + body_n_;
            want = len - body_n_;
        } else {
            into = crypto().scratch.get(); // the common case: the whole body is there
            want = len;
        }
        // A record's newest byte is in its body (never empty): a header's read takes no stamp.
        const ssize_t r = receive(fd, into, want, hdr_n_ < header_size ? nullptr : arrived);
        if (r == 0) {
            ec = asio::ssl::error::stream_truncated; // a TCP close without close_notify
            return 0;
        }
        if (r < 0) {
            if (errno == EINTR) continue;
            ec = would_block(errno) ? error_code(asio::error::would_block)
                                    : error_code(errno, asio::error::get_system_category());
            return 0;
        }
        const auto got = static_cast<std::size_t>(r);
        if (hdr_n_ < header_size) {
            hdr_n_ = static_cast<unsigned char>(hdr_n_ + got);
            if (hdr_n_ < header_size) continue;
            const std::size_t length = record_length();
            if (hdr_[0] != type_application_data) {
                ec = ssl_reason(SSL_R_UNEXPECTED_RECORD); // unprotected after the handshake
                return 0;
            }
            if (hdr_[1] != 3 || hdr_[2] != 3) {
                ec = ssl_reason(SSL_R_WRONG_VERSION_NUMBER);
                return 0;
            }
            if (length < 1 + tag_size || length > max_ciphertext) {
                ec = ssl_reason(length > max_ciphertext ? SSL_R_ENCRYPTED_LENGTH_TOO_LONG : SSL_R_BAD_LENGTH);
                return 0;
            }
            continue;
        }
        std::size_t n = 0;
        if (!body_ && got < len) { // half a record: kept until the rest comes
            body_.reset(new unsigned char[len]);
            std::memcpy(body_.get(), into, got);
            body_n_ = static_cast<std::uint16_t>(got);
            continue;
        }
        if (body_) {
            body_n_ = static_cast<std::uint16_t>(body_n_ + got);
            if (body_n_ < len) continue;
            const std::unique_ptr<unsigned char[]> whole = std::move(body_);
            body_n_ = 0;
            hdr_n_ = 0;
            n = deliver(whole.get(), len, data, size, ec);
        } else {
            hdr_n_ = 0;
            n = deliver(into, len, data, size, ec);
        }
        if (n > 0 || ec) return n;
        // a record with nothing for the reader (an empty one, a KeyUpdate, user_canceled): read on
    }
}

bool tls13_records::send_held(int fd, error_code& ec) noexcept {
    while (out_off_ < out_len_) {
        const ssize_t r = ::send(fd, out_.get() + out_off_, out_len_ - out_off_, MSG_NOSIGNAL);
        if (r < 0) {
            if (errno == EINTR) continue;
            ec = would_block(errno) ? error_code(asio::error::would_block)
                                    : error_code(errno, asio::error::get_system_category());
            return false;
        }
        out_off_ += static_cast<std::uint32_t>(r);
    }
    out_.reset();
    out_off_ = out_len_ = 0;
    return true;
}

std::size_t tls13_records::write(int fd, const void* data, std::size_t size, error_code& ec) {
    ec = {};
    if (broken_) {
        ec = ssl_reason(SSL_R_PROTOCOL_IS_SHUTDOWN);
        return 0;
    }
    if (out_) { // the record made by the call this one repeats
        if (!send_held(fd, ec)) return 0;
        return std::exchange(out_plain_, 0);
    }
    const std::size_t n = std::min(size, max_plaintext);
    unsigned char* s = crypto().scratch.get();
    std::size_t made = 0;
    if (key_update_due_) { // ours, under the old key, before our next data (§4.6.3)
        static constexpr unsigned char key_update[5] = {handshake_key_update, 0, 0, 1, 0}; // update_not_requested
        made = seal(tx_, type_handshake, key_update, sizeof key_update, s);
        if (made == 0 || !update(tx_)) {
            ec = ssl_reason(SSL_R_BAD_KEY_UPDATE);
            return 0;
        }
        key_update_due_ = false;
    }
    const std::size_t record = seal(tx_, type_application_data, static_cast<const unsigned char*>(data), n, s + made);
    if (record == 0) {
        ec = ssl_reason(SSL_R_DECRYPTION_FAILED_OR_BAD_RECORD_MAC);
        return 0;
    }
    made += record;
    std::size_t sent = 0;
    while (sent < made) {
        const ssize_t r = ::send(fd, s + sent, made - sent, MSG_NOSIGNAL);
        if (r < 0) {
            if (errno == EINTR) continue;
            if (!would_block(errno)) {
                ec = error_code(errno, asio::error::get_system_category());
                return 0;
            }
            break;
        }
        sent += static_cast<std::size_t>(r);
    }
    if (sent == made) return n;
    out_.reset(new unsigned char[made - sent]); // the rest, sent when the socket is writable
    std::memcpy(out_.get(), s + sent, made - sent);
    out_off_ = 0;
    out_len_ = static_cast<std::uint32_t>(made - sent);
    out_plain_ = static_cast<std::uint32_t>(n);
    ec = asio::error::would_block;
    return 0;
}

bool tls13_records::close_notify(int fd) noexcept {
    error_code ec;
    if (out_ && !send_held(fd, ec)) return false; // a record half out: the alert cannot follow it now
    static constexpr unsigned char alert[2] = {1, alert_close_notify}; // warning, close_notify
    unsigned char record[header_size + sizeof alert + 1 + tag_size];
    const std::size_t made = seal(tx_, type_alert, alert, sizeof alert, record);
    if (made == 0) return false;
    ssize_t r;
    do r = ::send(fd, record, made, MSG_NOSIGNAL);
    while (r < 0 && errno == EINTR);
    return r == static_cast<ssize_t>(made);
}

int lean_records_index() {
    static const int index = ::SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
    return index;
}

void lean_records_keylog(const SSL* ssl, const char* line) {
    if (auto* r = static_cast<tls13_records*>(::SSL_get_ex_data(ssl, lean_records_index()))) r->on_keylog(line);
}

} // namespace heartwheel::net::detail
