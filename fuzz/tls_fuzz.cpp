// tls_fuzz.cpp — the TLS path fed arbitrary bytes: a net::connection over a net::tls_socket (server
// side) reads what a peer sends on the other end of a socket pair — the input, then end of stream —
// through the handshake and, if one ever completes, liveness_stream's async_receive. Whatever the
// bytes, the connection must end (handshake failure, a TLS error, truncation, end of stream), be
// counted closed exactly once, and leave nothing behind (ASan/LSan); no crash, no hang.
#include <heartwheel/asio_wheel.hpp>
#include <heartwheel/net/connection/connection.hpp>
#include <heartwheel/net/tls/tls_socket.hpp>

#include "self_signed.hpp"

#include <asio/io_context.hpp>
#include <asio/ssl/context.hpp>

#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstdio>

namespace net = heartwheel::net;
using tls_connection = net::connection<net::tls_socket>;

namespace {

asio::ssl::context& server_context() {
    static asio::ssl::context ctx = [] {
        asio::ssl::context c(asio::ssl::context::tls_server);
        static heartwheel::test::self_signed cert;
        cert.use(c);
        return c;
    }();
    return ctx;
}

void receive_all(const std::shared_ptr<tls_connection>& c) {
    c->stream().async_receive([c](std::error_code ec, net::read_chunk) {
        if (ec) return c->abort(net::close_reason::io_error);
        receive_all(c);
    });
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) return 0;
    // The peer's bytes, then its end of stream (a socket pair buffers far more than -max_len).
    for (std::size_t off = 0; off < size;) {
        const auto n = ::write(fds[1], data + off, size - off);
        if (n <= 0) break;
        off += static_cast<std::size_t>(n);
    }
    ::shutdown(fds[1], SHUT_WR);
    {
        asio::io_context io;
        heartwheel::asio_wheel wheel(io.get_executor());
        net::liveness_counters counters;
        asio::ip::tcp::socket s(io);
        s.assign(asio::ip::tcp::v4(), fds[0]); // a stream socket: OpenSSL and Asio only need the descriptor
        auto c = std::make_shared<tls_connection>(net::tls_socket(std::move(s), server_context()),
                                                  net::connection_context(wheel, {}, &counters));
        c->async_handshake(asio::ssl::stream_base::server, [c](std::error_code ec) {
            if (!ec) receive_all(c);
        });
        io.run_for(std::chrono::seconds(5));
        if (!c->closed()) { // the peer's end of stream must end it, one way or another
            std::fprintf(stderr, "tls_fuzz: the connection is still open after its peer's end of stream\n");
            std::abort();
        }
        if (counters.snapshot().closes_total() != 1) {
            std::fprintf(stderr, "tls_fuzz: closed %llu times\n",
                         static_cast<unsigned long long>(counters.snapshot().closes_total()));
            std::abort();
        }
        c.reset();
    }
    ::close(fds[1]);
    return 0;
}
