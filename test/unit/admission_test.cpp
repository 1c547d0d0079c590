// admission_test.cpp — net::admission with time passed in: a reserved socket holds its place until
// a connection takes it over; give-backs saturate; the handshake bound is at most half the connection
// bound; a handshake takes a place only when its peer speaks, queues beyond the bound and gets the
// first place that frees (first come, first served); a handshake is asked to look at itself only once
// stalled, and then once per stall period — while connections wait any silent or place-holding one,
// while handshakes queue only those holding a place; a handshake leaves the lists when it ends.
#include <boost/test/unit_test.hpp>

#include <heartwheel/net/server/admission.hpp>
#include <heartwheel/net/policies/policies.hpp>

#include <memory>
#include <vector>

using namespace std::chrono_literals;
namespace net = heartwheel::net;

BOOST_AUTO_TEST_SUITE(admission_counts)

BOOST_AUTO_TEST_CASE(a_reserved_place_is_held_until_a_connection_takes_it_over) {
    net::admission_limits l;
    l.max_connections = 2;
    net::admission a(l);
    BOOST_TEST(a.room_for_connection());
    a.reserve();
    a.reserve();
    BOOST_TEST(!a.room_for_connection()); // two accepted, neither a connection yet
    a.arrived();
    BOOST_TEST((a.open() == 1u && a.reserved() == 1u));
    BOOST_TEST(!a.room_for_connection());
    a.unreserve(); // the second was dropped
    BOOST_TEST(a.room_for_connection());
    a.left();
    a.left(); // one more give-back than takes: saturates
    a.unreserve();
    BOOST_TEST((a.open() == 0u && a.reserved() == 0u));
    a.arrived(); // a connection made without a reservation still counts
    BOOST_TEST(a.open() == 1u);
}

BOOST_AUTO_TEST_CASE(handshakes_are_at_most_half_the_connections) {
    net::admission_limits l;
    l.max_connections = 1000;
    l.max_handshakes = 1024;
    BOOST_TEST(l.effective_max_handshakes() == 500u);
    l.max_connections = 1;
    BOOST_TEST(l.effective_max_handshakes() == 1u);
    l.max_connections = 0;
    BOOST_TEST(l.effective_max_handshakes() == 1024u);
    l.max_handshakes = 0;
    l.max_connections = 10;
    BOOST_TEST(l.effective_max_handshakes() == 0u); // off stays off
    BOOST_TEST(l.enabled());
    l.handshake_stall = 0ms;
    BOOST_CHECK_THROW(l.validate(), net::config_error);
    BOOST_CHECK_THROW(net::admission{l}, net::config_error);
}

namespace {
using place = net::admission::handshake_place;
std::unique_ptr<place> make_place(net::admission& a, int& asked) {
    return std::make_unique<place>(a, [&asked] { ++asked; });
}
} // namespace

BOOST_AUTO_TEST_CASE(a_place_is_taken_when_the_peer_speaks_and_the_first_queued_gets_the_next) {
    net::admission_limits l;
    l.max_handshakes = 2;
    net::admission a(l);
    int asked = 0;
    std::vector<std::unique_ptr<place>> p;
    for (int i = 0; i < 4; ++i) p.push_back(make_place(a, asked));
    BOOST_TEST(a.handshakes() == 0u); // four silent peers hold nothing
    std::vector<int> granted(4, 0);
    auto grant = [&granted](int i) { return [&granted, i] { ++granted[i]; }; };
    BOOST_TEST(p[0]->request(grant(0)));
    BOOST_TEST(p[1]->request(grant(1)));
    BOOST_TEST(!p[3]->request(grant(3))); // the bound: queued, in the order they spoke
    BOOST_TEST(!p[2]->request(grant(2)));
    BOOST_TEST((a.handshakes() == 2u && a.queued() == 2u));
    BOOST_TEST((granted == std::vector<int>{0, 0, 0, 0})); // granted ones are told by request's result
    p[1].reset(); // a handshake ends: its place goes to the queue's first
    BOOST_TEST((granted == std::vector<int>{0, 0, 0, 1}));
    BOOST_TEST(p[3]->holds_place());
    BOOST_TEST((a.handshakes() == 2u && a.queued() == 1u));
    p[2].reset(); // one queued leaves before its turn (its connection closed): out of the queue
    BOOST_TEST(a.queued() == 0u);
    p[0].reset();
    BOOST_TEST((granted == std::vector<int>{0, 0, 0, 1}));
    BOOST_TEST(a.handshakes() == 1u);
    p[3].reset();
    BOOST_TEST(a.handshakes() == 0u);
    BOOST_TEST(asked == 0);
}

BOOST_AUTO_TEST_CASE(a_handshake_is_asked_only_once_stalled_and_then_once_a_period) {
    net::admission_limits l;
    l.handshake_stall = 250ms;
    net::admission a(l);
    std::vector<int> asked(3, 0);
    const auto t0 = net::admission::clock::now();
    std::vector<std::unique_ptr<place>> p;
    for (int i = 0; i < 3; ++i) p.push_back(make_place(a, asked[i]));
    BOOST_TEST(a.check_stalled(t0) == 0u); // none has waited a stall yet
    BOOST_TEST(a.check_stalled(t0 + 100ms) == 0u);
    BOOST_TEST(a.check_stalled(t0 + 300ms) == 3u);
    BOOST_TEST(a.check_stalled(t0 + 400ms) == 0u); // asked: not again within the period
    p[1].reset();                                   // its handshake ended: out of the list
    BOOST_TEST(a.check_stalled(t0 + 600ms) == 2u);
    BOOST_TEST((asked == std::vector<int>{2, 1, 2}));
}

// While handshakes queue for a place, only those holding one are looked at: a silent peer holds
// nothing the queue waits for (a storm's slow clients are not shed for it); while connections wait
// (check_stalled) silent ones are looked at too.
BOOST_AUTO_TEST_CASE(queued_handshakes_ask_only_the_place_holders) {
    net::admission_limits l;
    l.max_handshakes = 1;
    l.handshake_stall = 250ms;
    net::admission a(l);
    int silent = 0, holder = 0, queued = 0;
    const auto t0 = net::admission::clock::now();
    auto s = make_place(a, silent);
    auto h = make_place(a, holder);
    auto q = make_place(a, queued);
    BOOST_TEST(h->request([] {}, t0));
    BOOST_TEST(!q->request([] {}, t0 + 300ms)); // queues: the holder has held its place a stall
    BOOST_TEST((silent == 0 && holder == 1 && queued == 0));
    BOOST_TEST(a.check_stalled(t0 + 300ms) == 1u); // the silent one (the holder was just asked)
    BOOST_TEST((silent == 1 && holder == 1 && queued == 0));
}

BOOST_AUTO_TEST_SUITE_END()
