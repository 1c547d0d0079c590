// receive_test.cpp — liveness_stream::async_receive over real sockets on 127.0.0.1, TCP and TLS: a
// receive that waits holds no read chunk (read_chunk::outstanding() stays 0), the bytes arrive whole
// and in order however they are split (more than a chunk at once included), reads are recorded as
// activity, a full chunk reads again on a later turn (never inside the caller's call), end of stream
// and a policy close complete the receive with their errors; the receive keeps its handler's strand
// and cancellation slot (a coroutine races it against a wheel wait); a handler without an allocator
// of its own has the receive's operation placed in the stream's core (no heap block), and an
// io_context destroyed with it pending frees it there. Bounded in time. Built for both Asio
// flavours (receive_test_boost: the wait operation is 8 bytes larger there, and still fits).
#define BOOST_TEST_MODULE receive
#include <boost/mpl/list.hpp>
#include <boost/test/unit_test.hpp>

#include <heartwheel/asio_wheel.hpp>
#include <heartwheel/net/connection/connection.hpp>
#include <heartwheel/net/tls/ssl_stream.hpp>
#include <heartwheel/net/tls/tls_socket.hpp>

#include "self_signed.hpp"

#include "test_asio.hpp"


#include <malloc.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

using namespace std::chrono_literals;
namespace net = heartwheel::net;
using tcp = asio::ip::tcp;
using tls = asio::ssl::stream<tcp::socket>;

namespace {

using heartwheel::test::use_self_signed;

// Boost.Asio 1.81's reactor operations are 8 bytes larger than standalone Asio 1.22's.
constexpr std::size_t boost_extra = heartwheel::uses_boost_asio ? 8 : 0;

struct fixture {
    asio::io_context io;
    heartwheel::asio_wheel wheel{io.get_executor()};
    net::liveness_counters counters;
    tcp::acceptor acceptor{io, {asio::ip::make_address("127.0.0.1"), 0}};
    tcp::socket peer{io};
    asio::ssl::context server_ctx{asio::ssl::context::tls_server}, client_ctx{asio::ssl::context::tls_client};

    tcp::socket accept_one() {
        peer.connect(acceptor.local_endpoint());
        return acceptor.accept();
    }
    template <class Stream>
    std::shared_ptr<net::connection<Stream>> make(Stream s, const net::liveness_config& cfg = {}) {
        return std::make_shared<net::connection<Stream>>(std::move(s), net::connection_context(wheel, cfg, &counters));
    }
    void run_for(std::chrono::milliseconds d) {
        io.restart();
        io.run_for(d);
    }
    void run_until(const std::function<bool()>& done, std::chrono::milliseconds limit = 5000ms) {
        const auto end = std::chrono::steady_clock::now() + limit;
        while (!done() && std::chrono::steady_clock::now() < end) run_for(2ms);
        BOOST_TEST_REQUIRE(done(), "not done within the time limit");
    }

    /// Receives in a loop into `got` until an error, which it stores in `last`.
    template <class Conn>
    struct reader {
        explicit reader(std::shared_ptr<Conn> conn) : c(std::move(conn)) {}
        std::shared_ptr<Conn> c;
        std::string got;
        error_code last;
        bool done = false, waiting = false;
        bool starting = false, completed_inside_start = false; ///< a handler ran inside async_receive's call
        std::size_t receives = 0;
        void start() {
            waiting = true;
            starting = true;
            c->stream().async_receive([this](error_code ec, net::read_chunk chunk) {
                completed_inside_start = completed_inside_start || starting;
                waiting = false;
                if (ec) {
                    BOOST_TEST(chunk.empty());
                    last = ec;
                    done = true;
                    return;
                }
                BOOST_TEST(!chunk.empty());
                BOOST_TEST(net::read_chunk::outstanding() >= 1u);
                ++receives;
                got.append(chunk.bytes());
                start();
            });
            starting = false;
        }
    };
};

} // namespace

