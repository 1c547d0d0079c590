// footprint.cpp — what one idle TCP connection of the echo server holds in user space, by part,
// measured in one process with the server's own session type (examples/echo/session.hpp, over the
// thread-per-core server's sockets: echo::core_socket), on real
// sockets over 127.0.0.1: the heap in use (glibc mallinfo2, chunk headers included) is read before
// and after each stage over N connections and divided by N.
//   1. accepted sockets: the kernel descriptor and Asio's per-descriptor reactor state;
//   2. sessions started: the net::connection (its socket, empty write queue and stream core), its
//      liveness, the session (its line framer) in the same heap block (net::make_connection_with),
//      and the pending receive (which holds no buffer; Asio's wait operation in the memory the
//      stream core keeps for it). The first half of the connections is
//      started with the three policies off, the second half with them on: the first half's figure is
//      the connection's own (its liveness inline: the node of the idle kinds and the max age), the
//      difference between the halves the policies' heap (the heartbeat: reader idle and max age are
//      data in the liveness); the wheel's slot storage is counted apart: the chunks it touched
//      (timing_wheel::storage_touched_bytes; the rest of its reservation, storage_bytes, is address
//      space never written, reported beside the totals);
//   3. TLS: M connections (at most 2,000) over net::tls_socket, made by a child process (so that the
//      clients' OpenSSL state is not in this heap) and measured once every handshake is done and each
//      connection waits for bytes; what they hold beyond a TCP connection's parts is OpenSSL's state;
//   4. last, the same as 1-2 over sockets with any_io_executor (those under net::tls_socket) and over
//      the thread-pool model's strand sockets, each in one go: what naming the executor type saves;
// and, from the kernel, the slab memory per socket (/proc/meminfo Slab, both ends of each connection
// are in this process, so the figure is halved; it includes the peers' sockets) and /proc/net/sockstat's TCP buffer pages.
// Prints a Markdown table and a JSON line. Usage: footprint [connections] (default 5000, at least 2).
#include "echo/session.hpp"
#include "echo/worker.hpp"

#include <heartwheel/net/tls/ssl_stream.hpp>
#include "self_signed.hpp" // test/support: a throwaway certificate made in memory

#include <asio/ip/tcp.hpp>

#include <arpa/inet.h>
#include <malloc.h>
#include <poll.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace {

using tcp = asio::ip::tcp;
// The server's own plain TCP session: a thread per core, sockets typed with the io_context's executor.
using session_type = echo::session<echo::core_socket, heartwheel::net::connection_liveness>;

std::size_t heap_in_use() {
    const struct mallinfo2 m = ::mallinfo2();
    return m.uordblks + m.hblkhd;
}

long meminfo_kib(const std::string& key) {
    std::ifstream f("/proc/meminfo");
    std::string k;
    long v = 0;
    std::string unit;
    while (f >> k >> v >> unit)
        if (k == key + ":") return v;
    return 0;
}

long sockstat_tcp_mem_pages() {
    std::ifstream f("/proc/net/sockstat");
    std::string line;
    while (std::getline(f, line)) {
        if (line.rfind("TCP:", 0) != 0) continue;
        std::istringstream is(line);
        std::string word;
        while (is >> word)
            if (word == "mem") {
                long pages = 0;
                is >> pages;
                return pages;
            }
    }
    return 0;
}

sockaddr_in loopback(std::uint16_t port) {
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(port);
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return to;
}

// Connects m peers to `port` with plain system calls (the peers cost the heap nothing; their
// descriptors go to `clients`), accepting them with accept_one() in batches the listen backlog
// holds: only the accepts touch the heap. False when a connect failed.
template <class AcceptOne>
bool connect_peers(std::uint16_t port, std::size_t m, std::vector<int>& clients, AcceptOne&& accept_one) {
    const sockaddr_in to = loopback(port);
    std::size_t accepted = 0;
    for (std::size_t i = 0; i < m; ++i) {
        const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0) return false;
        clients.push_back(fd);
        if (::connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof to) != 0) return false;
        if (clients.size() % 1000 == 0 || i + 1 == m)
            for (; accepted < i + 1; ++accepted) accept_one();
    }
    return true;
}

// The child's side: m blocking TLS clients (no verification), then a byte on `done`, then it holds
// them until a byte comes on `quit`.
[[noreturn]] void tls_clients(std::uint16_t port, std::size_t m, int done, int quit) {
    SSL_CTX* ctx = ::SSL_CTX_new(::TLS_client_method());
    const sockaddr_in to = loopback(port);
    for (std::size_t i = 0; i < m; ++i) {
        const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        SSL* ssl = ctx == nullptr ? nullptr : ::SSL_new(ctx);
        if (fd < 0 || ssl == nullptr || ::connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof to) != 0 ||
            ::SSL_set_fd(ssl, fd) != 1 || ::SSL_connect(ssl) != 1)
            ::_exit(1);
    }
    char c = 1;
    if (::write(done, &c, 1) != 1) ::_exit(1);
    const ssize_t got = ::read(quit, &c, 1);
    ::_exit(got == 1 ? 0 : 1);
}

