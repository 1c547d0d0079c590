// footprint_test.cpp — what one connection's liveness and write queue hold: only the policies a
// configuration enables are built, a policy that is off holds nothing, and an idle write queue holds
// no heap memory. Heap use is counted by this program's own operator new (bytes requested while a
// counter is on), so the figures are the same under every build.
#define BOOST_TEST_MODULE footprint
#include <boost/test/unit_test.hpp>

#include <heartwheel/net/connection/connection.hpp>
#include <heartwheel/net/policies/connection_liveness.hpp>
#include <heartwheel/net/connection/connection_with.hpp>
#include <heartwheel/net/policies/timeout_policy.hpp>
#include <heartwheel/net/connection/write_queue.hpp>

#include "heap_count.hpp"
#include "liveness_recorder.hpp"
#include "manual_service.hpp"

#include <asio/io_context.hpp>

#include <cstdlib>
#include <new>
#include <optional>
#include <utility>
#include <vector>

using namespace hwtest;
using namespace heartwheel::net;

namespace {
template <class F>
heap_use measure(F&& f) {
    return measure_heap(std::forward<F>(f));
}
} // namespace

using core_socket = asio::basic_stream_socket<asio::ip::tcp, asio::io_context::executor_type>;

// A connection's object decides its heap block (with make_shared's control block and malloc's header).
// Its liveness lives inside it (made in place: a block of its own would add a pointer and a header):
// over a socket typed with its io_context's executor the two are 360 bytes; a phase deadline is a
// field of the liveness's node, and the one timer node of its own (the linger) is made when a close
// lingers. Every word here is paid by every connection, idle or not; what only some use while they
// use it (the write queue and its bound while output is queued, the write timeout's timer, the
// request tracker, the heartbeat when on) is a block of its own.
BOOST_AUTO_TEST_CASE(a_connection_fits_its_heap_block) {
    BOOST_TEST(sizeof(output_bound) <= 32u);
    BOOST_TEST(sizeof(connection<core_socket>) <= 360u); // 424 while the output kept its queue and bound
    // An idle connection's output: a pointer to its shared limits and a null busy state (its queue
    // and bound are made by a send and dropped once written: connection_test, memory_stream_test).
    BOOST_TEST(sizeof(heartwheel::net::byte_output<connection<core_socket>>) <= 24u);
}

// Accepting a connection allocates its block and its stream's core, and nothing for its liveness
// when no policy is on: the liveness is made in place (it was a heap block of its own).
namespace {
/// A context with every policy off, whose first connection (which also makes the io_context's
/// teardown registry: not counted) is made already, and an open socket, as accepted.
struct policies_off {
    asio::io_context io;
    manual_service svc;
    liveness_config off = [] {
        liveness_config c;
        c.limits.handshake_timeout = std::chrono::milliseconds(0);
        return c;
    }();
    const connection_context ctx{svc, off};
    std::shared_ptr<connection<core_socket>> first =
        std::make_shared<connection<core_socket>>(core_socket(io, asio::ip::tcp::v4()), ctx);
    core_socket s{io, asio::ip::tcp::v4()};
};
} // namespace

BOOST_FIXTURE_TEST_CASE(a_connection_and_its_liveness_are_one_allocation, policies_off) {
    std::shared_ptr<connection<core_socket>> c;
    const auto use = measure([&] { c = std::make_shared<connection<core_socket>>(std::move(s), ctx); });
    BOOST_TEST(use.allocations == 2u); // the connection with its liveness, the stream's core
    const auto at = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p); };
    BOOST_TEST(at(&c->liveness()) >= at(c.get()));
    BOOST_TEST(at(&c->liveness()) < at(c.get() + 1));
}

// A phase of the protocol (an HTTP server's keep-alive wait, a request head; an MQTT device's
// keep-alive) is a deadline of the liveness's own node: arming, moving and disarming it allocates
// nothing — an HTTP or MQTT connection held a 40-byte timer block for it while it lived.
BOOST_FIXTURE_TEST_CASE(a_phase_deadline_allocates_nothing, policies_off) {
    auto c = std::make_shared<connection<core_socket>>(std::move(s), ctx);
    const auto why = define_close_reason("test-phase");
    first->expires_after(std::chrono::hours(1), why); // the wheel's own storage, reserved at its first timer
    const auto use = measure([&] {
        c->expires_after(std::chrono::seconds(10), why);
        c->expires_after(std::chrono::seconds(5), why);
        c->expires_never();
        c->expires_after(std::chrono::seconds(75), why);
    });
    BOOST_TEST(use.allocations == 0u);
    svc.advance_by(std::chrono::seconds(75) - std::chrono::milliseconds(1)); // the last one counts
    BOOST_TEST(!c->closing());
    svc.advance_by(std::chrono::milliseconds(1));
    BOOST_TEST(c->closing());
    BOOST_TEST((c->reason() == why));
}

