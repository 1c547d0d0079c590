// discarded_handle.cpp — must NOT compile (ctest: WILL_FAIL): dropping the handle that
// schedule_after returns cancels the timer at once, and [[nodiscard]] makes the compiler say so.
#include <heartwheel/asio_wheel.hpp>

#include <asio/io_context.hpp>

void arm_and_lose(heartwheel::asio_wheel& wheel) {
    wheel.schedule_after(std::chrono::seconds(1), [] {}); // warning: ignoring return value
}
