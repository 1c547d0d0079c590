// timing_wheel.cpp — filing, cascading and firing; see timing_wheel.hpp for the invariants.
//
// A store (a slot, a slot's start, or the due store) is processed by walking it front to back once it
// is detached: nothing can be filed into it meanwhile (a new deadline either is <= elapsed and goes to
// the due store, or differs from elapsed below the slot's level), and a callback's cancel of a timer
// still waiting in it leaves a tombstone, so the walk never misses or repeats an entry. The due store
// is fired in deadline order, swapped for the other due store first: timers re-armed by callbacks land
// in the fresh one and wait for the next advance. The walk keeps its position in a register and stores
// it only before a callback runs; a level-1 slot's timers go to level 0 by their low digit alone.
#include <heartwheel/error.hpp>
#include <heartwheel/timing_wheel.hpp>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace heartwheel {

namespace {
constexpr std::uint8_t flag_periodic = 1;
/// How many entries ahead a slot's walk prefetches nodes: enough misses in flight to cover memory latency.
constexpr std::uint32_t prefetch_distance = 12;

/// Calls f(entry) for every entry a walk has not reached yet (tombstones included).
template <class Pool, class Walk, class F>
void for_each_unwalked(const Walk& w, F f) {
    using pool = Pool;
    for (std::size_t ci = w.ci; ci < w.chunks.size(); ++ci) {
        const std::uint32_t first = w.chunks[ci] << pool::chunk_bits;
        const std::uint32_t at = w.e();
        const bool here = ci == w.ci && at >= first && at < first + pool::chunk_size;
        for (std::uint32_t e = here ? at : first; e < pool::chunk_end(w.chunks, ci, w.end); ++e) f(e);
    }
}
} // namespace

void wheel_config::validate() const {
    if (tick <= duration::zero())
        throw std::invalid_argument("wheel_config.tick must be > 0 (got " +
                                    std::to_string(tick.count()) + " ns)");
    if (max_pending == 0) throw std::invalid_argument("wheel_config.max_pending must be >= 1");
    if (max_fires_per_advance == 0)
        throw std::invalid_argument("wheel_config.max_fires_per_advance must be >= 1");
}

timer_node::~timer_node() {
    if (wheel_ != nullptr) wheel_->cancel(*this);
}

bool timer_node::cancel() noexcept { return wheel_ != nullptr && wheel_->cancel(*this); }

timing_wheel::timing_wheel(time_point start, wheel_config config)
    : config_(config), start_(start) {
    config_.validate();
    const auto ticks_in_range = static_cast<std::uint64_t>(duration::max().count() / 2 / config_.tick.count());
    max_tick_ = std::min<std::uint64_t>(std::uint64_t{1} << 62, ticks_in_range);
    // No deadline or elapsed_ exceeds max_tick_, so no timer is filed above the level of its highest
    // bit, nor at that level in a slot past max_tick_'s digit there: the pool reserves room for the
    // stores that can be in use (those slots and their start stores, every level's below, and the
    // two due stores), not for all of them.
    const unsigned top = top_level();
    const auto top_slots = static_cast<std::uint32_t>(top_index()) + 1;
    const std::uint32_t below = detail::level_base(top); // the slots of the levels below the top
    const std::uint32_t below_starts = top > 0 ? below - low_slots : 0;
    pool_.reach(below + below_starts + (top > 0 ? 2 : 1) * top_slots + 2);
}

unsigned timing_wheel::top_level() const noexcept {
    return detail::level_at_bit(static_cast<unsigned>(63 - __builtin_clzll(max_tick_ | 1)));
}

// The last slot of the top level a timer can be filed in: max_tick_'s digit there.
std::uint64_t timing_wheel::top_index() const noexcept { return max_tick_ >> detail::level_shift(top_level()); }

timing_wheel::~timing_wheel() { stop(); }

std::error_code timing_wheel::to_error(placed p) noexcept {
    if (p == placed::ok) return {};
    return p == placed::full ? make_error_code(errc::wheel_full) : make_error_code(errc::wheel_stopped);
}

void timing_wheel::throw_placed(placed p) { throw std::system_error(to_error(p)); }

