// heartwheel/timer_node.hpp — the intrusive timer that a user object embeds.
//
// A timer_node carries everything the wheel needs (list links, deadline in ticks, where it is filed),
// so scheduling allocates nothing. Derive from it and override on_expire(), or embed a
// member_timer<T, &T::method>. A node belongs to at most one wheel at a time; destroying a pending node
// unlinks it. All calls are for the wheel's own thread.
//
// Layout (48 bytes on 64-bit): vptr, two links, the wheel, the deadline tick, the slot it is filed in,
// its state and flags, and the number of the advance in which it last fired (used so that a timer that
// re-arms itself from its own callback cannot fire twice in one advance).
#ifndef HEARTWHEEL_TIMER_NODE_HPP
#define HEARTWHEEL_TIMER_NODE_HPP

#include <heartwheel/detail/list_hook.hpp>

#include <cstdint>

namespace heartwheel {

class timing_wheel;

/// What a timer is doing now (Netty's Timeout has the same three observable outcomes).
enum class timer_state : std::uint8_t {
    idle,      ///< never scheduled
    pending,   ///< filed in a wheel, will fire unless cancelled
    expired,   ///< fired (a periodic timer is pending again after each firing)
    cancelled, ///< cancelled, or handed back by timing_wheel::stop()
};

class timer_node : private detail::list_hook {
public:
    timer_node() noexcept = default;
    timer_node(const timer_node&) = delete;
    timer_node& operator=(const timer_node&) = delete;

    /// Destroying a pending timer unlinks it; it never fires afterwards.
    virtual ~timer_node();

    timer_state state() const noexcept { return state_; }
    bool pending() const noexcept { return state_ == timer_state::pending; }
    bool expired() const noexcept { return state_ == timer_state::expired; }
    bool cancelled() const noexcept { return state_ == timer_state::cancelled; }

    /// Cancels the timer if it is pending; returns whether it was. Its callback will not run.
    bool cancel() noexcept;

    /// The deadline in wheel ticks (meaningful while pending or after it fired).
    std::uint64_t deadline_tick() const noexcept { return deadline_; }

    /// The wheel the node was last scheduled on, or nullptr.
    timing_wheel* wheel() const noexcept { return wheel_; }

protected:
    /// Called by the wheel when the deadline has passed. It may schedule, cancel or reschedule any
    /// timer, this one included, and may destroy this node.
    virtual void on_expire() = 0;

private:
    friend class timing_wheel;

    timing_wheel* wheel_ = nullptr;
    std::uint64_t deadline_ = 0;
    std::uint16_t slot_ = 0;
    timer_state state_ = timer_state::idle;
    std::uint8_t flags_ = 0;
    std::uint32_t fired_in_ = 0;
};

/// A node that calls a member function of the object that embeds it:
///   struct conn { heartwheel::member_timer<conn, &conn::on_idle> idle{*this}; void on_idle(); };
template <class T, void (T::*Method)()>
class member_timer final : public timer_node {
public:
    explicit member_timer(T& owner) noexcept : owner_(&owner) {}

private:
    void on_expire() override { (owner_->*Method)(); }
    T* owner_;
};

} // namespace heartwheel

#endif
