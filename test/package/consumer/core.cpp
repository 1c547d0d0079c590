// consumer_core — heartwheel::core alone: the wheel driven by hand, overdue timers in deadline order.
#include <heartwheel/timing_wheel.hpp>

#include <iostream>
#include <vector>

namespace {
struct note final : heartwheel::timer_node {
    note(std::vector<int>& out, int n) : log(out), id(n) {}
    std::vector<int>& log;
    int id;
    void on_expire() override { log.push_back(id); }
};
} // namespace

int main() {
    using namespace std::chrono_literals;
    const heartwheel::time_point start{};
    heartwheel::timing_wheel wheel(start);
    std::vector<int> log;
    note a(log, 3), b(log, 1), c(log, 2);
    wheel.schedule(a, start + 30ms);
    wheel.schedule(b, start + 10ms);
    wheel.schedule(c, start + 20ms);
    wheel.advance(start + 1s);
    if (log != std::vector<int>{1, 2, 3}) return 1;
    std::cout << "consumer_core: fired " << log.size() << " timers in order\n";
}
