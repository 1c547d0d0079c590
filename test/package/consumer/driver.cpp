// consumer_heartwheel — heartwheel::heartwheel: an asio_wheel on an io_context fires three timers in
// order, and an async_wait completes through a completion token.
#include <heartwheel/asio_wheel.hpp>

#include <asio/io_context.hpp>

#include <iostream>
#include <vector>

int main() {
    using namespace std::chrono_literals;
    asio::io_context io;
    heartwheel::asio_wheel wheel(io.get_executor());
    std::vector<int> order;
    auto a = wheel.schedule_after(3ms, [&] { order.push_back(3); });
    auto b = wheel.schedule_after(1ms, [&] { order.push_back(1); });
    auto c = wheel.schedule_after(2ms, [&] { order.push_back(2); });
    bool waited = false;
    wheel.async_wait(4ms, [&](std::error_code ec) { waited = !ec; });
    io.run();
    if (order != std::vector<int>{1, 2, 3} || !waited) return 1;
    std::cout << "consumer_heartwheel: fired " << order.size() << " timers and a wait\n";
}
