// source_share_test.cpp — net::source_share: the excess is what sources hold beyond their share,
// kept exact through adds, removes and sheds; at the limit a newcomer from a source within its share
// displaces the newest connection of the source furthest over it, and nobody else; a newcomer from
// a source at its share displaces no one; members unlink themselves when destroyed.
#include <boost/test/unit_test.hpp>

#include <heartwheel/net/server/source_share.hpp>

#include <memory>
#include <vector>

namespace net = heartwheel::net;

namespace {

struct conn final : net::source_share::member {
    net::source_share* table = nullptr;
    int sheds = 0;
};

// make_room() as an application calls it: the member handed back is closed (here: counted as shed,
// and removed again, which is allowed and does nothing).
bool make_room(net::source_share& t, const asio::ip::address& source) {
    net::source_share::member* victim = t.make_room(source);
    if (victim == nullptr) return false;
    BOOST_TEST(!victim->counted());
    auto& c = static_cast<conn&>(*victim);
    ++c.sheds;
    t.remove(c);
    return true;
}

asio::ip::address addr(const char* a) { return asio::ip::make_address(a); }

std::vector<std::unique_ptr<conn>> open(net::source_share& t, const char* source, int n) {
    std::vector<std::unique_ptr<conn>> out;
    for (int i = 0; i < n; ++i) {
        out.push_back(std::make_unique<conn>());
        out.back()->table = &t;
        t.add(*out.back(), addr(source));
    }
    return out;
}

} // namespace

BOOST_AUTO_TEST_CASE(excess_is_what_sources_hold_beyond_their_share) {
    net::source_share t(3);
    auto a = open(t, "10.0.0.1", 5);
    auto b = open(t, "10.0.0.2", 2);
    BOOST_TEST(t.excess() == 2u); // a: 5 - 3; b within
    auto c = open(t, "::1", 4);
    BOOST_TEST(t.excess() == 3u);
    t.remove(*a[0]);
    t.remove(*a[0]); // idempotent
    BOOST_TEST(t.excess() == 2u);
    a[1].reset(); // destroyed while counted: removes itself
    BOOST_TEST(t.excess() == 1u);
    BOOST_TEST(t.count(addr("10.0.0.1")) == 3u);
    c.clear();
    BOOST_TEST(t.excess() == 0u);
    BOOST_TEST(t.sources() == 2u); // an emptied source is forgotten
}

BOOST_AUTO_TEST_CASE(a_light_newcomer_displaces_the_newest_of_the_heaviest_source) {
    net::source_share t(2);
    auto quiet = open(t, "10.0.0.1", 2);
    auto heavy = open(t, "10.0.0.2", 6);
    auto medium = open(t, "10.0.0.3", 4);
    BOOST_TEST(t.excess() == 6u);
    BOOST_TEST(make_room(t, addr("10.0.0.9"))); // a new source
    BOOST_TEST(heavy[5]->sheds == 1);           // the heaviest's newest
    BOOST_TEST(!heavy[5]->counted());
    for (int i = 0; i < 5; ++i) BOOST_TEST(heavy[i]->sheds == 0);
    for (auto& c : quiet) BOOST_TEST(c->sheds == 0);
    for (auto& c : medium) BOOST_TEST(c->sheds == 0);
    BOOST_TEST(t.excess() == 5u);
    BOOST_TEST(make_room(t, addr("10.0.0.1")) == false); // its source would go past its share: no one
    BOOST_TEST(t.excess() == 5u);
    BOOST_TEST(make_room(t, addr("10.0.0.3")) == false); // over its share itself
    BOOST_TEST(make_room(t, addr("10.0.0.8"))); // heavy 5 -> 4, medium 4
    BOOST_TEST(t.count(addr("10.0.0.2")) == 4u);
    BOOST_TEST(make_room(t, addr("10.0.0.8"))); // a tie goes to either, never to a source within its share
    BOOST_TEST(t.count(addr("10.0.0.2")) + t.count(addr("10.0.0.3")) == 7u);
    BOOST_TEST(t.count(addr("10.0.0.1")) == 2u);
}

BOOST_AUTO_TEST_CASE(nobody_is_displaced_when_every_source_is_within_its_share) {
    net::source_share t(3);
    auto a = open(t, "10.0.0.1", 3);
    auto b = open(t, "10.0.0.2", 3);
    BOOST_TEST(t.excess() == 0u);
    BOOST_TEST(make_room(t, addr("10.0.0.3")) == false);
    for (auto& c : a) BOOST_TEST(c->sheds == 0);
}

// Every echo session is a member by default: it costs a connection three pointers, no vtable and no
// heap block of its own.
BOOST_AUTO_TEST_CASE(a_member_is_three_pointers) {
    BOOST_TEST(sizeof(net::source_share::member) == 3 * sizeof(void*));
}

BOOST_AUTO_TEST_CASE(a_member_added_to_another_table_leaves_the_first_and_may_outlive_both) {
    conn c;
    {
        net::source_share first(1);
        {
            net::source_share second(1);
            first.add(c, addr("10.0.0.1"));
            BOOST_TEST(first.count(addr("10.0.0.1")) == 1u);
            second.add(c, addr("10.0.0.2"));
            BOOST_TEST(first.count(addr("10.0.0.1")) == 0u); // counted once, in the table it joined last
            BOOST_TEST(first.sources() == 0u);
            BOOST_TEST(second.count(addr("10.0.0.2")) == 1u);
            first.remove(c); // not first's: nothing
            BOOST_TEST(second.count(addr("10.0.0.2")) == 1u);
        } // second goes first: c holds no pointer into it
        BOOST_TEST(!c.counted());
        first.add(c, addr("10.0.0.1"));
    }
    BOOST_TEST(!c.counted()); // and c's destructor touches no table
}
