// heartwheel/timer_handle.hpp — an owning handle to a callback timer (Netty's Timeout, the C++ way).
//
// The handle owns one heap node holding a std::function, allocated once when the handle is made and
// reused by every schedule, so re-arming it allocates nothing. Destroying the handle cancels the timer.
// The callback may cancel, reschedule or destroy its own handle.
#ifndef HEARTWHEEL_TIMER_HANDLE_HPP
#define HEARTWHEEL_TIMER_HANDLE_HPP

#include <heartwheel/clock.hpp>
#include <heartwheel/periodic_timer.hpp>
#include <heartwheel/timing_wheel.hpp>

#include <functional>
#include <memory>

namespace heartwheel {
namespace detail {

class callback_timer final : public periodic_timer {
public:
    explicit callback_timer(std::function<void()> fn) : fn_(std::move(fn)) {}
    ~callback_timer() override;

private:
    void on_expire() override;
    std::function<void()> fn_;
    bool* destroyed_ = nullptr; // set while the callback runs, so it may destroy its own handle
};

} // namespace detail

/// Owns its timer: a discarded handle cancels the timer at once, so every call that returns one is
/// [[nodiscard]] (the class is: a compiler warns wherever a returned handle is dropped).
class [[nodiscard]] timer_handle {
public:
    timer_handle() = default;
    explicit timer_handle(std::function<void()> callback)
        : timer_(std::make_unique<detail::callback_timer>(std::move(callback))) {}

    /// Whether the handle holds a timer at all.
    explicit operator bool() const noexcept { return timer_ != nullptr; }

    timer_state state() const noexcept { return timer_ ? timer_->state() : timer_state::idle; }
    bool pending() const noexcept { return timer_ && timer_->pending(); }
    bool expired() const noexcept { return timer_ && timer_->expired(); }
    bool cancelled() const noexcept { return timer_ && timer_->cancelled(); }

    /// Cancels the timer if pending; returns whether it was.
    bool cancel() noexcept { return timer_ && timer_->cancel(); }

    /// The node, for the wheel's and the driver's node-based calls (schedule, touch, remaining).
    periodic_timer& node() noexcept { return *timer_; }
    const periodic_timer& node() const noexcept { return *timer_; }

private:
    std::unique_ptr<detail::callback_timer> timer_;
};

} // namespace heartwheel

#endif
