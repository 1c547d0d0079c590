// openssl_parts.cpp — what OpenSSL keeps per server connection once a TLS 1.3 handshake is over, by
// the place in OpenSSL's source that allocated it: the breakdown behind "OpenSSL's state" in the
// footprint's TLS row, and the reason for lean records (net::enable_lean_records).
//
// How: every OpenSSL allocation goes through counting functions (CRYPTO_set_mem_functions, installed
// before OpenSSL allocates anything), which record each live block's size, the file and line OpenSSL
// passes, and whether the server's thread made it. N connections over socket pairs, each handshaken
// by a blocking client on its own thread (its allocations are not counted), the server reading one
// byte after the handshake; then the server's live blocks are summed by source file (bytes per
// connection). The certificate is a throwaway P-256 one; the key exchange OpenSSL's default (X25519).
// Prints a Markdown table and a JSON line.
//     openssl_parts [connections=200]
#include <heartwheel/asio_ssl.hpp>

#include "self_signed.hpp"

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/objects.h>
#include <openssl/ssl.h>

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

struct block {
    const char* file;
    std::size_t size;
};

std::mutex blocks_mutex;
std::map<void*, block>* blocks = nullptr; // the server thread's live blocks while counting
bool counting = false;
thread_local bool server_thread = true;

void note(void* p, std::size_t n, const char* file) {
    if (p == nullptr || !counting || !server_thread) return;
    const std::lock_guard<std::mutex> lock(blocks_mutex);
    (*blocks)[p] = block{file, n};
}
void forget(void* p) {
    if (p == nullptr || !counting) return;
    const std::lock_guard<std::mutex> lock(blocks_mutex);
    blocks->erase(p);
}
void* counted_malloc(std::size_t n, const char* file, int) {
    void* p = std::malloc(n);
    note(p, n, file);
    return p;
}
void* counted_realloc(void* old, std::size_t n, const char* file, int) {
    forget(old);
    void* p = std::realloc(old, n);
    note(p, n, file);
    return p;
}
void counted_free(void* p, const char*, int) {
    forget(p);
    std::free(p);
}

// What each of OpenSSL's source files allocates for a connection, in words (by file: the lines move
// between OpenSSL releases).
std::string what(const std::string& file) {
    static const std::pair<const char*, const char*> known[] = {
        {"ssl_lib.c", "the SSL object"},
        {"cipher_aes_gcm.c", "AES-GCM cipher contexts (one per direction)"},
        {"cipher_chacha20_poly1305.c", "ChaCha20-Poly1305 cipher contexts"},
        {"evp_enc.c", "the EVP cipher contexts around them"},
        {"ssl_sess.c", "the session"},
        {"ssl_cert.c", "the connection's copy of the certificate state"},
        {"threads_pthread.c", "locks"},
        {"sha2_prov.c", "transcript hash state"},
        {"digest.c", "the EVP digest contexts around it"},
        {"p_lib.c", "EVP_PKEY objects (the ephemeral key shares)"},
        {"ecx_key.c", "X25519 key material"},
        {"bio_lib.c", "the BIO"},
        {"stack.c", "stacks (lists)"},
        {"t1_lib.c", "extension state"},
        {"x509_vpm.c", "certificate verification parameters"},
    };
    for (const auto& [f, w] : known)
        if (file.size() >= std::string(f).size() && file.compare(file.size() - std::string(f).size(), std::string::npos, f) == 0)
            return w;
    return "";
}

} // namespace