// The hot check in place() is size_ < limit_; this decides what a miss means: the cap on pending
// timers, or only that the slot storage must grow first (it never grows anywhere else).
timing_wheel::placed timing_wheel::make_room() noexcept {
    if (stopped_) return placed::stopped;
    if (size_ >= config_.max_pending) return placed::full;
    // The chunks a walk has not reached yet are still held (their timers may be cancelled meanwhile).
    const std::size_t held = batch_ == no_store ? 0 : (walk_.chunks.size() - walk_.ci) * pool::chunk_size;
    if (!pool_.reserve(size_ + held + 1)) return placed::full;
    const std::size_t room = pool_.timers() > held ? pool_.timers() - held : 0;
    limit_ = std::min(config_.max_pending, room);
    return size_ < limit_ ? placed::ok : placed::full;
}

void timing_wheel::file_now(timer_node& t) noexcept {
    if (t.deadline_ <= target_) push_due(t); // elapsed_ <= target_ always
    else file_later(t);
}

timing_wheel::placed timing_wheel::claim_foreign(timer_node& t, std::uint64_t d) noexcept {
    t.wheel_->cancel(t);
    return claim(t, d);
}

void timing_wheel::schedule_general(timer_node& t, std::uint64_t d) { check(place(t, d)); }

// Makes `t` pending here with deadline `d`, taken out of wherever it was pending, without filing it.
timing_wheel::placed timing_wheel::claim(timer_node& t, std::uint64_t d) noexcept {
    if (t.wheel_ != nullptr) { // pending (a re-arm that stays in its store was handled by place_inline)
        if (t.wheel_ != this) [[unlikely]]
            return claim_foreign(t, d);
        unlink(t);
        --size_;
    }
    // A stopped wheel has limit_ == 0, so make_room() also answers "stopped".
    if (size_ >= limit_)
        if (const placed p = make_room(); p != placed::ok) {
            t.state_ = timer_state::cancelled;
            t.wheel_ = nullptr;
            return p;
        }
    t.wheel_ = this;
    t.deadline_ = d;
    t.state_ = timer_state::pending;
    t.flags_ = 0;
    ++size_;
    return placed::ok;
}

timing_wheel::placed timing_wheel::place_general(timer_node& t, std::uint64_t d) noexcept {
    if (const placed p = claim(t, d); p != placed::ok) return p;
    if (d <= elapsed_ || &t == firing_) file_now(t);
    else file_later(t);
    return placed::ok;
}

std::uint64_t timing_wheel::tick_floor(time_point t) const noexcept {
    const auto ns = saturating_sub(t, start_).count();
    if (ns <= 0) return 0;
    const auto ticks = static_cast<std::uint64_t>(ns / config_.tick.count());
    return ticks < max_tick_ ? ticks : max_tick_;
}

duration timing_wheel::remaining(const timer_node& t, time_point now) const noexcept {
    if (t.wheel_ != this) return duration::zero();
    const auto left = saturating_sub(deadline(t), now);
    return left > duration::zero() ? left : duration::zero();
}

void timing_wheel::push_due(timer_node& t) noexcept {
    if (t.deadline_ < due_max_) due_unsorted_ = true;
    else due_max_ = t.deadline_;
    pool_.push(due_, t);
}

// Out of the store being walked (it keeps its order: the walk skips the tombstone), or out of the due
// store (whose order the moved entry may break).
void timing_wheel::unlink_special(timer_node& t) noexcept {
    if (t.slot_ == exact_slot) {
        unlink_exact(t);
    } else if (t.slot_ == batch_) {
        pool_.tombstone(t);
    } else if (t.slot_ >= due_a) {
        pool_.remove(t);
        due_unsorted_ = true;
    } else if (pool_.remove(t)) {
        slot_emptied(t.slot_);
    }
}

// Leaves the timer with its deadline's tick (or the tick it was touched to) in deadline_.
void timing_wheel::unlink_exact(timer_node& t) noexcept {
    if (t.deadline_ == exact_mark) t.deadline_ = tick_ceil(exact_[t.pos_].at);
    const exact_entry last = exact_.back();
    exact_[t.pos_] = last;
    last.t->pos_ = t.pos_;
    exact_.pop_back();
}

void timing_wheel::schedule_exact(timer_node& t, time_point deadline) {
    const std::uint64_t d = clamp(tick_ceil(deadline));
    if (d != target_ + 1) { // not inside the next tick (target_ is the current one)
        schedule(t, deadline);
        return;
    }
    exact_.reserve(exact_.size() + 1); // may throw: nothing changed yet
    check(claim(t, d));
    t.deadline_ = exact_mark;
    t.slot_ = exact_slot;
    t.pos_ = static_cast<std::uint32_t>(exact_.size());
    exact_.push_back({deadline, &t});
}

