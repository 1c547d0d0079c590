// consumer — uses the installed package: an asio_wheel on an io_context fires three timers in order.
#include <heartwheel/asio_wheel.hpp>

#include <asio/io_context.hpp>

#include <iostream>
#include <vector>

int main() {
    asio::io_context io;
    heartwheel::asio_wheel wheel(io.get_executor());
    std::vector<int> order;
    auto a = wheel.schedule_after(std::chrono::milliseconds(3), [&] { order.push_back(3); });
    auto b = wheel.schedule_after(std::chrono::milliseconds(1), [&] { order.push_back(1); });
    auto c = wheel.schedule_after(std::chrono::milliseconds(2), [&] { order.push_back(2); });
    io.run();
    if (order != std::vector<int>{1, 2, 3}) return 1;
    std::cout << "consumer: fired " << order.size() << " timers\n";
}