BOOST_FIXTURE_TEST_CASE(tcp_receive_waits_without_a_chunk_and_brings_every_byte, fixture) {
    fixture::reader<net::connection<tcp::socket>> r(make(accept_one()));
    r.start();
    run_for(20ms);
    BOOST_TEST(r.waiting);
    BOOST_TEST(net::read_chunk::outstanding() == 0u); // waiting holds nothing
    asio::write(peer, asio::buffer(std::string("hello\n")));
    run_until([&] { return r.got.size() == 6; });
    BOOST_TEST(r.got == "hello\n");
    // More than a chunk at once: everything arrives, in order, in more than one receive.
    std::string big(5 * net::read_chunk::capacity + 123, '\0');
    for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>('a' + i % 26);
    asio::write(peer, asio::buffer(big));
    run_until([&] { return r.got.size() == 6 + big.size(); });
    BOOST_TEST((r.got.substr(6) == big));
    BOOST_TEST(r.receives >= 6u);
    // A full chunk reads again on a later turn, never inside the caller's own async_receive call
    // (a flooding peer would otherwise keep the thread, and the stack would grow with each chunk).
    BOOST_TEST(!r.completed_inside_start);
    run_for(10ms);
    BOOST_TEST(r.waiting);
    BOOST_TEST(net::read_chunk::outstanding() == 0u);
    peer.shutdown(tcp::socket::shutdown_send);
    run_until([&] { return r.done; });
    BOOST_TEST((r.last == asio::error::eof));
}

// Receives are recorded: a peer that trickles a byte every 20 ms outlives a 100 ms reader idle; once
// it stops, the policy closes the connection and the pending receive completes with timed_out.
namespace {
// Sees the size of what Asio allocates for an operation: it takes the handler's allocator for it.
template <class T>
struct recording_allocator {
    using value_type = T;
    std::size_t* largest;
    explicit recording_allocator(std::size_t* l) noexcept : largest(l) {}
    template <class U>
    recording_allocator(const recording_allocator<U>& o) noexcept : largest(o.largest) {}
    T* allocate(std::size_t n) {
        *largest = std::max(*largest, n * sizeof(T));
        return std::allocator<T>().allocate(n);
    }
    void deallocate(T* p, std::size_t n) noexcept { std::allocator<T>().deallocate(p, n); }
    template <class U>
    bool operator==(const recording_allocator<U>& o) const noexcept { return largest == o.largest; }
    template <class U>
    bool operator!=(const recording_allocator<U>& o) const noexcept { return largest != o.largest; }
};
} // namespace

// A pending receive is what every idle connection holds besides its objects. Over a socket it
// carries no read chunk (the read happens, without blocking, once the socket is readable): Asio's
// wait operation around the stream's core handle, the socket and its step, and the handler.
BOOST_FIXTURE_TEST_CASE(a_pending_tcp_receive_carries_no_chunk, fixture) {
    auto c = make(accept_one());
    std::size_t largest = 0;
    std::string got;
    c->stream().async_receive(asio::bind_allocator(recording_allocator<void>(&largest),
                                                   [&](error_code ec, net::read_chunk chunk) {
                                                       BOOST_TEST(!ec);
                                                       got = std::string(chunk.bytes());
                                                   }));
    BOOST_TEST_MESSAGE("pending receive operation: " << largest << " bytes");
    BOOST_TEST(largest > 0u);
    BOOST_TEST(largest <= 200u + boost_extra); // over tcp::socket (any_io_executor); 272 inside async_compose, 288
                                 // while it kept its step and the next layer, 304 with a read_chunk
    asio::write(peer, asio::buffer("x", 1));
    run_until([&] { return !got.empty(); });
    BOOST_TEST(got == "x");
}

