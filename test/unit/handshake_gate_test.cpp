// handshake_gate_test.cpp — net::handshake_gate with time passed in: a source at its own cap is
// refused without touching anyone else's; a source's rate is a bucket of one second's worth that
// refills with time; waiters unlink themselves when destroyed, and a gate destroyed first leaves
// them unlinked; the remembered sources stay bounded.
#define BOOST_TEST_MODULE admission
#include <boost/test/unit_test.hpp>

#include <heartwheel/net/server/handshake_gate.hpp>

#include <memory>
#include <vector>

using namespace std::chrono_literals;
namespace net = heartwheel::net;
using gate = net::handshake_gate;
using verdict = gate::verdict;

namespace {

using probe = gate::waiter;

asio::ip::address addr(const char* a) { return asio::ip::make_address(a); }
const gate::clock::time_point t0{};

} // namespace

BOOST_AUTO_TEST_CASE(a_source_at_its_cap_is_refused_and_touches_no_one) {
    net::handshake_limits l;
    l.max_pending_per_source = 2;
    gate g(l);
    probe a1, a2, a3, b1;
    BOOST_TEST((g.admit(a1, addr("10.0.0.1"), t0) == verdict::admitted));
    BOOST_TEST((g.admit(a2, addr("10.0.0.1"), t0) == verdict::admitted));
    BOOST_TEST((g.admit(a3, addr("10.0.0.1"), t0) == verdict::source_busy));
    BOOST_TEST(!a3.waiting());
    BOOST_TEST((a1.waiting() && a2.waiting())); // a refusal touches nobody
    BOOST_TEST(g.refusals() == 1u);
    BOOST_TEST((g.admit(b1, addr("::1"), t0) == verdict::admitted)); // another source: its own count
    BOOST_TEST(g.pending() == 3u);
    g.release(a1);
    g.release(a1); // twice: nothing
    BOOST_TEST((g.admit(a3, addr("10.0.0.1"), t0) == verdict::admitted)); // a1's place at its source is free
    BOOST_TEST(g.pending() == 3u);
}

BOOST_AUTO_TEST_CASE(a_source_rate_is_a_bucket_of_one_second) {
    net::handshake_limits l;
    l.per_source_rate = 10;
    gate g(l);
    auto start = [&](const char* a, gate::clock::time_point t) {
        probe p;
        const verdict v = g.admit(p, addr(a), t);
        g.release(p);
        return v;
    };
    for (int i = 0; i < 10; ++i) BOOST_TEST((start("10.0.0.1", t0) == verdict::admitted));
    BOOST_TEST((start("10.0.0.1", t0) == verdict::source_too_fast));
    BOOST_TEST((start("10.0.0.2", t0) == verdict::admitted)); // its own bucket
    BOOST_TEST((start("10.0.0.1", t0 + 50ms) == verdict::source_too_fast)); // half a token
    BOOST_TEST((start("10.0.0.1", t0 + 100ms) == verdict::admitted));      // one
    BOOST_TEST((start("10.0.0.1", t0 + 100ms) == verdict::source_too_fast));
    int later = 0;
    for (int i = 0; i < 20; ++i) later += start("10.0.0.1", t0 + 10s) == verdict::admitted;
    BOOST_TEST(later == 10); // full again, never more than a second's worth
}

BOOST_AUTO_TEST_CASE(a_destroyed_waiter_leaves_the_list_and_a_destroyed_gate_its_waiters) {
    net::handshake_limits l;
    l.max_pending_per_source = 2;
    probe outlives;
    {
        gate g(l);
        probe keep;
        BOOST_TEST((g.admit(keep, addr("10.0.0.1"), t0) == verdict::admitted));
        {
            probe gone;
            BOOST_TEST((g.admit(gone, addr("10.0.0.1"), t0) == verdict::admitted));
            BOOST_TEST(g.pending() == 2u);
        }
        BOOST_TEST(g.pending() == 1u);
        BOOST_TEST((g.admit(outlives, addr("10.0.0.1"), t0) == verdict::admitted)); // the destroyed one's place
        BOOST_TEST(keep.waiting());
    }
    BOOST_TEST(!outlives.waiting()); // and its destructor reaches no gate (ASan would say)
}

BOOST_AUTO_TEST_CASE(remembered_sources_stay_bounded) {
    net::handshake_limits l;
    l.per_source_rate = 5;
    l.max_sources = 100;
    gate g(l);
    for (int i = 0; i < 10000; ++i) {
        probe p;
        const asio::ip::address a = asio::ip::address_v4(0x0a000000u + static_cast<unsigned>(i));
        BOOST_TEST_REQUIRE((g.admit(p, a, t0 + std::chrono::milliseconds(i)) == verdict::admitted));
        g.release(p);
        BOOST_TEST_REQUIRE(g.sources() <= 100u);
    }
    std::vector<std::unique_ptr<probe>> held; // sources with a handshake in progress are never forgotten
    for (int i = 0; i < 150; ++i) {
        held.push_back(std::make_unique<probe>());
        g.admit(*held.back(), asio::ip::address_v4(0x0b000000u + static_cast<unsigned>(i)), t0 + 20s);
    }
    BOOST_TEST(g.pending() == 150u);
    BOOST_TEST(g.sources() >= 150u);
}
