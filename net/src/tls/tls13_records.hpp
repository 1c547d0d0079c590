// tls13_records.hpp — a TLS 1.3 connection's records after its handshake, without OpenSSL's
// connection state: what kernel TLS does, in user space.
//
// Why: once a TLS 1.3 handshake is over, what a connection needs to go on is small — per direction
// the traffic secret, the key and IV derived from it, and a sequence number (~100 bytes) — but
// OpenSSL 3's SSL object keeps ~14 KiB per connection for as long as it lives (the object itself is
// ~7.6 KiB, the two cipher contexts ~2.3 KiB, the session, a copy of the certificate's state, the
// ephemeral keys, the transcript hashes). A server of idle TLS connections is made of that. So the
// server takes the traffic secrets as OpenSSL derives them (the key-log callback: the same lines an
// SSLKEYLOGFILE gets), and once the handshake is done frees the SSL object and protects the records
// itself (RFC 8446 §5: AES-GCM or ChaCha20-Poly1305, nonce = IV xor sequence number, the record's
// header as the additional data, the content type inside).
//
// What it holds: the two directions' state always (~220 bytes); while a record is half received, a
// buffer for that record; while plaintext waits for a bigger read, that plaintext; while a record is
// half sent, its rest. An idle connection holds none of the buffers. The cipher context and the
// scratch a whole record is decrypted or encrypted in are per thread.
//
// What it understands after the handshake (a server's peer may send nothing else): application data;
// an alert (close_notify ends the stream, user_canceled is ignored, any other ends it with the
// alert's reason); KeyUpdate (the receive key moves on; asked to, ours moves on before our next
// data, as §4.6.3 says). Anything else, a record that does not authenticate, or a malformed one ends
// the connection with an error of the SSL category, as OpenSSL would report it. No session tickets are
// issued (the server that takes this path sets their number to 0): a ticket needs the SSL object,
// and a restarted process could not read its predecessor's anyway.
//
// Invariants: a read or write waits for readiness only after the socket said EAGAIN (the reactor's
// readiness is edge-triggered); a record's sequence number is used once; a write that could not send
// its record whole keeps the rest and reports the record's plaintext only when the rest is out.
#ifndef HEARTWHEEL_NET_SRC_TLS13_RECORDS_HPP
#define HEARTWHEEL_NET_SRC_TLS13_RECORDS_HPP

#include <heartwheel/net/tls/tls_socket.hpp>

#include <openssl/ssl.h>

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>

namespace heartwheel::net::detail {

class tls13_records {
public:
    tls13_records() = default;
    tls13_records(const tls13_records&) = delete;
    tls13_records& operator=(const tls13_records&) = delete;
    ~tls13_records();

    /// A key-log line of the server's handshake (the traffic secrets are kept, the rest ignored).
    void on_keylog(const char* line) noexcept;
    /// After the handshake: derives the keys for the suite `cipher_id` (SSL_CIPHER_get_id). False when
    /// a secret is missing or the suite is not one of TLS 1.3's AEAD suites this knows.
    bool start(std::uint32_t cipher_id) noexcept;

    /// Without blocking: at most one record's plaintext into [data, data + size) (what does not fit is
    /// kept for the next read). 0 with ec set: would_block (wait for readability), eof (the peer's
    /// close_notify), stream_truncated (a TCP close without one), or an error. With `arrived`, the
    /// socket is read with recvmsg and the kernel's stamp of the last segment of the record delivered
    /// (SO_TIMESTAMPNS, when the socket was asked for it) is stored there; unchanged when the
    /// plaintext was kept from an earlier read or no stamp came.
    std::size_t read(int fd, void* data, std::size_t size, error_code& ec, time_point* arrived = nullptr);
    /// Without blocking: one record of up to 16 KiB of [data, data + size). Returns the bytes taken,
    /// or 0 with ec set: would_block (wait for writability, then call again with the same bytes: the
    /// record is made already), or an error.
    std::size_t write(int fd, const void* data, std::size_t size, error_code& ec);
    /// close_notify, without waiting. Whether it went out whole.
    bool close_notify(int fd) noexcept;
    /// Plaintext decrypted and not yet read.
    bool has_pending() const noexcept { return plain_len_ > plain_off_; }

private:
    struct direction {
        unsigned char secret[48];
        unsigned char key[32];
        unsigned char iv[12];
        std::uint64_t seq = 0;
    };
    bool derive(direction& d) noexcept;                 // key and IV from the secret; seq 0
    bool update(direction& d) noexcept;                 // the next secret (KeyUpdate), then derive
    bool aead(direction& d, bool seal, const unsigned char* header, unsigned char* body, std::size_t inner) noexcept;
    std::size_t seal(direction& d, unsigned char type, const unsigned char* in, std::size_t n,
                     unsigned char* out) noexcept;      // a whole record into out; 0: failed
    bool open(unsigned char* header, unsigned char* body, std::size_t& n) noexcept; // in place; n: inner plaintext
    bool send_held(int fd, error_code& ec) noexcept;    // the rest of a half-sent record
    std::size_t take_plain(void* data, std::size_t size) noexcept;
    std::size_t read_records(int fd, void* data, std::size_t size, error_code& ec, time_point* arrived);
    static ssize_t receive(int fd, void* into, std::size_t want, time_point* arrived) noexcept;
    /// The body length the header in hdr_ announces (meaningful once all of it is in).
    std::size_t record_length() const noexcept { return static_cast<std::size_t>(hdr_[3]) << 8 | hdr_[4]; }
    // One whole record in body (its header in hdr_): returns plaintext copied to data, or 0 with ec.
    std::size_t deliver(unsigned char* body, std::size_t len, void* data, std::size_t size, error_code& ec);

    direction rx_, tx_;
    const EVP_CIPHER* cipher_ = nullptr;
    const EVP_MD* md_ = nullptr;
    unsigned char hash_len_ = 0, key_len_ = 0;
    bool have_rx_secret_ = false, have_tx_secret_ = false;
    bool key_update_due_ = false; ///< the peer asked for our KeyUpdate: sent before our next data
    bool closed_by_peer_ = false; ///< its close_notify came
    bool broken_ = false;         ///< a fatal error: no more records either way
    unsigned char hdr_[5]{};
    unsigned char hdr_n_ = 0;
    std::uint16_t body_n_ = 0;                 ///< bytes of the record's body held in body_
    std::unique_ptr<unsigned char[]> body_;    ///< a record half received
    std::unique_ptr<char[]> plain_;            ///< plaintext not yet read
    std::uint16_t plain_off_ = 0, plain_len_ = 0;
    std::unique_ptr<unsigned char[]> out_;     ///< a record half sent
    std::uint32_t out_off_ = 0, out_len_ = 0;
    std::uint32_t out_plain_ = 0;              ///< the plaintext that record carries
};

/// The key-log callback a context gets from enable_lean_records; tls_socket recognises it.
void lean_records_keylog(const SSL* ssl, const char* line);
/// The SSL ex_data index that points a handshaking SSL at its tls13_records.
int lean_records_index();

} // namespace heartwheel::net::detail

#endif