int main(int argc, char** argv) {
    blocks = new std::map<void*, block>; // before OpenSSL allocates: its frees may come here
    if (::CRYPTO_set_mem_functions(counted_malloc, counted_realloc, counted_free) != 1) {
        std::fprintf(stderr, "openssl_parts: OpenSSL allocated before its memory functions could be set\n");
        return 1;
    }
    const long parsed = argc > 1 ? std::strtol(argv[1], nullptr, 10) : 200;
    if (parsed < 1 || parsed > 5000) {
        std::fprintf(stderr, "openssl_parts: connections: 1 to 5000\n");
        return 2;
    }
    const auto n = static_cast<std::size_t>(parsed);
    heartwheel::asio::ssl::context server_ctx(heartwheel::asio::ssl::context::tls_server);
    heartwheel::asio::ssl::context client_ctx(heartwheel::asio::ssl::context::tls_client);
    heartwheel::test::self_signed cert;
    cert.use(server_ctx);
    ::SSL_CTX_set_mode(server_ctx.native_handle(), SSL_MODE_RELEASE_BUFFERS); // as tls_socket sets it

    std::vector<SSL*> servers, clients;
    std::vector<int> fds;
    bool ok = true;
    for (std::size_t i = 0; i < n + 20 && ok; ++i) {
        if (i == 20) counting = true; // 20 first: what OpenSSL sets up once is not a connection's
        int pair[2];
        if (::socketpair(AF_UNIX, SOCK_STREAM, 0, pair) != 0) return 1;
        SSL* server = ::SSL_new(server_ctx.native_handle());
        ::SSL_set_fd(server, pair[0]);
        SSL* client = nullptr;
        bool client_ok = false;
        std::thread peer([&] {
            server_thread = false;
            client = ::SSL_new(client_ctx.native_handle());
            ::SSL_set_fd(client, pair[1]);
            client_ok = ::SSL_connect(client) == 1 && ::SSL_write(client, "x", 1) == 1;
        });
        const bool server_ok = ::SSL_accept(server) == 1;
        peer.join();
        ok = server_ok && client_ok;
        char byte;
        ok = ok && ::SSL_read(server, &byte, 1) == 1; // past the handshake and its tickets
        servers.push_back(server);
        clients.push_back(client);
        fds.insert(fds.end(), {pair[0], pair[1]});
    }
    counting = false;
    if (!ok) {
        std::fprintf(stderr, "openssl_parts: a handshake failed\n");
        ::ERR_print_errors_fp(stderr);
        return 1;
    }
    std::map<std::string, std::pair<std::size_t, std::size_t>> by_file; // bytes, blocks
    std::size_t total = 0;
    for (const auto& [p, b] : *blocks) {
        std::string file = b.file != nullptr ? b.file : "?";
        if (const auto slash = file.rfind('/'); slash != std::string::npos) file = file.substr(slash + 1);
        by_file[file].first += b.size;
        by_file[file].second += 1;
        total += b.size;
    }
    std::vector<std::pair<std::size_t, std::string>> rows;
    for (const auto& [file, sb] : by_file) rows.emplace_back(sb.first, file);
    std::sort(rows.rbegin(), rows.rend());
    if (::SSL_version(servers.front()) != TLS1_3_VERSION) return 1;
    std::printf("What OpenSSL %s keeps per server connection after a TLS 1.3 handshake (%s, %s, a P-256 "
                "certificate, record buffers released), by the source file that allocated it: live bytes over %zu "
                "connections, per connection.\n\n",
                OpenSSL_version(OPENSSL_VERSION_STRING), ::SSL_get_cipher_name(servers.front()),
                ::OBJ_nid2sn(::SSL_get_negotiated_group(servers.front())), n);
    std::printf("| allocated in | what | bytes per connection | blocks per connection |\n|---|---|---:|---:|\n");
    std::string json;
    for (const auto& [bytes, file] : rows) {
        const double per = static_cast<double>(bytes) / static_cast<double>(n);
        if (per < 8) continue;
        std::printf("| `%s` | %s | %.0f | %.1f |\n", file.c_str(), what(file).c_str(), per,
                    static_cast<double>(by_file[file].second) / static_cast<double>(n));
        json += (json.empty() ? "" : ",") + std::string("\"") + file + "\":" + std::to_string(bytes / n);
    }
    std::printf("| **total** | | **%.0f** | |\n\n", static_cast<double>(total) / static_cast<double>(n));
    std::printf("{\"connections\":%zu,\"total\":%zu,\"by_file\":{%s}}\n", n, total / n, json.c_str());
    for (SSL* s : servers) ::SSL_free(s);
    for (SSL* c : clients) ::SSL_free(c);
    for (int fd : fds) ::close(fd);
    return total > 0 ? 0 : 1;
}