// Heap bytes per idle TLS connection of the server (every part) over `Stream`, over m connections; 0
// on failure.
// `lean`: the context lets a tls_socket drop OpenSSL's state after the handshake (enable_lean_records).
template <class Stream>
double tls_heap_per_connection(echo::worker& w, const heartwheel::net::liveness_config& cfg, std::size_t m,
                               bool lean = false) {
    asio::ssl::context ctx(asio::ssl::context::tls_server);
    heartwheel::test::self_signed().use(ctx);
    if (lean && !heartwheel::net::enable_lean_records(ctx)) return 0;
    tcp::acceptor acceptor(w.ex, {asio::ip::make_address("127.0.0.1"), 0});
    acceptor.listen(4096);
    int done[2], quit[2];
    if (::pipe(done) != 0 || ::pipe(quit) != 0) return 0;
    using tls_session = echo::session<Stream, heartwheel::net::connection_liveness>;
    std::vector<std::shared_ptr<tls_session>> sessions;
    sessions.reserve(m);
    const heartwheel::net::connection_context timing(w.wheel, cfg, &w.live_counters, &w.scale);
    std::function<void()> accept = [&] {
        acceptor.async_accept([&](std::error_code ec, tcp::socket socket) {
            if (ec) return;
            sessions.push_back(tls_session::start(w, Stream(std::move(socket), ctx), asio::ip::address(), timing));
            accept();
        });
    };
    accept();
    const std::size_t h0 = heap_in_use();
    const pid_t child = ::fork();
    if (child == 0) tls_clients(acceptor.local_endpoint().port(), m, done[1], quit[0]);
    ::close(done[1]); // the child's ends: a child that dies is a hang-up here, not a wait for nothing
    ::close(quit[0]);
    pollfd reported{done[0], POLLIN, 0};
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (child > 0 && ::poll(&reported, 1, 0) == 0 && std::chrono::steady_clock::now() < give_up) {
        w.ioc.restart();
        w.ioc.run_for(std::chrono::milliseconds(10));
    }
    char c = 0;
    const bool all_connected = child > 0 && reported.revents != 0 && ::read(done[0], &c, 1) == 1;
    w.ioc.restart();
    w.ioc.run_for(std::chrono::milliseconds(200)); // the server's side of the last handshakes
    acceptor.close();
    w.ioc.poll();
    const std::size_t h1 = heap_in_use();
    const bool ok = all_connected && sessions.size() == m;
    for (auto& s : sessions) s->abort();
    w.ioc.poll();
    const bool told = ::write(quit[1], &c, 1) == 1; // or the child is gone already
    int status = 0;
    if (child > 0) ::waitpid(child, &status, 0);
    for (int fd : {done[0], quit[1]}) ::close(fd);
    if (!told) return 0;
    if (!ok || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return 0;
    return static_cast<double>(h1 - h0) / static_cast<double>(m);
}

// Heap bytes per idle TCP connection (session, connection, timers: not the descriptor's state, which
// Asio reuses from the first stage here, nor the slot storage) of the same session over sockets
// whose executor is `ex`'s type: asio::any_io_executor (56 bytes, held by the socket and copied into
// the pending receive twice; the sockets under net::tls_socket) or the thread-pool model's
// strand (24: echo::strand_socket), against the io_context's own executor (8) of the main stages.
// The sessions start on `ex`, as the server starts them. 0 on failure.
template <class Socket, class Executor>
double typed_per_connection(echo::worker& w, const heartwheel::net::liveness_config& cfg, std::size_t m,
                            const Executor& ex) {
    using typed_session = echo::session<Socket, heartwheel::net::connection_liveness>;
    tcp::acceptor acceptor(w.ex, {asio::ip::make_address("127.0.0.1"), 0});
    acceptor.listen(4096);
    std::vector<int> clients;
    std::vector<Socket> accepted;
    std::vector<std::shared_ptr<typed_session>> sessions;
    clients.reserve(m);
    accepted.reserve(m);
    sessions.reserve(m);
    const heartwheel::net::connection_context timing(w.wheel, cfg, &w.live_counters, &w.scale);
    const bool ok = connect_peers(acceptor.local_endpoint().port(), m, clients,
                                  [&] { accepted.push_back(acceptor.accept(ex)); });
    const std::size_t h0 = heap_in_use(), s0 = w.wheel.wheel().storage_bytes();
    w.ioc.restart(); // an earlier stage may have run it out of work
    asio::post(ex, [&] {
        for (auto& socket : accepted) sessions.push_back(typed_session::start(w, std::move(socket), asio::ip::address(), timing));
    });
    w.ioc.poll();
    const std::size_t h1 = heap_in_use(), s1 = w.wheel.wheel().storage_bytes();
    asio::post(ex, [&] {
        for (auto& s : sessions) s->abort();
    });
    w.ioc.poll();
    for (int fd : clients) ::close(fd);
    if (!ok || sessions.size() != m) return 0;
    return (static_cast<double>(h1 - h0) - static_cast<double>(s1 - s0)) / static_cast<double>(m);
}

} // namespace