// At the start of an advance: exact timers whose deadline has come join the due store, with their
// deadline rounded down to the advance's tick so that the batch fires them (a touch re-files a timer
// at once, but one touched to exact_mark itself is filed by max_tick_ here). Timers filed exact during
// this advance wait for the next one.
void timing_wheel::release_exact(time_point now) noexcept {
    for (std::size_t i = 0; i < exact_.size();) {
        const exact_entry e = exact_[i];
        if (e.at > now) {
            ++i;
            continue;
        }
        timer_node& t = *e.t;
        const bool touched = t.deadline_ != exact_mark;
        unlink_exact(t); // moves the last entry to i
        if (!touched && t.deadline_ > target_) t.deadline_ = target_;
        file_now(t);
    }
}

// A slot's store emptied by a removal: its occupancy bit goes when the slot's other store is empty too.
void timing_wheel::slot_emptied(std::uint32_t store) noexcept {
    const std::uint32_t slot = slot_of_store(store);
    if (pool_.empty(slot) && (slot < low_slots || pool_.empty(slot + start_offset)))
        occupied_[slot / 64] &= ~(std::uint64_t{1} << (slot % 64));
}

std::error_code timing_wheel::try_schedule(timer_node& t, time_point deadline) noexcept {
    return to_error(place(t, tick_ceil(deadline)));
}

void timing_wheel::schedule_periodic(periodic_timer& t, time_point first, duration period,
                                     missed_tick policy) {
    if (period < config_.tick)
        throw std::invalid_argument("periodic timer: period must be >= the wheel's tick");
    check(place(t, tick_ceil(first)));
    t.flags_ |= flag_periodic;
    t.period_ = static_cast<std::uint64_t>(period / config_.tick);
    t.policy_ = policy;
}

bool timing_wheel::touch(timer_node& t, time_point deadline) { return touch_tick(t, tick_ceil(deadline)); }

// The first tick of slot `index` of `level` in the wheel's current window (the digits above the level
// are elapsed_'s).
std::uint64_t timing_wheel::slot_start(unsigned level, unsigned index) const noexcept {
    const unsigned span_bits = detail::level_shift(level + 1); // the level's digit and those below it
    const std::uint64_t base = span_bits >= 64 ? 0 : elapsed_ & ~((std::uint64_t{1} << span_bits) - 1);
    return base + (std::uint64_t{index} << detail::level_shift(level));
}

std::uint64_t timing_wheel::filed_wakeup_tick(const timer_node& t) const noexcept {
    if (t.slot_ >= due_a) return elapsed_;
    const std::uint32_t slot = slot_of_store(t.slot_);
    const unsigned level = detail::level_of_slot(slot);
    return slot_start(level, slot - detail::level_base(level));
}

std::optional<timing_wheel::slot_ref> timing_wheel::next_slot() const noexcept {
    for (std::uint32_t word = 0; word < occupied_.size(); ++word) {
        if (occupied_[word] == 0) continue;
        const std::uint32_t slot = word * 64 + static_cast<std::uint32_t>(__builtin_ctzll(occupied_[word]));
        const unsigned level = detail::level_of_slot(slot), index = slot - detail::level_base(level);
        return slot_ref{level, index, slot_start(level, index)};
    }
    return std::nullopt;
}

std::optional<std::uint64_t> timing_wheel::next_wakeup_tick() const noexcept {
    if (!pool_.empty(due_)) return elapsed_;
    if (auto s = next_slot()) return s->start;
    return std::nullopt;
}

std::optional<time_point> timing_wheel::next_wakeup() const noexcept {
    std::optional<time_point> next;
    if (auto t = next_wakeup_tick()) next = time_of(*t);
    for (const exact_entry& e : exact_)
        if (!next || e.at < *next) next = e.at;
    return next;
}

time_point timing_wheel::filed_wakeup(const timer_node& t) const noexcept {
    if (t.slot_ == exact_slot) return exact_[t.pos_].at;
    return time_of(filed_wakeup_tick(t));
}

// Re-filed before the callback runs. A next deadline not after this advance's target waits in the due
// store: a periodic timer fires at most once per advance (missed_tick::burst catches up one a time).
void timing_wheel::rearm_periodic(periodic_timer& t) noexcept {
    const std::uint64_t period = t.period_;
    std::uint64_t next = t.deadline_ + period;
    if (t.policy_ == missed_tick::delay) next = target_ + period;
    else if (t.policy_ == missed_tick::skip && next <= target_)
        next = t.deadline_ + period * ((target_ - t.deadline_) / period + 1);
    t.deadline_ = next < max_tick_ ? next : max_tick_;
    t.state_ = timer_state::pending;
    t.wheel_ = this;
    ++size_;
    if (t.deadline_ <= target_) push_due(t);
    else file_later(t);
}

