// heartwheel/timing_wheel.hpp — the hierarchical timing wheel as a plain data structure.
//
// Time is counted in ticks since `start`. Level 0 has 512 slots of one tick; each of the 9 levels
// above has 64 slots, a slot of level L spanning 512 * 64^(L-1) ticks, so the wheel covers 63 bits
// of ticks, past max_tick() (below 2^63: years at any tick). Level 0 is wide because every level a timer passes through
// is a cascade it pays for: at a 1 ms tick, level 1 reaches 32.7 s, so the idle timeouts and
// heartbeats of a connection server (seconds to tens of seconds) cascade once, not twice. A timer
// with deadline d is filed at the level of the highest bit in which d differs from `elapsed` (the
// last processed tick), in the slot given by d's digit at that level. Each slot above level 0 keeps
// the timers due exactly at its start apart from the rest, and those fire before the rest cascade,
// so they do not wait for the cascade. Slots are pooled arrays of node pointers
// (detail/slot_pool.hpp): a slot is processed over contiguous memory, prefetching the nodes ahead.
// Occupancy is one flat bitmap over the slots in level order (8 words for level 0, one per level
// above), so the next slot is the lowest set bit of the first non-zero word.
// Invariants (check_invariants()):
//  - every filed timer has deadline > elapsed, shares elapsed's digits above its level, and sits in a
//    slot whose index is greater than elapsed's digit at that level — so a level never wraps, the
//    next slot of a level is the lowest set bit of its occupancy, and the next wake-up is the first
//    occupied slot of the lowest non-empty level (lower levels always come due first);
//  - a timer whose deadline is <= elapsed waits in the due store and fires on the next advance, in
//    deadline order (the store is sorted before it fires whenever an append broke its order);
//  - the occupancy bit of a slot is set iff it holds a timer; size() counts every pending timer;
//  - no timer is filed above top_level(), the level of max_tick()'s highest bit, nor at that level
//    past max_tick()'s digit (no deadline or elapsed exceeds max_tick()): the slot storage reserves
//    room for the stores that can be in use only.
// Processing a slot of level L > 0 re-files ("cascades") its timers to lower levels, so each timer is
// touched at most once per level and fires at the exact tick: never early, at most one tick late.
// A timer filed by schedule_exact() (a deadline inside the next tick, kept exactly) waits outside the
// slots, on a short list that each advance scans first; its deadline_ holds a mark no tick can be, so
// that any touch fails the lazy path and files it by its new deadline's tick (never early for it).
// touch() only stores a later deadline; the timer is re-filed when its old slot comes due (a
// schedule() into the slot of a deadline it was touched to leaves it there too).
#ifndef HEARTWHEEL_TIMING_WHEEL_HPP
#define HEARTWHEEL_TIMING_WHEEL_HPP

#include <heartwheel/clock.hpp>
#include <heartwheel/detail/slot_pool.hpp>
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