int main(int argc, char** argv) {
    const std::size_t n = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 5000;
    if (n < 2) {
        std::fprintf(stderr, "usage: footprint [connections >= 2] (two halves: policies off, then on)\n");
        return 2;
    }
    ::mallopt(M_ARENA_MAX, 1); // one arena: every allocation of this single thread is counted alike

    echo::server_options options;
    options.live.idle.reader_idle = std::chrono::minutes(10);
    options.live.heartbeat.interval = std::chrono::seconds(30);
    options.live.heartbeat.timeout = std::chrono::seconds(10);
    options.live.limits.max_age = std::chrono::hours(1);
    heartwheel::net::liveness_counters live_counters;
    echo::server_counters counters;
    echo::worker_set workers(options, live_counters, counters);
    echo::worker& w = *workers[0];
    tcp::acceptor acceptor(w.ex, {asio::ip::make_address("127.0.0.1"), 0});
    acceptor.listen(4096);

    std::vector<int> clients; // plain descriptors: the peers cost the heap nothing
    std::vector<echo::core_socket> accepted;
    clients.reserve(n);
    accepted.reserve(n);
    std::vector<std::shared_ptr<session_type>> sessions;
    sessions.reserve(n);

    const long slab0 = meminfo_kib("Slab");
    const std::size_t h0 = heap_in_use();
    if (!connect_peers(acceptor.local_endpoint().port(), n, clients,
                       [&] { accepted.push_back(acceptor.accept(w.ioc.get_executor())); })) {
        std::perror("connect");
        return 1;
    }
    const std::size_t h1 = heap_in_use();
    const long slab1 = meminfo_kib("Slab");
    // Started in two halves: the first with the three policies off, the second with them on.
    heartwheel::net::liveness_config bare = options.live;
    bare.idle.reader_idle = {};
    bare.heartbeat.interval = {};
    bare.limits.max_age = {};
    const std::size_t half = n / 2;
    const auto start = [&](std::size_t from, std::size_t to, const heartwheel::net::liveness_config& cfg) {
        const heartwheel::net::connection_context timing(w.wheel, cfg, &w.live_counters, &w.scale);
        for (std::size_t i = from; i < to; ++i) sessions.push_back(session_type::start(w, std::move(accepted[i]), asio::ip::address(), timing));
        w.ioc.poll(); // the receives are pending, nothing to read
        return heap_in_use() - w.wheel.wheel().storage_bytes(); // the slot storage is counted apart
    };
    const std::size_t s0 = w.wheel.wheel().storage_bytes(), t0 = w.wheel.wheel().storage_touched_bytes();
    const std::size_t h3 = start(0, half, bare);
    const std::size_t h4 = start(half, n, options.live);
    const std::size_t s1 = w.wheel.wheel().storage_bytes(), t1 = w.wheel.wheel().storage_touched_bytes();
    const long tcp_pages = sockstat_tcp_mem_pages();

    const double per = static_cast<double>(n);
    const double descriptor = static_cast<double>(h1 - h0) / per;
    const double connection = static_cast<double>(h3 + s0 - h1) / static_cast<double>(half);
    const double timers = static_cast<double>(h4 - h3) / static_cast<double>(n - half) - connection;
    // The slot storage's reservation is address space until used: what its chunks touched counts
    // (the process's memory), the rest is reported apart.
    const double slots = static_cast<double>(t1 - t0) / static_cast<double>(n - half);
    const double slots_reserved = (static_cast<double>(s1 - t1) - static_cast<double>(s0 - t0)) / static_cast<double>(n - half);
    const double total = descriptor + connection + timers + slots;
    const double kernel = static_cast<double>(slab1 - slab0) * 1024.0 / per / 2.0;
    const std::uint64_t idle_read_buffers = counters.read_buffers.load(), idle_read_bytes = counters.read_buffer_bytes.load();
    for (auto& s : sessions) s->abort();
    w.ioc.poll();
    for (int fd : clients) ::close(fd);
    sessions.clear();

    const std::size_t m = n < 4000 ? n / 2 : 2000;
    // Asio keeps the reactor state of a closed descriptor for the next one (its object_pool): the
    // later stages reuse the first stage's, so their figures add the first stage's descriptor part.
    const double tls_total = tls_heap_per_connection<heartwheel::net::tls_socket>(w, options.live, m) + descriptor;
    const double lean_tls_total =
        tls_heap_per_connection<heartwheel::net::tls_socket>(w, options.live, m, true) + descriptor;

    const double asio_tls_total =
        tls_heap_per_connection<asio::ssl::stream<tcp::socket>>(w, options.live, m) + descriptor;
    // Last: a run before the TLS ones would leave them a heap shaped differently.
    const double any_parts = typed_per_connection<tcp::socket>(w, options.live, n / 2, w.ex);
    const double any_total = descriptor + any_parts + slots;
    const double strand_parts =
        typed_per_connection<echo::strand_socket>(w, options.live, n / 2, asio::make_strand(w.ioc));
    const double strand_total = descriptor + strand_parts + slots;
    // A tls_socket is over an any_io_executor socket: OpenSSL's part is what it adds to that one.
    const double tls_state = tls_total - (descriptor + any_parts);
    std::printf("| part | bytes per idle connection |\n|---|---:|\n");
    std::printf("| Asio's reactor state for the descriptor | %.0f |\n", descriptor);
    std::printf("| connection (socket, empty write queue, stream core, liveness with no policy) and its session "
                "(line framer; no read buffer) in one heap block, and the stream core with Asio's pending receive in it | %.0f |\n", connection);
    std::printf("| liveness policies' heap: the heartbeat (reader idle and max age are the liveness's own timer node) | %.0f |\n", timers);
    std::printf("| the wheel's slot storage for them: the chunks it touched (one pooled array: its fixed part weighs less the more connections) | %.0f |\n", slots);
    std::printf("| read buffer bytes held (an idle write queue holds none: footprint_test) | %llu |\n",
                static_cast<unsigned long long>(idle_read_bytes));
    std::printf("| **server user space, total** | **%.0f** |\n", total);
    std::printf("| the same over sockets with the thread-pool model's strand (echo::strand_socket) instead of the "
                "io_context's own executor, total | %.0f |\n", strand_total);
    std::printf("| the same over sockets with any_io_executor (asio::ip::tcp::socket: under TLS), total | %.0f |\n",
                any_total);
    std::printf("| TLS (a net::tls_socket, over %zu connections): OpenSSL's state after the handshake, on top of "
                "a TCP connection over any_io_executor | %.0f |\n", m, tls_state);
    std::printf("| **server user space per idle TLS connection, total** | **%.0f** |\n", tls_total);
    std::printf("| **the same with lean records (TLS 1.3: OpenSSL's state dropped after the handshake, "
                "net::enable_lean_records; the servers' default), total** | **%.0f** |\n", lean_tls_total);
    std::printf("| the same over asio::ssl::stream (its record buffers and BIO pair), for comparison | %.0f |\n",
                asio_tls_total);
    std::printf("| the slot storage's reservation beyond what it touched (address space for the worst case, never written: not in the totals) | %.0f |\n", slots_reserved);
    std::printf("| kernel slab per socket (approximate; /proc/meminfo) | %.0f |\n", kernel);
    std::printf("| read buffers held (heartwheel_read_buffers) | %llu |\n",
                static_cast<unsigned long long>(idle_read_buffers));
    std::printf("\nstatic sizes: session %zu, connection %zu, connection_liveness %zu, tcp::socket %zu; "
                "TCP buffer pages in use (sockstat): %ld\n",
                sizeof(session_type), sizeof(session_type::connection_type), sizeof(heartwheel::net::connection_liveness),
                sizeof(tcp::socket), tcp_pages);
    std::printf("{\"connections\":%zu,\"descriptor\":%.0f,\"connection\":%.0f,\"timers\":%.0f,\"slots\":%.0f,\"slots_reserved\":%.0f,"
                "\"total\":%.0f,\"strand_total\":%.0f,\"any_executor_total\":%.0f,\"tls_state\":%.0f,\"tls_total\":%.0f,\"lean_tls_total\":%.0f,\"asio_tls_total\":%.0f,\"kernel_slab\":%.0f,\"read_buffers\":%llu}\n",
                n, descriptor, connection, timers, slots, slots_reserved, total, strand_total, any_total, tls_state, tls_total, lean_tls_total, asio_tls_total, kernel,
                static_cast<unsigned long long>(idle_read_buffers));
    return idle_read_buffers == 0 && counters.read_buffers.load() == 0 && tls_total > descriptor && lean_tls_total > descriptor && asio_tls_total > descriptor && any_parts > 0 && strand_parts > 0 ? 0 : 1;
}
