// wheel_demo — a small tour of the wheel on a real io_context: 10,000 idle timers pushed back by
// simulated reads, a heartbeat, and what the single steady_timer did.
#include <heartwheel/asio_wheel.hpp>

#include <asio/io_context.hpp>

#include <cstdio>
#include <memory>
#include <vector>

using namespace std::chrono_literals;

int main() {
    asio::io_context io;
    heartwheel::asio_wheel wheel(io.get_executor());
    constexpr int connections = 10000;
    int idle_fired = 0, heartbeats = 0;
    std::vector<heartwheel::timer_handle> idle;
    for (int i = 0; i < connections; ++i)
        idle.push_back(wheel.schedule_after(200ms, [&] { ++idle_fired; }));
    auto beat = wheel.schedule_every(50ms, [&] { ++heartbeats; });
    // Reads on the even connections for 150 ms push their idle deadline later (a touch: one store).
    auto reads = wheel.schedule_every(10ms, [&] {
        for (int i = 0; i < connections; i += 2) wheel.touch(idle[i].node(), wheel.now() + 200ms);
    });
    auto stop_reads = wheel.schedule_after(150ms, [&] { reads.cancel(); });
    auto stop_all = wheel.schedule_after(500ms, [&] { beat.cancel(); });
    io.run();
    const auto& s = wheel.stats();
    std::printf("idle timers fired: %d of %d (the %d touched ones fired later)\n", idle_fired, connections,
                connections / 2);
    std::printf("heartbeats: %d\n", heartbeats);
    std::printf("steady_timer: %llu wake-ups, %llu re-arms for %d timers\n",
                static_cast<unsigned long long>(s.wakeups), static_cast<unsigned long long>(s.rearms),
                connections + 4);
    return idle_fired == connections ? 0 : 1;
}
