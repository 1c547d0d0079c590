// timing_wheel.cpp — filing, cascading and firing; see timing_wheel.hpp for the invariants.
//
// The slot lists are processed in place: a callback can cancel any timer still waiting in the slot
// being processed (unlinking needs only the node), and nothing can be filed into that slot while it
// is processed (a new deadline either is <= elapsed and goes to the due list, or differs from elapsed
// below the slot's level). The due list is detached into a local list first, so timers re-armed by
// their own callbacks land in the fresh due list and wait for the next advance.
#include <heartwheel/error.hpp>
#include <heartwheel/timing_wheel.hpp>

#include <algorithm>
#include <bit>
#include <stdexcept>
#include <string>

namespace heartwheel {

namespace {
constexpr std::uint8_t flag_periodic = 1;

unsigned level_for(std::uint64_t elapsed, std::uint64_t deadline) noexcept {
    const auto top_bit = 63u - static_cast<unsigned>(std::countl_zero(elapsed ^ deadline));
    return top_bit / timing_wheel::slot_bits;
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
    if (state_ == timer_state::pending && wheel_ != nullptr) wheel_->cancel(*this);
}

bool timer_node::cancel() noexcept {
    return state_ == timer_state::pending && wheel_ != nullptr && wheel_->cancel(*this);
}

timing_wheel::timing_wheel(time_point start, wheel_config config)
    : config_(config), start_(start) {
    config_.validate();
    const auto ticks_in_range = static_cast<std::uint64_t>(duration::max().count() / 2 / config_.tick.count());
    max_tick_ = std::min<std::uint64_t>(std::uint64_t{1} << 62, ticks_in_range);
}

timing_wheel::~timing_wheel() {
    for (timer_node* t : stop()) t->wheel_ = nullptr;
}

std::error_code timing_wheel::to_error(placed p) noexcept {
    if (p == placed::ok) return {};
    return p == placed::full ? make_error_code(errc::wheel_full) : make_error_code(errc::wheel_stopped);
}

void timing_wheel::throw_placed(placed p) { throw std::system_error(to_error(p)); }

std::uint64_t timing_wheel::tick_ceil(time_point t) const noexcept {
    const auto ns = saturating_sub(t, start_).count(); // far past: 0 (due now); far future: max_tick_
    if (ns <= 0) return 0;
    const auto step = config_.tick.count();
    const auto ticks = static_cast<std::uint64_t>(ns / step + (ns % step != 0 ? 1 : 0));
    return ticks < max_tick_ ? ticks : max_tick_;
}

std::uint64_t timing_wheel::tick_floor(time_point t) const noexcept {
    const auto ns = saturating_sub(t, start_).count();
    if (ns <= 0) return 0;
    const auto ticks = static_cast<std::uint64_t>(ns / config_.tick.count());
    return ticks < max_tick_ ? ticks : max_tick_;
}

duration timing_wheel::remaining(const timer_node& t, time_point now) const noexcept {
    if (t.state_ != timer_state::pending || t.wheel_ != this) return duration::zero();
    const auto left = saturating_sub(time_of(t.deadline_), now);
    return left > duration::zero() ? left : duration::zero();
}

detail::list_head& timing_wheel::list_of(std::uint16_t slot) noexcept {
    if (slot == due_slot) return due_;
    return slots_[slot / slots_per_level][slot % slots_per_level];
}

std::uint16_t timing_wheel::slot_for(std::uint64_t d) const noexcept {
    const unsigned level = level_for(elapsed_, d);
    const auto index = static_cast<unsigned>((d >> (level * slot_bits)) & (slots_per_level - 1));
    return static_cast<std::uint16_t>(level * slots_per_level + index);
}

void timing_wheel::file(timer_node& t) noexcept {
    const std::uint64_t d = t.deadline_;
    const bool rearmed_in_this_advance = advancing_ && t.fired_in_ == generation_ && d <= target_;
    if (d <= elapsed_ || rearmed_in_this_advance) {
        push_due(t);
        return;
    }
    t.slot_ = slot_for(d);
    const unsigned level = t.slot_ / slots_per_level, index = t.slot_ % slots_per_level;
    slots_[level][index].push_back(t);
    occupied_[level] |= std::uint64_t{1} << index;
}

void timing_wheel::push_due(timer_node& t) noexcept {
    t.slot_ = due_slot;
    if (!due_.empty() && t.deadline_ < node_of(due_.prev).deadline_) due_unsorted_ = true;
    due_.push_back(t);
}

// Overdue timers fire in deadline order (oldest first), whatever order they were scheduled in. The
// common case (appended in order) costs nothing; otherwise one stable sort of the batch.
void timing_wheel::sort_due_batch(detail::list_head& batch) {
    if (!due_unsorted_) return;
    due_unsorted_ = false;
    sort_scratch_.clear();
    while (auto* h = batch.front()) {
        h->unlink();
        sort_scratch_.push_back(&node_of(h));
    }
    std::stable_sort(sort_scratch_.begin(), sort_scratch_.end(),
                     [](const timer_node* a, const timer_node* b) { return a->deadline_ < b->deadline_; });
    for (timer_node* t : sort_scratch_) batch.push_back(*t);
    sort_scratch_.clear();
}

void timing_wheel::unlink(timer_node& t) noexcept {
    t.list_hook::unlink();
    if (t.slot_ == due_slot) return;
    const unsigned level = t.slot_ / slots_per_level;
    const unsigned index = t.slot_ % slots_per_level;
    if (slots_[level][index].empty()) occupied_[level] &= ~(std::uint64_t{1} << index);
}

timing_wheel::placed timing_wheel::place(timer_node& t, std::uint64_t deadline_tick) noexcept {
    if (stopped_) [[unlikely]]
        return placed::stopped;
    const std::uint64_t d = deadline_tick < max_tick_ ? deadline_tick : max_tick_;
    if (t.state_ == timer_state::pending) {
        if (t.wheel_ == this) [[likely]] {
            // Same slot (a re-arm a little later usually is, above level 0): nothing to move. Not
            // during an advance, where file() may have to put it on the due list instead.
            if (!advancing_ && t.slot_ != due_slot && d > elapsed_ && slot_for(d) == t.slot_) {
                t.deadline_ = d;
                t.flags_ &= static_cast<std::uint8_t>(~flag_periodic);
                return placed::ok;
            }
            unlink(t);
            --size_;
        } else {
            t.wheel_->cancel(t);
        }
    }
    if (size_ >= config_.max_pending) [[unlikely]] {
        t.state_ = timer_state::cancelled;
        return placed::full;
    }
    t.wheel_ = this;
    t.deadline_ = d;
    t.state_ = timer_state::pending;
    t.flags_ &= static_cast<std::uint8_t>(~flag_periodic);
    file(t);
    ++size_;
    return placed::ok;
}

std::error_code timing_wheel::try_schedule_tick(timer_node& t, std::uint64_t deadline_tick) noexcept {
    return to_error(place(t, deadline_tick));
}

std::error_code timing_wheel::try_schedule(timer_node& t, time_point deadline) noexcept {
    return to_error(place(t, tick_ceil(deadline)));
}

void timing_wheel::schedule(timer_node& t, time_point deadline) {
    check(place(t, tick_ceil(deadline)));
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

bool timing_wheel::cancel(timer_node& t) noexcept {
    if (t.state_ != timer_state::pending || t.wheel_ != this) return false;
    unlink(t);
    --size_;
    t.state_ = timer_state::cancelled;
    if (size_ == 0 && empty_hook_ != nullptr && !advancing_) empty_hook_(empty_context_);
    return true;
}

bool timing_wheel::touch(timer_node& t, time_point deadline) { return touch_tick(t, tick_ceil(deadline)); }

std::uint64_t timing_wheel::filed_wakeup_tick(const timer_node& t) const noexcept {
    if (t.slot_ == due_slot) return elapsed_;
    const unsigned level = t.slot_ / slots_per_level;
    const std::uint64_t index = t.slot_ % slots_per_level;
    const unsigned span_bits = (level + 1) * slot_bits;
    const std::uint64_t base = span_bits >= 64 ? 0 : elapsed_ & ~((std::uint64_t{1} << span_bits) - 1);
    return base + (index << (level * slot_bits));
}

std::optional<timing_wheel::slot_ref> timing_wheel::next_slot() const noexcept {
    for (unsigned level = 0; level < levels; ++level) {
        if (occupied_[level] == 0) continue;
        const auto index = static_cast<unsigned>(std::countr_zero(occupied_[level]));
        const unsigned span_bits = (level + 1) * slot_bits;
        const std::uint64_t base =
            span_bits >= 64 ? 0 : elapsed_ & ~((std::uint64_t{1} << span_bits) - 1);
        return slot_ref{level, index, base + (std::uint64_t{index} << (level * slot_bits))};
    }
    return std::nullopt;
}

std::optional<std::uint64_t> timing_wheel::next_wakeup_tick() const noexcept {
    if (!due_.empty()) return elapsed_;
    if (auto s = next_slot()) return s->start;
    return std::nullopt;
}

std::optional<time_point> timing_wheel::next_wakeup() const noexcept {
    if (auto t = next_wakeup_tick()) return time_of(*t);
    return std::nullopt;
}

void timing_wheel::rearm_periodic(periodic_timer& t) noexcept {
    const std::uint64_t period = t.period_;
    std::uint64_t next = t.deadline_ + period;
    if (t.policy_ == missed_tick::delay) next = target_ + period;
    else if (t.policy_ == missed_tick::skip && next <= target_)
        next = t.deadline_ + period * ((target_ - t.deadline_) / period + 1);
    t.deadline_ = next < max_tick_ ? next : max_tick_;
    t.state_ = timer_state::pending;
    file(t);
    ++size_;
}

void timing_wheel::fire(timer_node& t) {
    // t is already unlinked; size_ still counts it.
    --size_;
    ++fired_;
    t.state_ = timer_state::expired;
    t.fired_in_ = generation_;
    if (t.flags_ & flag_periodic) rearm_periodic(static_cast<periodic_timer&>(t));
    t.on_expire();
}

// Fires the due list as it was when the advance began. Returns false if the budget ran out.
bool timing_wheel::fire_due_batch() {
    detail::list_head batch;
    batch.splice_back(due_);
    sort_due_batch(batch);
    struct restore {
        timing_wheel& w;
        detail::list_head& batch;
        ~restore() {
            // What the budget left keeps its order, ahead of what callbacks added meanwhile.
            if (!batch.empty() && !w.due_.empty() &&
                node_of(batch.prev).deadline_ > node_of(w.due_.next).deadline_)
                w.due_unsorted_ = true;
            w.due_.splice_front(batch);
        }
    } guard{*this, batch};
    while (auto* h = batch.front()) {
        if (!budget_left()) return false;
        timer_node& t = node_of(h);
        t.list_hook::unlink();
        if (t.deadline_ > elapsed_) file(t); // touched later while it waited
        else fire(t);
    }
    return true;
}

// Moves what is left of a slot to the due list when the fire budget ran out mid-slot.
void timing_wheel::requeue_slot_rest(detail::list_head& slot) noexcept {
    while (auto* h = slot.front()) {
        timer_node& t = node_of(h);
        t.list_hook::unlink();
        push_due(t);
    }
}

bool timing_wheel::process_slot(const slot_ref& s) {
    detail::list_head& slot = slots_[s.level][s.index];
    occupied_[s.level] &= ~(std::uint64_t{1} << s.index);
    elapsed_ = s.start;
    // Whatever is left when the budget runs out (or a callback throws) moves to the due list, so the
    // invariant "no occupied slot at or behind elapsed" holds on every exit.
    struct requeue {
        timing_wheel& w;
        detail::list_head& slot;
        ~requeue() { w.requeue_slot_rest(slot); }
    } guard{*this, slot};
    // Callbacks may unlink nodes of this slot; nothing new can be filed here while it is processed.
    while (auto* h = slot.front()) {
        if (!budget_left()) return false;
        timer_node& t = node_of(h);
        t.list_hook::unlink();
        if (t.deadline_ > elapsed_) file(t); // cascade to a lower level, or a lazily touched timer
        else fire(t);
    }
    return true;
}

std::size_t timing_wheel::advance(time_point now) {
    if (stopped_) return 0;
    const std::uint64_t target = std::max(tick_floor(now), elapsed_);
    ++generation_;
    fired_ = 0;
    target_ = target;
    advancing_ = true;
    struct reset {
        bool& flag;
        ~reset() { flag = false; }
    } guard{advancing_};
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
    auto drain = [&](detail::list_head& list) {
        while (auto* h = list.front()) {
            timer_node& t = node_of(h);
            t.list_hook::unlink();
            t.state_ = timer_state::cancelled;
            unfired.push_back(&t);
        }
    };
    drain(due_);
    for (auto& level : slots_)
        for (auto& slot : level) drain(slot);
    occupied_.fill(0);
    size_ = 0;
    stopped_ = true;
    due_unsorted_ = false;
    return unfired;
}

void timing_wheel::check_invariants() const {
    auto fail = [](const std::string& what) { throw std::logic_error("timing_wheel invariant: " + what); };
    std::size_t count = 0;
    auto check_list = [&](const detail::list_head& list, std::uint16_t slot) {
        for (const detail::list_hook* h = list.next; h != &list; h = h->next) {
            if (h->next->prev != h) fail("broken links");
            const auto& t = static_cast<const timer_node&>(*h);
            if (t.state_ != timer_state::pending || t.wheel_ != this) fail("filed timer not pending here");
            if (t.slot_ != slot) fail("timer's slot field disagrees with its list");
            if (t.deadline_ > max_tick_) fail("deadline beyond max_tick");
            ++count;
        }
    };
    check_list(due_, due_slot);
    for (unsigned level = 0; level < levels; ++level) {
        const std::uint64_t digit = (elapsed_ >> (level * slot_bits)) & (slots_per_level - 1);
        for (unsigned index = 0; index < slots_per_level; ++index) {
            const auto& slot = slots_[level][index];
            const bool bit = (occupied_[level] >> index) & 1;
            if (bit == slot.empty()) fail("occupancy bit disagrees with slot list");
            if (!slot.empty() && index <= digit) fail("slot at or behind elapsed is occupied");
            const auto id = static_cast<std::uint16_t>(level * slots_per_level + index);
            check_list(slot, id);
            for (const detail::list_hook* h = slot.next; h != &slot; h = h->next) {
                const auto& t = static_cast<const timer_node&>(*h);
                if (t.deadline_ <= elapsed_) fail("filed timer already due");
                const unsigned above = (level + 1) * slot_bits;
                if (above < 64 && (t.deadline_ >> above) < (elapsed_ >> above))
                    fail("timer filed below its deadline's level");
            }
        }
    }
    if (count != size_) fail("size() is " + std::to_string(size_) + " but " + std::to_string(count) + " timers are filed");
}

} // namespace heartwheel