namespace detail {
/// The wheel's geometry: level 0 has 2^9 slots, every level above 2^6.
inline constexpr unsigned low_bits = 9, level_bits = 6;
/// The lowest bit of a level's digit.
constexpr unsigned level_shift(unsigned level) noexcept { return level == 0 ? 0 : low_bits + (level - 1) * level_bits; }
/// The level whose digit holds bit `bit` of a tick.
constexpr unsigned level_at_bit(unsigned bit) noexcept { return bit < low_bits ? 0 : (bit - low_bits) / level_bits + 1; }
/// The first slot of a level, slots being numbered in level order.
constexpr unsigned level_base(unsigned level) noexcept { return level == 0 ? 0 : (1u << low_bits) + (level - 1) * (1u << level_bits); }
/// The level of a slot numbered in level order.
constexpr unsigned level_of_slot(std::uint32_t slot) noexcept {
    return slot < (1u << low_bits) ? 0 : (slot - (1u << low_bits)) / (1u << level_bits) + 1;
}
/// Where a deadline is filed, by the highest bit in which it differs from the wheel's time: its
/// level's first slot number, the digit's shift, from how many trailing zero bits on a deadline is a
/// slot's start (the digit's shift; never at level 0, whose deadlines are not 0), and the digit's
/// mask. Eight bytes, so an entry is read straight from the bit's index.
struct level_of {
    std::uint16_t base;
    std::uint8_t shift;
    std::uint8_t start_zeros;
    std::uint32_t mask;
};
inline constexpr std::array<level_of, 64> level_of_bit = [] {
    std::array<level_of, 64> a{};
    for (unsigned bit = 0; bit < 64; ++bit) {
        const unsigned level = level_at_bit(bit), shift = level_shift(level);
        a[bit] = {static_cast<std::uint16_t>(level_base(level)), static_cast<std::uint8_t>(shift),
                  static_cast<std::uint8_t>(shift == 0 ? 64 : shift),
                  (level == 0 ? 1u << low_bits : 1u << level_bits) - 1};
    }
    return a;
}();
} // namespace detail

class timing_wheel {
public:
    static constexpr unsigned low_slots = 1u << detail::low_bits;         ///< level 0
    static constexpr unsigned slots_per_level = 1u << detail::level_bits; ///< each level above
    static constexpr unsigned levels = 10;
    static constexpr unsigned slot_count = low_slots + (levels - 1) * slots_per_level;
    static_assert(detail::level_shift(levels) == 63, "the levels hold every bit of a tick up to max_tick() (< 2^63)");
    static_assert(slot_count % 64 == 0, "the occupancy bitmap is whole words");

    explicit timing_wheel(time_point start, wheel_config config = {});
    /// Unlinks every pending timer (their state becomes cancelled); none of them fires.
    ~timing_wheel();
    timing_wheel(const timing_wheel&) = delete;
    timing_wheel& operator=(const timing_wheel&) = delete;

    // --- scheduling (O(1)) -----------------------------------------------------------------------
    /// Files `t` to fire at `deadline` (re-files it if already pending; a re-arm within the slot it is
    /// filed in, or within the slot of a deadline it was touched to, only stores the deadline). A
    /// deadline at or before the wheel's current time fires on the next advance. Throws
    /// std::system_error(errc::wheel_full or errc::wheel_stopped).
    void schedule(timer_node& t, time_point deadline) {
        // Not schedule_tick(tick_ceil(deadline)): GCC 12 then keeps the two apart (a call more).
        // tick_ceil() clamps already; clamping again saves GCC 12 an instruction on this path.
        const std::uint64_t d = clamp(tick_ceil(deadline));
        if (!place_inline(t, d)) schedule_general(t, d);
    }
    /// schedule() for a caller that keeps its deadlines in ticks (tick_ceil() of a time, plus a
    /// period in ticks, say): the same filing without the division that turns a time into a tick.
    void schedule_tick(timer_node& t, std::uint64_t deadline_tick) {
        const std::uint64_t d = clamp(deadline_tick);
        if (!place_inline(t, d)) schedule_general(t, d);
    }
    /// Files `t` to fire at the first advance whose time is at or past `deadline` itself instead of at
    /// the end of its tick, when the deadline falls inside the tick after the wheel's current one (a
    /// judgement that found its deadline not reached yet on the tick holding it, say). Such a timer
    /// waits outside the slots, in a short list each advance scans, and next_wakeup() returns its
    /// deadline when that is sooner than the next slot. Any other deadline is filed as schedule()
    /// files it, at its tick; so is the timer when touched (even to the same deadline) or re-armed.
    /// Throws as schedule() does.
    void schedule_exact(timer_node& t, time_point deadline);
    std::error_code try_schedule(timer_node& t, time_point deadline) noexcept;

    /// First firing at `first`, then every `period` (at least one tick), with the given policy.
    void schedule_periodic(periodic_timer& t, time_point first, duration period,
                           missed_tick policy = missed_tick::burst);