// A server's session in its connection's block (make_connection_with): still two allocations — the
// block and the stream's core — where a session made apart adds its own block and control block.
namespace {
struct small_session final : connection_handler {
    explicit small_session(connection<core_socket>& c) : c(c) {}
    connection<core_socket>& c;
};
} // namespace
BOOST_FIXTURE_TEST_CASE(a_connection_and_its_handler_are_one_allocation, policies_off) {
    std::shared_ptr<small_session> h;
    const auto use = measure([&] {
        h = make_connection_with<connection<core_socket>>([](connection<core_socket>& c) { return small_session(c); },
                                                           std::move(s), ctx);
    });
    BOOST_TEST(use.allocations == 2u); // the connection with its liveness and its handler, the stream's core
    // + control block, and the core with the memory its pending receive is placed in
    BOOST_TEST(use.bytes <= sizeof(connection<core_socket>) + sizeof(small_session) + 16u +
                                sizeof(heartwheel::net::detail::stream_core<core_socket>));
    BOOST_TEST(sizeof(heartwheel::net::detail::stream_core<core_socket>) <= 24u + 104u); // 120 here, 128 on Boost 1.81
    h->c.abort(close_reason::shutdown); // lets go of its handler
}

BOOST_AUTO_TEST_CASE(liveness_builds_only_what_the_config_enables) {
    asio::io_context io;
    manual_service svc;
    liveness_recorder handler(io.get_executor());
    std::optional<connection_liveness> live;
    liveness_config echo; // the echo server's: reader idle, heartbeat, max age
    echo.idle.reader_idle = std::chrono::minutes(10);
    echo.heartbeat.interval = std::chrono::seconds(30);
    echo.limits.max_age = std::chrono::hours(1);
    live.emplace(svc, echo, handler); // the wheel grows its own storage: not the connection's
    live.reset();

    liveness_config off; // nothing enabled (a TCP connection: no handshake either)
    off.limits.handshake_timeout = std::chrono::milliseconds(0);
    live.emplace(svc, off, handler); // the first of a config on a thread makes its shared settings
    live.reset();
    auto use = measure([&] { live.emplace(svc, off, handler); });
    BOOST_TEST(use.allocations == 0u); // every policy off: nothing beyond the object itself
    BOOST_TEST(svc.wheel().empty());
    live.reset();

    use = measure([&] { live.emplace(svc, echo, handler); });
    BOOST_TEST(use.allocations == 1u); // the heartbeat: reader idle and max age are the liveness's node
    BOOST_TEST(use.bytes <= 104u, use.bytes << " bytes"); // 120 with its own copy of its policy's figures, 136 with three read counts, 232 when they were timers of their own
    // 192, inside the connection's block (a_connection_fits_its_heap_block): it is a timer node (32
    // bytes), filed at the earliest of the idle kinds' next events and the max age, which keep data,
    // not timers (the idle state's policy, stamps and events taken, 48; the age's deadline, 8): a
    // reader-idle timer (a heap block of 64) and a max-age node (48) less per connection. Two
    // interfaces' pointers: it is the policy_host of the runtimes, of idle_state's scaling kinds and
    // of the heartbeat (one interface: 16 bytes less than a listener each), and hears the limits'
    // timers; the limits keep neither a listener nor a
    // vtable pointer of their own (24 bytes, not 56: the liveness is their timers' listener, and
    // gives them the handshake's policy when a handshake starts). What the policies judge by after
    // construction (the idle periods, the heartbeat's figures, the request policy, which reasons
    // scale) is one pointer to settings the connections of a config share (240 bytes while each kept
    // a copy). The runtimes add only what a runtime holds (policy_runtime_test): the read and write
    // timeouts' is a timer's pointer for each (their policy is the hooks' argument, from the shared
    // settings), so that the write timeout's timer is held only while output is queued (below).
    BOOST_TEST(sizeof(connection_liveness) <= 200u);
    BOOST_TEST(sizeof(timeout_runtime) <= 2 * sizeof(void*));
    BOOST_TEST(sizeof(idle_state) <= 48u);
    BOOST_TEST(sizeof(connection_limits) <= 24u);
    // A heap block of 64: its scheduler comes from its listener, whose pointer carries its two flags,
    // and its one last word is a plain timer's period or a scaled one's state (72 took 80, 88 took 96).
    BOOST_TEST(sizeof(activity_timer) <= 56u);
    // A heap block of 112: the heartbeat is its one timer node — for the judgement of the ping
    // outstanding, else the next ping (a pinger of its own, an activity_timer, took 48 bytes more:
    // 184, a block of 192) — and asks its listener for the scheduler; it keeps its judgement's
    // deadline, not its parts, reads its policy where the shared settings keep it (one pointer: 120
    // bytes, a block of 128, with 24 bytes of its own copy), and its flags share a word with the
    // miss count, as do two flags for "read since the ping, since the judgement" (three 32-bit read
    // counts before), and its RTT estimator is in 32-bit microseconds (136 bytes took a block of
    // 144, 200 one of 208, 216 one of 224, 232 one of 240).
    BOOST_TEST(sizeof(heartbeat) <= 104u);
    BOOST_TEST(svc.wheel().size() == 2u); // the liveness (reader idle, max age), the heartbeat

    // The settings are made once per config and thread: an equal config's next liveness allocates
    // none, a different one's does (once).
    live->close();
    liveness_config other = off;
    other.idle.reader_idle = std::chrono::milliseconds(12345);
    std::optional<connection_liveness> more;
    use = measure([&] { more.emplace(svc, other, handler); });
    BOOST_TEST(use.allocations == 1u); // its settings
    more.reset();
    const liveness_config equal = other;
    use = measure([&] { more.emplace(svc, equal, handler); });
    BOOST_TEST(use.allocations == 0u);
    more.reset();
    live.reset();
    live.emplace(svc, echo, handler);

    // The request tracker is made on first use.
    use = measure([&] { live->requests(); });
    BOOST_TEST(use.allocations >= 1u);
    live->close();
    live.reset();
    BOOST_TEST(svc.wheel().empty());

    // The write timeout's timer exists while output is queued: made when a write starts, freed when
    // the output drains — an idle connection holds none, however often it wrote (its pings too). A
    // freed timer is kept for the thread's next burst, up to watch_cache_size: what stays allocated
    // after every connection drained is bounded by that, not by the connections.
    liveness_config timed = echo;
    timed.timeouts.write_timeout = std::chrono::seconds(30);
    live.reset();
    constexpr std::size_t many = 3 * watch_cache_size;
    std::vector<std::optional<connection_liveness>> lives(many);
    for (auto& l : lives) l.emplace(svc, timed, handler);
    const std::size_t nodes = svc.wheel().size();
    use = measure([&] {
        for (auto& l : lives) l->on_write_started(); // every connection with output queued
    });
    BOOST_TEST(use.allocations >= many - watch_cache_size); // at most the cache's blocks reused (the wheel may grow too)
    BOOST_TEST(svc.wheel().size() == nodes + many);
    use = measure([&] {
        for (auto& l : lives) {
            l->on_write_progress();
            l->on_write_complete(false); // more queued: still timed
            l->on_write_started();       // the next write of the same backlog: nothing new
        }
    });
    BOOST_TEST(use.allocations == 0u);
    use = measure([&] {
        for (auto& l : lives) l->on_write_complete(true); // every connection drained
    });
    BOOST_TEST(use.frees == many - watch_cache_size); // all but the cache's given back
    BOOST_TEST(svc.wheel().size() == nodes);
    use = measure([&] {
        for (int burst = 0; burst < 3; ++burst) {
            for (std::size_t i = 0; i < watch_cache_size; ++i) lives[i]->on_write_started();
            for (std::size_t i = 0; i < watch_cache_size; ++i) lives[i]->on_write_complete(true);
        }
    });
    BOOST_TEST(use.allocations == 0u); // bursts on this thread reuse the kept timers
    BOOST_TEST(use.frees == 0u);
    lives.clear();
    live.reset();
    BOOST_TEST(svc.wheel().empty());
}

