// producer_budget_test — net::producer_budget on a manual clock: a producer over its budget waits until
// its recipients let its messages go (down to half the budget), at most max_wait (then one more
// budget's worth is granted, spent again once the recipients catch up); a cancel completes the wait
// aborted; messages released on other threads wake the producer's executor exactly once.
#include <heartwheel/net/connection/producer_budget.hpp>

#define BOOST_TEST_MODULE producer_budget
#include <boost/test/unit_test.hpp>

#include "manual_service.hpp"

#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace net = heartwheel::net;
using namespace std::chrono_literals;
using heartwheel::error_code;

namespace {

struct fixture {
    heartwheel::asio::io_context io;
    hwtest::manual_service timers;
    // 1,000 bytes; each message costs its size + 100.
    net::producer_budget budget{1000, 100, 500ms};
    std::optional<error_code> result;
    void wait() {
        result.reset();
        budget.async_wait(timers, io.get_executor(), [this](error_code ec) { result = ec; });
    }
    void settle() {
        io.restart();
        io.poll();
    }
};

} // namespace

BOOST_FIXTURE_TEST_CASE(messages_count_until_their_last_holder_lets_go, fixture) {
    auto a = budget.make_message(std::string(200, 'a')); // 300
    BOOST_TEST(*a == std::string(200, 'a'));
    auto held_elsewhere = a;                             // a second recipient: still one message
    BOOST_TEST(budget.outstanding() == 300u);
    a.reset();
    BOOST_TEST(budget.outstanding() == 300u);
    held_elsewhere.reset();
    BOOST_TEST(budget.outstanding() == 0u);
}

BOOST_FIXTURE_TEST_CASE(over_the_budget_the_producer_waits_until_half_is_written, fixture) {
    std::vector<net::shared_message> queue;
    for (int i = 0; i < 4; ++i) queue.push_back(budget.make_message(std::string(200, 'x'))); // 1,200
    BOOST_TEST(budget.over());
    wait();
    settle();
    BOOST_TEST(!result.has_value()); // still 1,200 held
    queue.pop_back();                // 900: not yet half
    settle();
    BOOST_TEST(!result.has_value());
    queue.pop_back();                // 600
    settle();
    BOOST_TEST(!result.has_value());
    queue.pop_back();                // 300: at or below 500
    settle();
    BOOST_REQUIRE(result.has_value());
    BOOST_TEST(!*result);
    BOOST_TEST(!budget.over());
    timers.advance_by(1s); // the max_wait timer of an ended wait does nothing
    settle();
    BOOST_TEST(!budget.over());
}

BOOST_FIXTURE_TEST_CASE(under_half_the_wait_ends_at_once, fixture) {
    auto m = budget.make_message(std::string(50, 'x'));
    wait();
    settle();
    BOOST_REQUIRE(result.has_value());
    BOOST_TEST(!*result);
}

BOOST_FIXTURE_TEST_CASE(a_recipient_that_holds_everything_delays_the_producer_max_wait_at_a_time, fixture) {
    std::vector<net::shared_message> frozen; // a reader that reads nothing: it holds every message
    for (int i = 0; i < 4; ++i) frozen.push_back(budget.make_message(std::string(200, 'x'))); // 1,200
    wait();
    timers.step_by(499ms);
    settle();
    BOOST_TEST(!result.has_value());
    timers.step_by(2ms);
    settle();
    BOOST_REQUIRE(result.has_value()); // after max_wait: one more budget's worth
    BOOST_TEST(!budget.over());        // 1,200 <= 1,000 + 1,000
    for (int i = 0; i < 5; ++i) frozen.push_back(budget.make_message(std::string(200, 'x'))); // 2,700
    BOOST_TEST(budget.over());
    frozen.clear(); // the frozen reader was closed (its bound): everything let go
    BOOST_TEST(!budget.over());
    for (int i = 0; i < 4; ++i) frozen.push_back(budget.make_message(std::string(200, 'x'))); // 1,200
    BOOST_TEST(budget.over()); // the extra allowance was spent when the recipients caught up
}

BOOST_FIXTURE_TEST_CASE(cancel_completes_the_wait_aborted, fixture) {
    std::vector<net::shared_message> held;
    for (int i = 0; i < 4; ++i) held.push_back(budget.make_message(std::string(200, 'x')));
    wait();
    budget.cancel();
    settle();
    BOOST_REQUIRE(result.has_value());
    BOOST_TEST(*result == heartwheel::asio::error::operation_aborted);
    held.clear(); // no second completion
    result.reset();
    settle();
    BOOST_TEST(!result.has_value());
}

BOOST_FIXTURE_TEST_CASE(drop_destroys_the_waiter_uncalled, fixture) {
    auto witness = std::make_shared<int>(0);
    std::vector<net::shared_message> held;
    for (int i = 0; i < 4; ++i) held.push_back(budget.make_message(std::string(200, 'x')));
    budget.async_wait(timers, io.get_executor(), [this, w = witness](error_code ec) { result = ec; });
    BOOST_TEST(witness.use_count() == 2);
    budget.drop();
    BOOST_TEST(witness.use_count() == 1); // the handler (and what it holds) is gone
    held.clear();
    settle();
    BOOST_TEST(!result.has_value());
}

BOOST_FIXTURE_TEST_CASE(messages_that_die_on_other_threads_wake_the_producer_once, fixture) {
    // Many rounds of: over the budget, wait, and four recipient threads let the messages go at once.
    int woken = 0;
    for (int round = 0; round < 200; ++round) {
        std::vector<net::shared_message> batch;
        for (int i = 0; i < 8; ++i) batch.push_back(budget.make_message(std::string(100, 'x'))); // 1,600
        BOOST_REQUIRE(budget.over());
        budget.async_wait(timers, io.get_executor(), [&](error_code ec) {
            BOOST_TEST(!ec);
            ++woken;
        });
        std::vector<std::thread> recipients;
        for (int t = 0; t < 4; ++t)
            recipients.emplace_back([mine = std::vector<net::shared_message>(batch.begin() + 2 * t, batch.begin() + 2 * t + 2)]() mutable {
                mine.clear();
            });
        batch.clear();
        for (auto& t : recipients) t.join();
        settle();
        BOOST_REQUIRE(woken == round + 1);
    }
    BOOST_TEST(budget.outstanding() == 0u);
}

BOOST_AUTO_TEST_CASE(no_budget_counts_nothing) {
    net::producer_budget off;
    auto m = off.make_message("hello");
    BOOST_TEST(*m == "hello");
    BOOST_TEST(off.outstanding() == 0u);
    BOOST_TEST(!off.over());
}