    /// Unlinks `t` if pending; returns whether it was. Its callback will not run.
    bool cancel(timer_node& t) noexcept {
        if (t.wheel_ != this) return false; // not pending here
        unlink(t);
        t.wheel_ = nullptr; // reads as cancelled (timer_node::state())
        if (--size_ == 0) [[unlikely]]
            emptied();
        return true;
    }

    /// Moves the deadline of `t`. Later than the current deadline: a single store, and the timer is
    /// re-filed lazily when its old slot comes due. Earlier, or not pending: a reschedule.
    /// Returns true if the timer was (re)filed, false if only its deadline was stored — so a driver
    /// knows whether it may need to wake earlier.
    bool touch(timer_node& t, time_point deadline);
    bool touch_tick(timer_node& t, std::uint64_t deadline_tick) {
        if (t.wheel_ == this && deadline_tick >= t.deadline_) { // pending here, pushed later
            t.deadline_ = clamp(deadline_tick);
            return false;
        }
        schedule_general(t, clamp(deadline_tick)); // out of line: the inline path stays one test and a store
        return true;
    }

    // --- time --------------------------------------------------------------------------------------
    /// Fires, in deadline order, every timer whose deadline is <= now (at most max_fires_per_advance
    /// of them). Returns how many fired. Time never goes backwards: an earlier `now` is treated as the
    /// current time; called from a callback, it does nothing. A timer scheduled by a callback with a deadline not after the tick being
    /// processed, or re-armed by its own callback with a deadline not after `now`, waits for the next
    /// advance (so a timer cannot fire twice in one advance on its own).
    std::size_t advance(time_point now);

    /// When the next slot or exact deadline (schedule_exact) comes due: the time to call advance()
    /// at. An earlier time than any real deadline is possible (a lazily touched timer, or a far slot
    /// whose timers cascade). nullopt when nothing is pending; the current time when timers are
    /// already due.
    std::optional<time_point> next_wakeup() const noexcept;
    /// The next slot's tick (exact deadlines aside).
    std::optional<std::uint64_t> next_wakeup_tick() const noexcept;
    /// The tick at which the slot holding `t` comes due (for an exact timer: the current tick).
    std::uint64_t filed_wakeup_tick(const timer_node& t) const noexcept;
    /// When `t` comes due as filed: its slot's time, or an exact timer's own deadline (what a driver
    /// arms its timer for).
    time_point filed_wakeup(const timer_node& t) const noexcept;
    bool has_due() const noexcept { return !pool_.empty(due_); }

    /// Stops the wheel: hands back every timer that never fired (now cancelled, none will run) and
    /// refuses new ones with errc::wheel_stopped. advance() does nothing afterwards.
    std::vector<timer_node*> stop();
    bool stopped() const noexcept { return stopped_; }

    // --- queries -------------------------------------------------------------------------------------
    /// Deadlines are clamped to this tick: the last one whose time fits steady_clock (about 146 years
    /// from start at a 1 ns tick, and as far at any longer tick).
    std::uint64_t max_tick() const noexcept { return max_tick_; }
    /// The highest level a timer can be filed at: that of max_tick()'s highest bit.
    unsigned top_level() const noexcept;
    /// The last slot of top_level() a timer can be filed in: max_tick()'s digit there.
    std::uint64_t top_index() const noexcept;
    std::size_t size() const noexcept { return size_; }
    /// Bytes of slot storage the wheel holds (pooled: used and free), besides the wheel object itself.
    std::size_t storage_bytes() const noexcept { return pool_.bytes(); }
    /// Of storage_bytes(), what the wheel has touched: the chunks handed out so far (the rest of the
    /// reservation is address space it has not used; detail/slot_pool.hpp).
    std::size_t storage_touched_bytes() const noexcept { return pool_.touched_bytes(); }
    bool empty() const noexcept { return size_ == 0; }
    const wheel_config& config() const noexcept { return config_; }
    duration tick() const noexcept { return config_.tick; }
    time_point start() const noexcept { return start_; }
    /// The last processed tick, and its time.
    std::uint64_t elapsed_tick() const noexcept { return elapsed_; }
    time_point now() const noexcept { return time_of(elapsed_); }
    /// The real deadline of `t` (after any touch), rounded up to its tick; a pending exact timer's
    /// (schedule_exact) own deadline.
    time_point deadline(const timer_node& t) const noexcept {
        if (t.deadline_ == exact_mark) [[unlikely]]
            return exact_[t.pos_].at;
        return time_of(t.deadline_);
    }
    /// Time left until `t` fires, zero if due or not pending.
    duration remaining(const timer_node& t, time_point now) const noexcept;

