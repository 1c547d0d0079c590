// heartwheel/timing_wheel.hpp — the hierarchical timing wheel as a plain data structure.
//
// Time is counted in ticks since `start`. There are 11 levels of 64 slots; a slot of level L spans
// 64^L ticks, so the wheel covers the whole 64-bit tick range (years at any tick). A timer with
// deadline d is filed at the level of the highest bit in which d differs from `elapsed` (the last
// processed tick), in the slot given by d's digit at that level. Invariants (check_invariants()):
//  - every filed timer has deadline > elapsed, shares elapsed's digits above its level, and sits in a
//    slot whose index is greater than elapsed's digit at that level — so a level never wraps, the
//    next slot of a level is the lowest set bit of its 64-bit occupancy mask, and the next wake-up is
//    the first occupied slot of the lowest non-empty level (lower levels always come due first);
//  - a timer whose deadline is <= elapsed waits in the due list and fires on the next advance, in
//    deadline order (the list is sorted before it fires whenever an append broke its order);
//  - the occupancy bit of a slot is set iff its list is non-empty; size() counts every pending timer.
// Processing a slot of level L > 0 re-files ("cascades") its timers to lower levels, so each timer is
// touched at most once per level and fires at the exact tick: never early, at most one tick late.
// touch() only stores a later deadline; the timer is re-filed when its old slot comes due.
#ifndef HEARTWHEEL_TIMING_WHEEL_HPP
#define HEARTWHEEL_TIMING_WHEEL_HPP

#include <heartwheel/clock.hpp>
#include <heartwheel/detail/list_hook.hpp>
#include <heartwheel/periodic_timer.hpp>
#include <heartwheel/timer_node.hpp>
#include <heartwheel/wheel_config.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <system_error>
#include <vector>

namespace heartwheel {

class timing_wheel {
public:
    static constexpr unsigned slot_bits = 6;
    static constexpr unsigned slots_per_level = 1u << slot_bits;
    static constexpr unsigned levels = 11;

    explicit timing_wheel(time_point start, wheel_config config = {});
    /// Unlinks every pending timer (their state becomes cancelled); none of them fires.
    ~timing_wheel();
    timing_wheel(const timing_wheel&) = delete;
    timing_wheel& operator=(const timing_wheel&) = delete;

    // --- scheduling (O(1)) -----------------------------------------------------------------------
    /// Files `t` to fire at `deadline` (re-files it if already pending). A deadline at or before the
    /// wheel's current time fires on the next advance. Throws std::system_error(errc::wheel_full or
    /// errc::wheel_stopped).
    void schedule(timer_node& t, time_point deadline);
    std::error_code try_schedule(timer_node& t, time_point deadline) noexcept;
    /// Same, with the deadline already in ticks (the hot path of net/).
    std::error_code try_schedule_tick(timer_node& t, std::uint64_t deadline_tick) noexcept;

    /// First firing at `first`, then every `period` (at least one tick), with the given policy.
    void schedule_periodic(periodic_timer& t, time_point first, duration period,
                           missed_tick policy = missed_tick::burst);

    /// Unlinks `t` if pending; returns whether it was. Its callback will not run.
    bool cancel(timer_node& t) noexcept;

    /// Moves the deadline of `t`. Later than the current deadline: a single store, and the timer is
    /// re-filed lazily when its old slot comes due. Earlier, or not pending: a reschedule.
    /// Returns true if the timer was (re)filed, false if only its deadline was stored — so a driver
    /// knows whether it may need to wake earlier.
    bool touch(timer_node& t, time_point deadline);
    bool touch_tick(timer_node& t, std::uint64_t deadline_tick) {
        if (t.state_ == timer_state::pending && t.wheel_ == this && deadline_tick >= t.deadline_) {
            t.deadline_ = deadline_tick < max_tick_ ? deadline_tick : max_tick_;
            return false;
        }
        check(place(t, deadline_tick));
        return true;
    }

    // --- time --------------------------------------------------------------------------------------
    /// Fires, in deadline order, every timer whose deadline is <= now (at most max_fires_per_advance
    /// of them). Returns how many fired. Time never goes backwards: an earlier `now` is treated as the
    /// current time. A timer scheduled by a callback with a deadline not after the tick being
    /// processed, or re-armed after it fired in this advance, waits for the next advance.
    std::size_t advance(time_point now);

    /// When the next slot comes due: the time to call advance() at. An earlier time than any real
    /// deadline is possible (a lazily touched timer, or a far slot whose timers cascade). nullopt
    /// when nothing is pending; the current time when timers are already due.
    std::optional<time_point> next_wakeup() const noexcept;
    std::optional<std::uint64_t> next_wakeup_tick() const noexcept;
    /// The tick at which the slot holding `t` comes due (what a driver arms its timer for).
    std::uint64_t filed_wakeup_tick(const timer_node& t) const noexcept;
    bool has_due() const noexcept { return !due_.empty(); }