inline void timing_wheel::fire(timer_node& t) {
    // t is already out of its store; size_ still counts it.
    --size_;
    ++fired_;
    t.state_ = timer_state::expired;
    t.wheel_ = nullptr;
    if (t.flags_ & flag_periodic) rearm_periodic(static_cast<periodic_timer&>(t));
    firing_ = &t;
    t.on_expire();
    firing_ = nullptr;
}

// Sorts a due store by deadline (stable: equal deadlines keep their order), front to back.
void timing_wheel::sort_store(std::uint32_t store) {
    sort_scratch_.clear();
    pool_.for_each_entry(store, chunk_scratch_, [&](std::uint32_t e) { sort_scratch_.push_back(pool_.at(e)); });
    std::stable_sort(sort_scratch_.begin(), sort_scratch_.end(),
                     [](const timer_node* a, const timer_node* b) { return a->deadline_ < b->deadline_; });
    std::size_t k = 0;
    pool_.for_each_entry(store, chunk_scratch_, [&](std::uint32_t e) {
        pool_.put(e, sort_scratch_[k]);
        sort_scratch_[k++]->pos_ = e;
    });
    sort_scratch_.clear();
}

// Fires the due store as it was when the advance began, in deadline order. It is swapped for the other
// due store first, so what callbacks put there waits for the next advance. False if the budget ran out.
bool timing_wheel::fire_due_batch() {
    if (pool_.empty(due_)) return true;
    const std::uint32_t batch = due_;
    if (due_unsorted_) sort_store(batch);
    due_ = batch ^ 1u;
    due_max_ = 0;
    due_unsorted_ = false;
    return walk<0>(batch);
}

// One entry of a walk: a tombstone is skipped, a timer due later is re-filed lower (a cascade, or a
// timer touched later: no callback runs), a due one fires. walk_.at is written only where something may
// read it: before a callback runs, and when the budget stops the walk. False if the budget ran out.
// Walking a slot of level From (1 or 2; 0: any other store), a timer due within the slot's span — all
// but a touched one — shares the wheel's digits from From up, so its level and slot come from its
// low digits alone. The cursor's storage is read again after a callback (which may grow it).
template <unsigned From>
inline bool timing_wheel::visit_entry(walk_cursor& c, std::uint64_t now) {
    timer_node* t = *c.at;
    if (t == nullptr) return true;
    if (const std::uint64_t d = t->deadline_; d > now) {
        const std::uint64_t differs = d ^ now;
        if (From >= 1 && differs < low_slots) {
            const auto index = static_cast<std::uint32_t>(d % low_slots);
            file_in(index, index, *t, c.base); // level 0 has no start stores
        } else if (From == 2 && differs < (std::uint64_t{1} << detail::level_shift(2))) {
            const auto slot = static_cast<std::uint32_t>(low_slots + (d >> detail::low_bits) % slots_per_level);
            file_in(slot, d % low_slots == 0 ? slot + start_offset : slot, *t, c.base);
        } else {
            file_later(*t, c.base);
        }
        return true;
    }
    walk_.at = c.at;
    if (!budget_left()) return false;
    *c.at = nullptr; // finish_walk() resumes at walk_.at if the callback throws
    fire(*t);
    if (timer_node** now_at = pool_.entries(); now_at != c.base) [[unlikely]] { // the callback grew the pool
        c.rebase(now_at);
        walk_.base = c.base;
        walk_.at = c.at;
    }
    return true;
}

