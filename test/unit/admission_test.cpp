// admission_test.cpp — net::admission with time passed in: a reserved socket holds its place until
// a connection takes it over, and counts against the handshakes too (a burst of accepts cannot
// overshoot); give-backs saturate; the handshake bound is at most half the connection bound; a
// handshake is asked to look at itself only once stalled, and then once per stall period; a place
// leaves the list when it ends.
#include <boost/test/unit_test.hpp>

#include <heartwheel/net/admission.hpp>
#include <heartwheel/net/policies.hpp>

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

BOOST_AUTO_TEST_CASE(reserved_sockets_count_against_the_handshakes) {
    net::admission_limits l;
    l.max_handshakes = 2;
    net::admission a(l);
    a.reserve();
    a.reserve();
    BOOST_TEST(!a.room_for_handshake()); // both may be about to begin one
    a.arrived();
    int asked = 0;
    auto p = std::make_unique<net::admission::handshake_place>(a, [&] { ++asked; });
    BOOST_TEST(a.handshakes() == 1u);
    BOOST_TEST(!a.room_for_handshake());
    a.arrived();
    BOOST_TEST(a.room_for_handshake());
    p.reset();
    BOOST_TEST(a.handshakes() == 0u);
}

BOOST_AUTO_TEST_CASE(a_handshake_is_asked_only_once_stalled_and_then_once_a_period) {
    net::admission_limits l;
    l.handshake_stall = 250ms;
    net::admission a(l);
    std::vector<int> asked(3, 0);
    const auto t0 = net::admission::clock::now();
    std::vector<std::unique_ptr<net::admission::handshake_place>> p;
    for (int i = 0; i < 3; ++i) p.push_back(std::make_unique<net::admission::handshake_place>(a, [&asked, i] { ++asked[i]; }));
    BOOST_TEST(a.check_stalled(t0) == 0u); // none has waited a stall yet
    BOOST_TEST(a.check_stalled(t0 + 100ms) == 0u);
    BOOST_TEST(a.check_stalled(t0 + 300ms) == 3u);
    BOOST_TEST(a.check_stalled(t0 + 400ms) == 0u); // asked: not again within the period
    p[1].reset();                                   // its handshake ended: out of the list
    BOOST_TEST(a.check_stalled(t0 + 600ms) == 2u);
    BOOST_TEST((asked == std::vector<int>{2, 1, 2}));
    BOOST_TEST(a.handshakes() == 2u);
}

BOOST_AUTO_TEST_SUITE_END()
