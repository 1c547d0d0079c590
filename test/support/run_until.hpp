// run_until.hpp — drives an io_context in short slices until a condition holds, failing the test
// (BOOST_TEST_REQUIRE) when it does not within the limit. For tests over real sockets.
#ifndef HEARTWHEEL_TEST_RUN_UNTIL_HPP
#define HEARTWHEEL_TEST_RUN_UNTIL_HPP

#include <boost/test/unit_test.hpp>

#include "test_asio.hpp"

#include <chrono>
#include <functional>

namespace hwtest {

inline void run_until(asio::io_context& io, const std::function<bool()>& done,
                      std::chrono::milliseconds limit = std::chrono::milliseconds(5000)) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (!done() && std::chrono::steady_clock::now() < end) {
        io.restart();
        io.run_for(std::chrono::milliseconds(2));
    }
    BOOST_TEST_REQUIRE(done(), "not done within the time limit");
}

} // namespace hwtest

#endif