    /// Tick conversions: a deadline rounds up (never early), a current time rounds down.
    std::uint64_t tick_ceil(time_point t) const noexcept {
        std::int64_t ns = 0;
        if (__builtin_sub_overflow(t.time_since_epoch().count(), start_.time_since_epoch().count(), &ns)) [[unlikely]]
            return t < start_ ? 0 : max_tick_;
        if (ns <= 0) return 0;
        const std::int64_t step = config_.tick.count();
        const auto ticks = static_cast<std::uint64_t>(ns / step + (ns % step != 0 ? 1 : 0));
        return ticks < max_tick_ ? ticks : max_tick_;
    }
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
        std::uint32_t slot() const noexcept { return detail::level_base(level) + index; }
    };
    // Stores: slot (level, index) is store level_base(level) + index; the timers due exactly at the
    // start of a slot above level 0 are in its start store, the slot's number + start_offset; then the
    // two due stores, which swap roles when an advance fires one of them.
    static constexpr std::uint32_t start_stores = slot_count; ///< the first start store
    static constexpr std::uint32_t start_offset = slot_count - low_slots;
    static constexpr std::uint32_t due_a = start_stores + (slot_count - low_slots);
    static constexpr std::size_t store_count = due_a + 2;
    static constexpr std::uint32_t no_store = 0xffff;
    /// The slot_ of a timer in exact_ (not a store of the pool: its pos_ indexes exact_).
    static constexpr std::uint32_t exact_slot = 0xfffe;
    /// The deadline_ of a timer in exact_, untouched: above any tick (max_tick_ < it), so touch_tick's
    /// lazy path (a later tick only stores it) never applies and any touch re-files the timer. A touch
    /// to exactly this value is stored; the timer is then filed by max_tick_ when released.
    static constexpr std::uint64_t exact_mark = ~std::uint64_t{0};
    /// A timer filed by schedule_exact(), and its deadline.
    struct exact_entry {
        time_point at;
        timer_node* t;
    };
    using pool = detail::slot_pool<store_count>;
    /// The slot a slot store or start store belongs to.
    static constexpr std::uint32_t slot_of_store(std::uint32_t store) noexcept {
        return store >= start_stores ? store - start_offset : store;
    }
    /// The bits below a slot store's digit, for the slots of levels 1 and up; 0 for the other stores
    /// (a level-0 slot, a slot's start, the due stores), where place_inline never leaves a timer.
    static constexpr std::array<std::uint64_t, store_count> below_digit = [] {
        std::array<std::uint64_t, store_count> a{};
        for (std::uint32_t s = low_slots; s < start_stores; ++s)
            a[s] = (std::uint64_t{1} << detail::level_shift(detail::level_of_slot(s))) - 1;
        return a;
    }();

    /// The outcome of place(); an error_code is only built on the (cold) failure paths.
    enum class placed : std::uint8_t { ok, full, stopped };
    static std::error_code to_error(placed p) noexcept;
    static void check(placed p) {
        if (p != placed::ok) [[unlikely]]
            throw_placed(p);
    }
    [[noreturn]] static void throw_placed(placed p);

    std::uint64_t clamp(std::uint64_t tick) const noexcept { return tick < max_tick_ ? tick : max_tick_; }
    /// Every schedule goes through place(): files `t` at tick `d` (<= max_tick_), or, when it is
    /// pending here and `d` maps to the store it is already in, only stores the deadline.
    placed place(timer_node& t, std::uint64_t d) noexcept { return place_inline(t, d) ? placed::ok : place_general(t, d); }
    /// The two common cases, inline and calling nothing (so the hot path needs no stack frame): a
    /// timer not pending anywhere, filed later than now with room to spare; a re-arm that stays in
    /// its store. False, having changed nothing, for every other case.
    [[gnu::always_inline]] bool place_inline(timer_node& t, std::uint64_t d) noexcept {
        if (t.wheel_ == nullptr) {
            // d > target_ (never below elapsed_) also keeps off this path a timer whose callback
            // runs now and re-arms it due within the advance: place_general files it as due.
            if (size_ < limit_ && d > target_) [[likely]] {
                t.wheel_ = this;
                t.deadline_ = d;
                t.flags_ = 0;
                t.state_ = timer_state::pending;
                ++size_;
                file_later(t);
                return true;
            }
        } else if (t.wheel_ == this && t.slot_ < slow_from_) {
            // Nothing to move when `d` shares every digit from the store's level up with the timer's
            // deadline and is not a slot's start (a re-arm a little later usually does, above level
            // 0): the timer is in d's store, or — touched — in an earlier one, which re-files it when
            // it comes due; and d is later than elapsed_, as every deadline filed at that level is.
            // Not during a walk (slow_from_ is 0 then), where it may have to wait in the due store.
            const std::uint64_t below = below_digit[t.slot_];
            if (((d ^ t.deadline_) & ~below) == 0 && (d & below) != 0) {
                t.deadline_ = d;
                t.flags_ = 0;
                return true;
            }
        }
        return false;
    }
    /// Any placement (place()); throws on failure. The out-of-line tail of schedule() and touch().
    void schedule_general(timer_node& t, std::uint64_t d);
    placed place_general(timer_node& t, std::uint64_t d) noexcept;
    placed claim(timer_node& t, std::uint64_t d) noexcept;
    placed claim_foreign(timer_node& t, std::uint64_t d) noexcept;
    placed make_room() noexcept;
    /// Files a timer that is due, or re-armed by its own callback (which waits if due by the target).
    void file_now(timer_node& t) noexcept;

    /// Files a pending timer whose deadline is later than elapsed_.
    [[gnu::always_inline]] void file_later(timer_node& t) noexcept { file_later(t, pool_.entries()); }
    [[gnu::always_inline]] void file_later(timer_node& t, timer_node** entries) noexcept {
        const std::uint64_t d = t.deadline_;
        const auto& l = detail::level_of_bit[63 - static_cast<unsigned>(__builtin_clzll(elapsed_ ^ d))];
        const auto slot = l.base + (static_cast<std::uint32_t>(d >> l.shift) & l.mask);
        file_in(slot, static_cast<std::uint8_t>(__builtin_ctzll(d)) >= l.start_zeros ? slot + start_offset : slot, t, entries);
    }
    /// Files `t` in `store`, which is `slot` or the slot's start store. A store that was empty takes
    /// its first entry in a new chunk, so the slot is marked occupied there, out of line (once per 32
    /// filings at most), and the common filing touches no bitmap: a slot's bit is set whenever one of
    /// its stores holds a timer, because an entry never lands in an empty store any other way.
    [[gnu::always_inline]] void file_in(std::uint32_t slot, std::uint32_t store, timer_node& t, timer_node** entries) noexcept {
        if (!pool_.push_in_chunk(entries, store, t)) [[unlikely]]
            file_in_new_chunk(slot, store, t);
    }
    [[gnu::noinline]] void file_in_new_chunk(std::uint32_t slot, std::uint32_t store, timer_node& t) noexcept {
        occupied_[slot / 64] |= std::uint64_t{1} << (slot % 64);
        pool_.push_in_new_chunk(store, t);
    }
    void push_due(timer_node& t) noexcept;
    [[gnu::always_inline]] void unlink(timer_node& t) noexcept {
        if (t.slot_ >= slow_from_) [[unlikely]] {
            unlink_special(t);
            return;
        }
        if (pool_.remove(t)) [[unlikely]]
            slot_emptied(t.slot_);
    }
    void unlink_special(timer_node& t) noexcept;
    void unlink_exact(timer_node& t) noexcept;
    void release_exact(time_point now) noexcept;
    void slot_emptied(std::uint32_t store) noexcept;
    void emptied() noexcept {
        if (empty_hook_ != nullptr && !advancing_) empty_hook_(empty_context_);
    }
    std::uint64_t slot_start(unsigned level, unsigned index) const noexcept;
    std::optional<slot_ref> next_slot() const noexcept;
    [[gnu::always_inline]] void fire(timer_node& t);
    void rearm_periodic(periodic_timer& t) noexcept;
    bool fire_due_batch();
    void sort_store(std::uint32_t store);
    template <unsigned From>
    bool walk(std::uint32_t store);
    /// Where a walk is: the pool's storage (re-read after a callback), the entry, the end of the run.
    struct walk_cursor {
        timer_node** base;
        timer_node** at;
        timer_node** stop;
        void rebase(timer_node** to) noexcept {
            at = to + (at - base);
            stop = to + (stop - base);
            base = to;
        }
    };
    template <unsigned From>
    [[gnu::always_inline]] bool visit_entry(walk_cursor& c, std::uint64_t now);
    void finish_walk() noexcept;
    struct walk_state {
        std::vector<std::uint32_t> chunks; ///< the walked store's chunks, first to last
        std::size_t ci = 0;                ///< the chunk being walked
        std::uint32_t end = 0;             ///< one past the store's last entry
        /// The entry being walked, as a pointer into the pool's storage at `base` (a callback that
        /// grows the pool leaves both stale, which still give the entry's index).
        timer_node** base = nullptr;
        timer_node** at = nullptr;
        std::uint32_t e() const noexcept { return static_cast<std::uint32_t>(at - base); }
    };
    bool process_slot(const slot_ref& s);
    void requeue(std::uint32_t store) noexcept;
    bool budget_left() const noexcept { return fired_ < config_.max_fires_per_advance; }


    wheel_config config_;
    time_point start_;
    std::uint64_t max_tick_ = 0;
    std::uint64_t elapsed_ = 0;
    std::uint64_t target_ = 0;
    std::size_t size_ = 0;
    std::size_t limit_ = 0;      ///< size_ below this needs no check: min(max_pending, pool room)
    std::size_t fired_ = 0;
    timer_node* firing_ = nullptr; ///< whose callback runs now
    bool advancing_ = false;
    bool stopped_ = false;
    bool due_unsorted_ = false; ///< an append to the due store came before its latest deadline
    std::uint32_t due_ = due_a;
    std::uint32_t batch_ = no_store; ///< the store being walked (cancels leave tombstones in it)
    std::uint32_t slow_from_ = due_a; ///< unlink() takes its slow path from this store on (0 during a walk)
    std::uint64_t due_max_ = 0;
    walk_state walk_;
    std::vector<exact_entry> exact_; ///< timers of schedule_exact(), in no order
    std::vector<timer_node*> sort_scratch_;
    std::vector<std::uint32_t> chunk_scratch_;
    void (*empty_hook_)(void*) = nullptr;
    void* empty_context_ = nullptr;
    std::array<std::uint64_t, slot_count / 64> occupied_{}; ///< bit s % 64 of word s / 64: slot s holds a timer
    pool pool_;
};

} // namespace heartwheel

#endif
