// heartwheel/timer_node.hpp — the intrusive timer that a user object embeds.
//
// A timer_node carries what the wheel needs to find it again (its wheel, deadline in ticks, the slot
// it is filed in and its entry there), so scheduling allocates nothing per timer: the wheel's slots are
// pooled arrays of node pointers (detail/slot_pool.hpp). Derive from it and override on_expire(), or
// embed a member_timer<T, &T::method>. A node belongs to at most one wheel at a time; destroying a
// pending node unlinks it. All calls are for the wheel's own thread.
//
// Layout (32 bytes on 64-bit): vptr, the wheel, the deadline tick, the index of its entry in the
// wheel's slot storage, the slot (store) it is filed in, its state and flags. With its 8-byte entry a
// live timer costs the wheel about 41 bytes.
#ifndef HEARTWHEEL_TIMER_NODE_HPP
#define HEARTWHEEL_TIMER_NODE_HPP

#include <cstddef>
#include <cstdint>

namespace heartwheel {

class timing_wheel;
namespace detail {
template <std::size_t Stores>
class slot_pool;
} // namespace detail

/// What a timer is doing now (Netty's Timeout has the same three observable outcomes).
enum class timer_state : std::uint8_t {
    idle,      ///< never scheduled
    pending,   ///< filed in a wheel, will fire unless cancelled
    expired,   ///< fired (a periodic timer is pending again after each firing)
    cancelled, ///< cancelled, or handed back by timing_wheel::stop()
};

class timer_node {
public:
    timer_node() noexcept = default;
    timer_node(const timer_node&) = delete;
    timer_node& operator=(const timer_node&) = delete;

    /// Destroying a pending timer unlinks it; it never fires afterwards.
    virtual ~timer_node();

    timer_state state() const noexcept {
        if (wheel_ != nullptr) return timer_state::pending;
        return state_ == timer_state::pending ? timer_state::cancelled : state_;
    }
    bool pending() const noexcept { return wheel_ != nullptr; }
    bool expired() const noexcept { return state_ == timer_state::expired; }
    bool cancelled() const noexcept { return state() == timer_state::cancelled; }

    /// Cancels the timer if it is pending; returns whether it was. Its callback will not run.
    bool cancel() noexcept;

    /// The deadline in wheel ticks (meaningful while pending or after it fired; while it waits for an
    /// exact deadline, schedule_exact, a mark above every tick: the wheel's deadline() has its time).
    std::uint64_t deadline_tick() const noexcept { return deadline_; }

    /// The wheel the node is pending in, or nullptr (a node that fired or was cancelled is in none).
    timing_wheel* wheel() const noexcept { return wheel_; }

protected:
    /// Called by the wheel when the deadline has passed. It may schedule, cancel or reschedule any
    /// timer, this one included, and may destroy this node.
    virtual void on_expire() = 0;

private:
    friend class timing_wheel;
    template <std::size_t Stores>
    friend class detail::slot_pool;

    timing_wheel* wheel_ = nullptr; ///< set iff pending: one compare answers "pending in this wheel?"
    // What happened last: scheduled (`pending`), fired (`expired`), or refused / handed back by
    // stop() (`cancelled`). A cancel only clears wheel_ (one store fewer on the hot path), so
    // `pending` with no wheel reads as cancelled: state() is the truth, this field is not.
    std::uint64_t deadline_ = 0;
    std::uint32_t pos_ = 0;  ///< its entry in the wheel's slot storage, while pending
    std::uint16_t slot_ = 0; ///< the store that entry is in, while pending
    timer_state state_ = timer_state::idle;
    std::uint8_t flags_ = 0;
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