// Over a socket typed with its io_context's own executor (echo_server's thread per core), the pending
// receive is what an idle connection holds besides its objects: the receive is its own handler — the
// stream's core (one pointer: it keeps the step and the next layer) and the application's handler —
// so Asio's wait operation is 96 bytes with a handler holding a shared_ptr; its recycling allocator
// adds a byte and rounds to 16, and malloc its 8: a heap block of 128 (120 bytes, a block of 144,
// inside async_compose, whose work guard and call count it carried; 136, a block of 160, while the
// receive kept its step and the next layer). The recording allocator's pointer adds 8 here.
BOOST_FIXTURE_TEST_CASE(a_pending_receive_on_a_core_socket_fits_a_block_of_128, fixture) {
    using core_socket = asio::basic_stream_socket<tcp, asio::io_context::executor_type>;
    peer.connect(acceptor.local_endpoint());
    core_socket s(io);
    acceptor.accept(s);
    auto c = make(std::move(s));
    std::size_t largest = 0;
    auto owner = std::make_shared<std::string>(); // the handler holds a shared_ptr, as a session's does
    c->stream().async_receive(asio::bind_allocator(recording_allocator<void>(&largest),
                                                   [owner](error_code ec, net::read_chunk chunk) {
                                                       BOOST_TEST(!ec);
                                                       *owner = std::string(chunk.bytes());
                                                   }));
    BOOST_TEST_MESSAGE("pending receive operation on a core socket: " << largest << " bytes");
    BOOST_TEST(largest > 0u);
    BOOST_TEST(largest - sizeof(std::size_t*) <= 96u + boost_extra); // 96 + 1, rounded to 16, and malloc's 8: 128
    asio::write(peer, asio::buffer("y", 1));
    run_until([&] { return !owner->empty(); });
    BOOST_TEST(*owner == "y");
}

// A handler without an allocator of its own (as most are): the receive's operations are placed in
// memory the stream's core keeps for them, so a pending receive takes no heap block of its own — the
// wait, and on a socket typed with its io_context's executor also the posted turn of a closed stream
// (a strand takes its own invoker from the handler's allocator while the core holds the queued
// turn, and any_io_executor takes its function from Asio's cache: the heap, for a moment, as
// before). On each socket type a server uses; a second receive
// reuses the memory (the first freed it), and a handler too big for it still receives (its operation
// on the heap, as before: which also shows that the heap is really measured). Started outside run(),
// where Asio's thread cache does not hide a malloc, and with malloc's own per-thread cache emptied
// for small blocks (mallinfo counts a block in that cache as in use): a block taken shows.
namespace {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool heap_is_measured = false; // the sanitizers' allocators report no arena
#else
constexpr bool heap_is_measured = true;
#endif

std::size_t heap_in_use() { return ::mallinfo2().uordblks; }

// Holds enough blocks of every small size that malloc's per-thread cache is empty meanwhile.
struct small_blocks_taken {
    std::vector<void*> held;
    small_blocks_taken() {
        held.reserve(65 * 16);
        for (std::size_t size = 8; size <= 1032; size += 16)
            for (int i = 0; i < 16; ++i) held.push_back(std::malloc(size));
    }
    ~small_blocks_taken() {
        for (void* p : held) std::free(p);
    }
};

// Heap blocks taken by f (bytes in use after minus before).
template <class F>
long heap_taken_by(F&& f) {
    small_blocks_taken cache_emptied;
    const std::size_t before = heap_in_use();
    f();
    return static_cast<long>(heap_in_use()) - static_cast<long>(before);
}

template <class Socket, class Executor>
void a_receive_takes_no_heap_block(fixture& f, const Executor& ex, bool posted_in_core) {
    using conn = net::connection<Socket>;
    tcp::socket peer(f.io);
    peer.connect(f.acceptor.local_endpoint());
    Socket s(ex);
    f.acceptor.accept(s);
    std::shared_ptr<conn> c;
    asio::post(ex, [&] { c = f.make(std::move(s)); }); // inside its strand, for the strand's socket
    f.run_until([&] { return c != nullptr; });
    auto owner = std::make_shared<std::string>(); // the handler holds a shared_ptr, as a session's does
    for (const char* byte : {"a", "b"}) {
        const long taken = heap_taken_by([&] {
            c->stream().async_receive([owner](error_code ec, net::read_chunk chunk) {
                BOOST_TEST(!ec);
                owner->append(chunk.bytes());
            });
        });
        if (heap_is_measured) BOOST_TEST(taken == 0); // the wait is in the core
        asio::write(peer, asio::buffer(byte, 1));
        const std::size_t want = owner->size() + 1;
        f.run_until([&] { return owner->size() == want; });
    }
    BOOST_TEST(*owner == "ab");
    std::array<char, 64> big{}; // a handler the memory was not sized for
    const long big_taken = heap_taken_by([&] {
        c->stream().async_receive([owner, big](error_code ec, net::read_chunk chunk) {
            BOOST_TEST(!ec);
            owner->append(chunk.bytes());
            owner->push_back(big[0]);
        });
    });
    if (heap_is_measured) BOOST_TEST(big_taken > 0);
    asio::write(peer, asio::buffer("c", 1));
    f.run_until([&] { return owner->size() == 4; });
    // A closed stream's receive completes on a later turn (the posted operation: see above).
    asio::post(ex, [&] { c->abort(net::close_reason::shutdown); });
    f.run_for(5ms);
    error_code last;
    const long closed_taken = heap_taken_by([&] {
        c->stream().async_receive([owner, &last](error_code ec, net::read_chunk) { last = ec; });
    });
    if (heap_is_measured && posted_in_core) BOOST_TEST(closed_taken == 0);
    f.run_until([&] { return last.operator bool(); });
    BOOST_TEST((last == net::errc::connection_closed));
}
} // namespace

