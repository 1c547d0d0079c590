// consumer_driver — heartwheel::driver: an asio_wheel on an io_context fires three timers in
// order, and an async_wait completes through a completion token. Linking the driver imposes nothing:
// Asio stays header-only (no ASIO_SEPARATE_COMPILATION) and its deprecated names (io_service) remain.
#include <heartwheel/asio_wheel.hpp>

#include <asio/io_service.hpp>

#if defined(ASIO_SEPARATE_COMPILATION) || defined(ASIO_NO_DEPRECATED) || defined(HEARTWHEEL_BOOST_ASIO)
#error "linking heartwheel::driver defined an Asio macro this consumer did not ask for"
#endif

#include <iostream>
#include <vector>

int main() {
    using namespace std::chrono_literals;
    asio::io_service io; // deprecated, still available
    heartwheel::asio_wheel wheel(io.get_executor());
    std::vector<int> order;
    auto a = wheel.schedule_after(3ms, [&] { order.push_back(3); });
    auto b = wheel.schedule_after(1ms, [&] { order.push_back(1); });
    auto c = wheel.schedule_after(2ms, [&] { order.push_back(2); });
    bool waited = false;
    wheel.async_wait(4ms, [&](std::error_code ec) { waited = !ec; });
    io.run();
    if (order != std::vector<int>{1, 2, 3} || !waited) return 1;
    std::cout << "consumer_driver: fired " << order.size() << " timers and a wait\n";
}