// Processes a store front to back (the order its timers were filed in, or deadline order for a due
// batch): each timer fires, or is re-filed lower (a cascade, or a timer touched to a later deadline).
// The store is detached first (it reads as empty) and nothing can be filed into it meanwhile; a
// callback's cancel of one of its timers leaves a tombstone (batch_), so the walk never misses or
// repeats an entry. Each chunk goes back to the pool once walked; the ones not walked yet are held,
// and make_room() does not count on them. The nodes ahead are prefetched: the walk reads
// contiguous entries, so their nodes' cache misses overlap. False if the budget ran out; what is left
// (then, or when a callback throws) moves to the due store in order.
template <unsigned From>
bool timing_wheel::walk(std::uint32_t store) {
    if (pool_.empty(store)) return true;
    walk_state& w = walk_;
    pool_.chunks_of(store, w.chunks);
    w.end = pool_.end(store);
    w.ci = 0;
    w.base = pool_.entries();
    w.at = w.base + (w.chunks[0] << pool::chunk_bits);
    pool_.detach(store);
    batch_ = store;
    slow_from_ = 0;
    limit_ = 0; // place() re-checks the room (make_room)
    struct finish {
        timing_wheel& wheel;
        ~finish() { wheel.finish_walk(); }
    } guard{*this};
    const std::uint64_t now = elapsed_; // it cannot move during a walk (advance() from a callback does nothing)
    walk_cursor c{w.base, nullptr, nullptr};
    for (; w.ci < w.chunks.size(); ++w.ci) {
        const std::uint32_t first = w.chunks[w.ci] << pool::chunk_bits;
        const std::uint32_t chunk_end = pool::chunk_end(w.chunks, w.ci, w.end);
        // While the entry prefetch_distance ahead is in this chunk, prefetch its node; after that, the
        // next chunk's first nodes.
        const std::uint32_t split = chunk_end - first > prefetch_distance ? chunk_end - prefetch_distance : first;
        c.at = c.base + first;
        for (c.stop = c.base + split; c.at < c.stop; ++c.at) {
            __builtin_prefetch(c.at[prefetch_distance], 1);
            if (!visit_entry<From>(c, now)) return false;
        }
        c.stop = c.base + chunk_end;
        if (w.ci + 1 < w.chunks.size()) {
            // The entry prefetch_distance ahead, in the next chunk: at + ahead.
            const auto ahead = static_cast<std::ptrdiff_t>(w.chunks[w.ci + 1] << pool::chunk_bits) -
                               static_cast<std::ptrdiff_t>(chunk_end) + prefetch_distance;
            for (; c.at < c.stop; ++c.at) {
                __builtin_prefetch(c.at[ahead], 1);
                if (!visit_entry<From>(c, now)) return false;
            }
        } else {
            for (; c.at < c.stop; ++c.at)
                if (!visit_entry<From>(c, now)) return false;
        }
        pool_.release(w.chunks[w.ci]);
    }
    return true;
}

// Ends a walk: entries not reached (the budget ran out, or a callback threw) go to the due store in
// order, and their chunks back to the pool.
void timing_wheel::finish_walk() noexcept {
    walk_state& w = walk_;
    for_each_unwalked<pool>(w, [&](std::uint32_t e) {
        if (timer_node* t = pool_.at(e)) push_due(*t);
    });
    for (; w.ci < w.chunks.size(); ++w.ci) pool_.release(w.chunks[w.ci]);
    w.chunks.clear();
    batch_ = no_store;
    slow_from_ = due_a;
    limit_ = 0;
}

// Moves a whole store to the due store, in order (a slot left behind by a throwing callback).
void timing_wheel::requeue(std::uint32_t store) noexcept {
    pool_.for_each_entry(store, chunk_scratch_, [&](std::uint32_t e) { push_due(*pool_.at(e)); });
    pool_.clear(store);
}

bool timing_wheel::process_slot(const slot_ref& s) {
    const std::uint32_t slot = s.slot();
    occupied_[slot / 64] &= ~(std::uint64_t{1} << (slot % 64));
    elapsed_ = s.start;
    // Whatever is left when the budget runs out (or a callback throws) moves to the due store, so the
    // invariant "no occupied slot at or behind elapsed" holds on every exit.
    struct requeue_rest {
        timing_wheel& w;
        std::uint32_t slot;
        ~requeue_rest() { w.requeue(slot); }
    } guard{*this, slot};
    // The timers due at the slot's start fire first; then the rest cascade.
    if (s.level == 0) return walk<0>(slot);
    if (!walk<0>(slot + start_offset)) return false;
    return s.level == 1 ? walk<1>(slot) : s.level == 2 ? walk<2>(slot) : walk<0>(slot);
}

std::size_t timing_wheel::advance(time_point now) {
    if (stopped_ || advancing_) return 0;
    const std::uint64_t target = std::max(tick_floor(now), elapsed_);
    fired_ = 0;
    target_ = target;
    advancing_ = true;
    struct reset {
        timing_wheel& w;
        ~reset() {
            w.advancing_ = false;
            w.firing_ = nullptr;
        }
    } guard{*this};
    if (!exact_.empty()) release_exact(now);
    if (!fire_due_batch()) return fired_;
    for (;;) {
        const auto s = next_slot();
        if (!s || s->start > target) {
            elapsed_ = target;
            break;
        }
        if (!process_slot(*s)) break;
    }
    return fired_;
}