BOOST_FIXTURE_TEST_CASE(a_receive_without_an_allocator_of_its_own_takes_no_heap_block, fixture) {
    a_receive_takes_no_heap_block<asio::basic_stream_socket<tcp, asio::io_context::executor_type>>(*this, io.get_executor(), true);
    a_receive_takes_no_heap_block<asio::basic_stream_socket<tcp, asio::strand<asio::io_context::executor_type>>>(
        *this, asio::make_strand(io.get_executor()), false);
    a_receive_takes_no_heap_block<tcp::socket>(*this, io.get_executor(), false);
}

// An io_context destroyed with a receive pending in the core, the handler owning the connection (a
// session's shape): Asio frees the operation's memory before the handler's last copy goes, so the
// core is still there (ASan sees a use after free otherwise).
BOOST_AUTO_TEST_CASE(an_io_context_destroyed_with_a_receive_pending_frees_it_in_its_core) {
    std::weak_ptr<net::connection<tcp::socket>> watch;
    {
        asio::io_context io;
        auto wheel = std::make_unique<heartwheel::asio_wheel>(io.get_executor());
        net::liveness_counters counters;
        tcp::acceptor acceptor{io, {asio::ip::make_address("127.0.0.1"), 0}};
        tcp::socket peer{io};
        peer.connect(acceptor.local_endpoint());
        auto c = std::make_shared<net::connection<tcp::socket>>(acceptor.accept(),
                                                                net::connection_context(*wheel, {}, &counters));
        watch = c;
        c->stream().async_receive([c](error_code, net::read_chunk) {});
        c.reset();
        io.run_for(5ms);
        BOOST_TEST_REQUIRE(!watch.expired()); // only the pending receive holds it
        io.stop();
        wheel.reset(); // the wheel goes first, then the io_context with the pending receive
    }
    BOOST_TEST(watch.expired());
}