    /// Stops the wheel: hands back every timer that never fired (now cancelled, none will run) and
    /// refuses new ones with errc::wheel_stopped. advance() does nothing afterwards.
    std::vector<timer_node*> stop();
    bool stopped() const noexcept { return stopped_; }

    // --- queries -------------------------------------------------------------------------------------
    /// Deadlines are clamped to this tick: the last one whose time fits steady_clock (about 146 years
    /// from start at a 1 ns tick, and as far at any longer tick).
    std::uint64_t max_tick() const noexcept { return max_tick_; }
    std::size_t size() const noexcept { return size_; }
    bool empty() const noexcept { return size_ == 0; }
    const wheel_config& config() const noexcept { return config_; }
    duration tick() const noexcept { return config_.tick; }
    time_point start() const noexcept { return start_; }
    /// The last processed tick, and its time.
    std::uint64_t elapsed_tick() const noexcept { return elapsed_; }
    time_point now() const noexcept { return time_of(elapsed_); }
    /// The real deadline of `t` (after any touch), rounded up to its tick.
    time_point deadline(const timer_node& t) const noexcept { return time_of(t.deadline_); }
    /// Time left until `t` fires, zero if due or not pending.
    duration remaining(const timer_node& t, time_point now) const noexcept;

    /// Tick conversions: a deadline rounds up (never early), a current time rounds down.
    std::uint64_t tick_ceil(time_point t) const noexcept;
    std::uint64_t tick_floor(time_point t) const noexcept;
    time_point time_of(std::uint64_t tick) const noexcept {
        return saturating_add(start_, config_.tick * static_cast<std::int64_t>(tick));
    }

    /// Called when a cancel (from any path: wheel, node, handle, destructor) leaves the wheel empty,
    /// so a driver can disarm its clock. One hook per wheel; nullptr removes it.
    void set_empty_hook(void (*hook)(void*), void* context) noexcept {
        empty_hook_ = hook;
        empty_context_ = context;
    }

    /// Checks every invariant of the structure; throws std::logic_error naming the broken one. O(n).
    void check_invariants() const;

private:
    struct slot_ref {
        unsigned level;
        unsigned index;
        std::uint64_t start;
    };
    static constexpr std::uint16_t due_slot = levels * slots_per_level;

    /// The outcome of place(); an error_code is only built on the (cold) failure paths.
    enum class placed : std::uint8_t { ok, full, stopped };
    static std::error_code to_error(placed p) noexcept;
    static void check(placed p) {
        if (p != placed::ok) [[unlikely]]
            throw_placed(p);
    }
    [[noreturn]] static void throw_placed(placed p);
    /// Every schedule goes through here: files `t` at `deadline_tick`, or, when it is pending here
    /// and the new deadline maps to the slot it is already in, only stores the deadline.
    placed place(timer_node& t, std::uint64_t deadline_tick) noexcept;
    std::uint16_t slot_for(std::uint64_t deadline_tick) const noexcept;
    static timer_node& node_of(detail::list_hook* h) noexcept { return static_cast<timer_node&>(*h); }
    detail::list_head& list_of(std::uint16_t slot) noexcept;
    void file(timer_node& t) noexcept;
    void push_due(timer_node& t) noexcept;
    void sort_due_batch(detail::list_head& batch);
    void unlink(timer_node& t) noexcept;
    std::optional<slot_ref> next_slot() const noexcept;
    void fire(timer_node& t);
    void rearm_periodic(periodic_timer& t) noexcept;
    bool fire_due_batch();
    bool process_slot(const slot_ref& s);
    void requeue_slot_rest(detail::list_head& slot) noexcept;
    bool budget_left() const noexcept { return fired_ < config_.max_fires_per_advance; }

    wheel_config config_;
    time_point start_;
    std::uint64_t max_tick_ = 0;
    std::uint64_t elapsed_ = 0;
    std::uint64_t target_ = 0;
    std::size_t size_ = 0;
    std::size_t fired_ = 0;
    std::uint32_t generation_ = 0;
    bool advancing_ = false;
    bool stopped_ = false;
    bool due_unsorted_ = false; ///< an append to due_ came before its tail's deadline
    std::vector<timer_node*> sort_scratch_;
    void (*empty_hook_)(void*) = nullptr;
    void* empty_context_ = nullptr;
    std::array<std::uint64_t, levels> occupied_{};
    std::array<std::array<detail::list_head, slots_per_level>, levels> slots_;
    detail::list_head due_;
};

} // namespace heartwheel

#endif