std::vector<timer_node*> timing_wheel::stop() {
    std::vector<timer_node*> unfired;
    unfired.reserve(size_);
    auto take = [&](timer_node* t) {
        t->state_ = timer_state::cancelled;
        t->wheel_ = nullptr;
        unfired.push_back(t);
    };
    for (std::uint32_t store = 0; store < store_count; ++store) {
        pool_.for_each_entry(store, chunk_scratch_, [&](std::uint32_t e) { take(pool_.at(e)); });
        pool_.clear(store);
    }
    // Called from a callback during a walk: what the walk has not reached becomes tombstones.
    if (batch_ != no_store)
        for_each_unwalked<pool>(walk_, [&](std::uint32_t e) {
            if (timer_node* t = pool_.at(e)) {
                pool_.put(e, nullptr);
                take(t);
            }
        });
    while (!exact_.empty()) {
        timer_node* t = exact_.back().t;
        unlink_exact(*t);
        take(t);
    }
    occupied_.fill(0);
    size_ = 0;
    limit_ = 0;
    stopped_ = true;
    due_unsorted_ = false;
    return unfired;
}

void timing_wheel::check_invariants() const {
    auto fail = [](const std::string& what) { throw std::logic_error("timing_wheel invariant: " + what); };
    if (const char* broken = pool_.check()) fail(broken);
    std::size_t count = 0;
    std::vector<std::uint32_t> chunks;
    auto check_store = [&](std::uint32_t store) {
        pool_.for_each_entry(store, chunks, [&](std::uint32_t e) {
            const timer_node* t = pool_.at(e);
            if (t == nullptr) fail("tombstone outside a batch being fired");
            if (t->pos_ != e || t->slot_ != store) fail("timer's entry fields disagree with its store");
            if (t->state_ != timer_state::pending || t->wheel_ != this) fail("filed timer not pending here");
            if (t->deadline_ > max_tick_) fail("deadline beyond max_tick");
            if (store < due_a) {
                const std::uint32_t slot = slot_of_store(store);
                const unsigned level = detail::level_of_slot(slot), index = slot - detail::level_base(level);
                if (level > top_level() || (level == top_level() && index > top_index()))
                    fail("a timer filed out of the slot storage's reach (above max_tick's level or digit)");
                if (t->deadline_ <= elapsed_) fail("filed timer already due");
                const unsigned above = detail::level_shift(level + 1);
                if (above < 64 && (t->deadline_ >> above) < (elapsed_ >> above)) fail("timer filed below its deadline's level");
                const std::uint64_t digit = (elapsed_ >> detail::level_shift(level)) & (level == 0 ? low_slots - 1 : slots_per_level - 1);
                if (index <= digit) fail("slot at or behind elapsed is occupied");
                // A deadline at its slot's start belongs in the slot's start store (touch only moves
                // deadlines later, so not even a lazily filed timer can have it).
                if (level > 0 && store < start_stores && t->deadline_ == slot_start(level, index))
                    fail("a timer due at its slot's start is not in the start store");
            }
            ++count;
        });
    };
    if (batch_ != no_store) fail("a due batch outlived its advance");
    for (std::uint32_t store = 0; store < store_count; ++store) check_store(store);
    for (std::uint32_t slot = 0; slot < slot_count; ++slot) {
        const bool bit = (occupied_[slot / 64] >> (slot % 64)) & 1;
        const bool held = !pool_.empty(slot) || (slot >= low_slots && !pool_.empty(slot + start_offset));
        if (bit != held) fail("occupancy bit disagrees with the slot");
    }
    for (std::size_t i = 0; i < exact_.size(); ++i) {
        const timer_node* t = exact_[i].t;
        if (t->slot_ != exact_slot || t->pos_ != i) fail("exact timer's entry fields disagree with its list");
        if (t->state_ != timer_state::pending || t->wheel_ != this) fail("exact timer not pending here");
        if (t->deadline_ != exact_mark && t->deadline_ < tick_ceil(exact_[i].at))
            fail("exact timer touched to a tick before its deadline");
        ++count;
    }
    if (!pool_.empty(due_ ^ 1u)) fail("the idle due store holds timers");
    if (count != size_) fail("size() is " + std::to_string(size_) + " but " + std::to_string(count) + " timers are filed");
}

} // namespace heartwheel