// The receive is its own operation, not an async_compose: Asio's associators reach the application's
// handler through it. Its executor: a handler bound to a strand runs inside the strand. Its
// cancellation slot: a cancellation ends the wait with operation_aborted, the connection stays open
// and receives again. And a stream already closed completes on a later turn with the close's error,
// never inside the async_receive call.
BOOST_FIXTURE_TEST_CASE(a_receive_keeps_its_handlers_executor_and_cancellation_slot, fixture) {
    auto c = make(accept_one());
    auto strand = asio::make_strand(io);
    bool in_strand = false;
    std::string got;
    c->stream().async_receive(asio::bind_executor(strand, [&](error_code ec, net::read_chunk chunk) {
        BOOST_TEST(!ec);
        in_strand = strand.running_in_this_thread();
        got = std::string(chunk.bytes());
    }));
    asio::write(peer, asio::buffer("s", 1));
    run_until([&] { return !got.empty(); });
    BOOST_TEST(got == "s");
    BOOST_TEST(in_strand);

    asio::cancellation_signal cancel;
    error_code last;
    bool done = false;
    c->stream().async_receive(asio::bind_cancellation_slot(cancel.slot(), [&](error_code ec, net::read_chunk chunk) {
        BOOST_TEST(chunk.empty());
        last = ec;
        done = true;
    }));
    run_for(10ms);
    BOOST_TEST(!done);
    cancel.emit(asio::cancellation_type::terminal);
    run_until([&] { return done; });
    BOOST_TEST((last == asio::error::operation_aborted));
    BOOST_TEST(!c->closing());
    got.clear();
    c->stream().async_receive([&](error_code ec, net::read_chunk chunk) {
        BOOST_TEST(!ec);
        got = std::string(chunk.bytes());
    });
    asio::write(peer, asio::buffer("t", 1));
    run_until([&] { return !got.empty(); });
    BOOST_TEST(got == "t");

    c->abort(net::close_reason::shutdown);
    BOOST_TEST(c->closed());
    done = false;
    c->stream().async_receive([&](error_code ec, net::read_chunk chunk) {
        BOOST_TEST(chunk.empty());
        last = ec;
        done = true;
    });
    BOOST_TEST(!done); // not inside the call
    run_until([&] { return done; });
    BOOST_TEST((last == net::errc::connection_closed));
    BOOST_TEST(net::read_chunk::outstanding() == 0u);
}

#if HWTEST_CO_AWAIT // (test_asio.hpp)
// A coroutine read loop, as users write one: the receive raced against a wheel wait with asio's
// awaitable operators. The wait wins while the peer is silent — the receive is cancelled through its
// slot, holding no chunk, and the connection stays open — then the bytes win and the wait is unlinked.
BOOST_FIXTURE_TEST_CASE(a_coroutine_races_a_receive_against_a_wheel_wait, fixture) {
    using namespace asio::experimental::awaitable_operators;
    auto c = make(accept_one());
    std::size_t first = 9, second = 9;
    std::string got;
    bool finished = false;
    asio::co_spawn(io, [&]() -> asio::awaitable<void> {
        auto r = co_await (c->stream().async_receive(asio::use_awaitable) || wheel.async_wait(30ms, asio::use_awaitable));
        first = r.index();
        asio::write(peer, asio::buffer("z", 1));
        auto r2 = co_await (c->stream().async_receive(asio::use_awaitable) || wheel.async_wait(10s, asio::use_awaitable));
        second = r2.index();
        if (r2.index() == 0) got = std::string(std::get<0>(r2).bytes());
        finished = true;
    }, asio::detached);
    run_until([&] { return finished; });
    BOOST_TEST(first == 1u); // the wheel's wait won: the receive was cancelled
    BOOST_TEST(second == 0u);
    BOOST_TEST(got == "z");
    BOOST_TEST(!c->closing());
    BOOST_TEST(wheel.size() == 0u);
    BOOST_TEST(net::read_chunk::outstanding() == 0u);
}

#endif

BOOST_FIXTURE_TEST_CASE(tcp_receive_is_reader_activity_and_a_policy_close_ends_it, fixture) {
    net::liveness_config cfg;
    cfg.idle.reader_idle = 100ms;
    fixture::reader<net::connection<tcp::socket>> r(make(accept_one(), cfg));
    r.start();
    for (int i = 0; i < 15; ++i) {
        asio::write(peer, asio::buffer("x", 1));
        run_for(20ms);
    }
    BOOST_TEST(!r.c->closing());
    BOOST_TEST(r.got == std::string(15, 'x'));
    run_until([&] { return r.done; });
    BOOST_TEST((r.c->reason() == net::close_reason::reader_idle));
    BOOST_TEST((r.last == net::errc::timed_out));
    BOOST_TEST(net::read_chunk::outstanding() == 0u);
}