// 48 bytes in every connection (64 while its chunks were std::strings, whose inline room spared a
// short message its allocation): a drained queue gives its chunk back at once.
BOOST_AUTO_TEST_CASE(an_idle_write_queue_is_small_and_holds_nothing) {
    BOOST_TEST(sizeof(write_queue) <= 48u);
    write_queue q;
    std::size_t held[3] = {}, after[3] = {};
    auto use = measure([&] {
        for (int i = 0; i < 3; ++i) {
            q.append("PING 1\n");
            held[i] = q.memory();
            while (!q.empty()) q.consumed(q.next_bytes().size());
            after[i] = q.memory();
        }
    });
    for (int i = 0; i < 3; ++i) {
        BOOST_TEST(held[i] > 0u);
        BOOST_TEST(after[i] == 0u);
    }
    BOOST_TEST(use.allocations == 3u); // one chunk per write, none per message, none kept
    write_queue_limits small;
    small.chunk_bytes = 8;
    write_queue backlog(small);
    for (int i = 0; i < 10; ++i) backlog.append("0123456\n"); // ten chunks: a backlog
    BOOST_TEST(backlog.memory() > 0u);
    while (!backlog.empty()) backlog.consumed(backlog.next_bytes().size());
    BOOST_TEST(backlog.memory() == 0u); // the backlog's list went with it
}
