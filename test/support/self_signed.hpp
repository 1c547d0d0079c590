// self_signed.hpp — a throwaway self-signed P-256 certificate for CN=localhost, made in memory, for
// the TLS tests: use() makes a context serve it, trust() makes a context accept it as its CA.
#ifndef HEARTWHEEL_TEST_SELF_SIGNED_HPP
#define HEARTWHEEL_TEST_SELF_SIGNED_HPP

#include <heartwheel/asio_ssl.hpp> // heartwheel::asio::ssl, either Asio flavour

#include <openssl/evp.h>
#include <openssl/x509.h>

#include <stdexcept>

namespace heartwheel::test {

class self_signed {
public:
    self_signed() : key_(EVP_EC_gen("P-256")), cert_(X509_new()) {
        if (key_ == nullptr || cert_ == nullptr) throw std::runtime_error("self_signed: out of memory");
        ASN1_INTEGER_set(X509_get_serialNumber(cert_), 1);
        X509_gmtime_adj(X509_getm_notBefore(cert_), 0);
        X509_gmtime_adj(X509_getm_notAfter(cert_), 3600);
        X509_set_pubkey(cert_, key_);
        X509_NAME* name = X509_get_subject_name(cert_);
        X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("localhost"), -1,
                                   -1, 0);
        X509_set_issuer_name(cert_, name);
        if (X509_sign(cert_, key_, EVP_sha256()) == 0) throw std::runtime_error("self_signed: cannot sign");
    }
    ~self_signed() {
        X509_free(cert_);
        EVP_PKEY_free(key_);
    }
    self_signed(const self_signed&) = delete;
    self_signed& operator=(const self_signed&) = delete;

    /// Serve this certificate and key.
    void use(heartwheel::asio::ssl::context& ctx) const {
        if (SSL_CTX_use_certificate(ctx.native_handle(), cert_) != 1 ||
            SSL_CTX_use_PrivateKey(ctx.native_handle(), key_) != 1)
            throw std::runtime_error("self_signed: the context refused the certificate");
    }
    /// Verify peers against this certificate (and nothing else).
    void trust(heartwheel::asio::ssl::context& ctx) const {
        if (X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx.native_handle()), cert_) != 1)
            throw std::runtime_error("self_signed: the context's store refused the certificate");
        ctx.set_verify_mode(heartwheel::asio::ssl::verify_peer);
    }

private:
    EVP_PKEY* key_;
    X509* cert_;
};

/// Serves a fresh throwaway certificate on `ctx` (the peer does not verify it).
inline void use_self_signed(heartwheel::asio::ssl::context& ctx) { self_signed().use(ctx); }

} // namespace heartwheel::test

#endif