// TLS, over both server streams: the receive waits without a chunk (asio::ssl::stream: a one-byte
// read, then the rest of the record; net::tls_socket: readiness, then OpenSSL decrypts into the
// chunk); records sent back to back (one TCP segment, several records) all arrive without more bytes
// from the peer. The client is Asio's stream either way.
using tls_servers = boost::mpl::list<tls, net::tls_socket>;
BOOST_FIXTURE_TEST_CASE_TEMPLATE(tls_receive_waits_without_a_chunk_and_brings_every_record, Server, tls_servers,
                                 fixture) {
    use_self_signed(this->server_ctx);
    this->client_ctx.set_verify_mode(asio::ssl::verify_none);
    auto c = this->make(Server(this->accept_one(), this->server_ctx));
    tls client(std::move(this->peer), this->client_ctx);
    bool server_ready = false, client_ready = false;
    c->async_handshake(asio::ssl::stream_base::server, [&](error_code ec) { server_ready = !ec; });
    client.async_handshake(asio::ssl::stream_base::client, [&](error_code ec) { client_ready = !ec; });
    this->run_until([&] { return server_ready && client_ready; });

    fixture::reader<net::connection<Server>> r(c);
    r.start();
    this->run_for(20ms);
    BOOST_TEST(r.waiting);
    BOOST_TEST(net::read_chunk::outstanding() == 0u);
    std::string expected;
    for (int i = 0; i < 3; ++i) { // three records, written without waiting for the reader
        const std::string record = "record " + std::to_string(i) + std::string(100 * i, '.') + "\n";
        asio::write(client, asio::buffer(record));
        expected += record;
    }
    const std::string big(3 * net::read_chunk::capacity, 'B'); // several full records
    asio::write(client, asio::buffer(big));
    expected += big;
    this->run_until([&] { return r.got.size() == expected.size(); });
    BOOST_TEST((r.got == expected));
    this->run_for(10ms);
    BOOST_TEST(r.waiting);
    BOOST_TEST(net::read_chunk::outstanding() == 0u);
    client.lowest_layer().close();
    this->run_until([&] { return r.done; });
    BOOST_TEST(!!r.last);
}

// A connection over a tls_socket says close_notify before its FIN: the peer reads the goodbye and
// then a clean end of stream (eof), not a truncation (what a bare FIN after TLS records reads as).
BOOST_FIXTURE_TEST_CASE(a_tls_socket_close_says_close_notify_before_the_fin, fixture) {
    use_self_signed(server_ctx);
    client_ctx.set_verify_mode(asio::ssl::verify_none);
    auto c = make(net::tls_socket(accept_one(), server_ctx));
    tls client(std::move(peer), client_ctx);
    bool server_ready = false, client_ready = false;
    c->async_handshake(asio::ssl::stream_base::server, [&](error_code ec) { server_ready = !ec; });
    client.async_handshake(asio::ssl::stream_base::client, [&](error_code ec) { client_ready = !ec; });
    run_until([&] { return server_ready && client_ready; });

    net::connection_hooks hooks;
    hooks.last_words = [raw = c.get()](net::close_reason) { raw->send("BYE done\n"); };
    c->set_hooks(std::move(hooks));
    c->close(net::define_close_reason("done"));
    std::string got;
    error_code end;
    char buf[256];
    std::function<void()> read = [&] {
        client.async_read_some(asio::buffer(buf), [&](error_code ec, std::size_t n) {
            got.append(buf, n);
            if (ec) end = ec;
            else read();
        });
    };
    read();
    run_until([&] { return !!end; });
    BOOST_TEST(got == "BYE done\n");
    BOOST_TEST((end == asio::error::eof), end.message());
}
