// heartwheel/detail/slot_pool.hpp — the storage under the wheel's slots: chunked arrays of node pointers.
//
// Why arrays: in a linked list every step of a cascade or a firing is a dependent cache miss (the next
// node's address is inside the node before it), so at a million timers in no particular memory order
// the wheel waits on memory one node at a time. Here a slot (a "store") is a chain of 32-entry chunks of
// node pointers, all chunks living in one pooled vector: a store is walked over contiguous memory and
// the nodes a few entries ahead are prefetched while the current one is handled, so the misses overlap.
//
// Each filed node keeps its store (timer_node::slot_) and the index of its entry (timer_node::pos_),
// so removal is O(1) and allocates nothing: the store's last entry moves into the hole. The wheel
// walks a store front to back; a removal from the store being walked leaves a tombstone instead.
//
// Invariants (check()):
//  - end_[s] is one past the index of store s's last entry, and 0 when s is empty;
//  - every chunk of a store but its last is full; each chunk links to the one before it (prev_);
//    free chunks form a list through prev_ starting at free_; every chunk is in exactly one of them;
//  - entries_[e] == &n for each filed node n with n.pos_ == e (a tombstone, nullptr, only in the
//    store the wheel is walking: see timing_wheel::walk);
//  - push() never allocates: reserve() keeps free chunks for `timers()` entries with at most one
//    partly filled chunk per store that can be in use, plus one (a chunk the wheel is walking while it
//    fills others). The stores that can be in use are the wheel's to say (reach()): a wheel whose
//    ticks stop below 2^43 (a 1 ms tick) never files a timer above level 6, nor there past slot 8:
//    1,172 of its 1,794 stores, and the reservation is that much smaller (timing_wheel's
//    check_invariants fails a timer filed out of reach);
//  - the reservation is address space until used: chunks [0, fresh_) have been handed out (each
//    cleared when first taken) and are in a store or on the free list; chunks from fresh_ on were
//    never touched (their entries are not even initialised) and are taken in order once the free
//    list is empty, so the memory a process touches is the most chunks ever in use at once, not the
//    worst case reserved for (a 1 ms wheel's ~220 KB of partly filled chunks, at any size). Growing
//    copies the touched chunks only.
#ifndef HEARTWHEEL_DETAIL_SLOT_POOL_HPP
#define HEARTWHEEL_DETAIL_SLOT_POOL_HPP

#include <heartwheel/timer_node.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <vector>

namespace heartwheel::detail {

template <std::size_t Stores>
class slot_pool {
public:
    static constexpr unsigned chunk_bits = 5;
    static constexpr std::uint32_t chunk_size = 1u << chunk_bits;
    static constexpr std::uint32_t mask = chunk_size - 1;
    static constexpr std::uint32_t no_chunk = ~std::uint32_t{0};
    /// Entry indices are 32-bit: the pool never holds more chunks than this.
    static constexpr std::size_t max_chunks = (std::size_t{1} << (32 - chunk_bits)) - 1;

    bool empty(std::uint32_t s) const noexcept { return end_[s] == 0; }

    /// How many entries the pool can hold whatever stores they are spread over (see the invariants).
    std::size_t timers() const noexcept { return timers_; }

    /// How many stores can hold entries at once (at most Stores); set before the first reserve().
    void reach(std::uint32_t stores) noexcept { reach_ = stores < Stores ? stores : Stores; }

    /// Makes room for at least `n` entries. False when memory (or the 32-bit index space) runs out.
    bool reserve(std::size_t n) noexcept {
        if (n <= timers_) return true;
        // n entries need n/32 full chunks and at most one partly filled chunk per store they use.
        const std::size_t need = n / chunk_size + (n < reach_ ? n : reach_) + 2;
        std::size_t chunks = prev_.size() + prev_.size() / 4;
        if (chunks < need) chunks = need;
        if (chunks < 16) chunks = 16;
        while (capacity_for(chunks) < n && chunks <= max_chunks) ++chunks;
        if (chunks > max_chunks) return false;
        // Not value-initialised: the untouched chunks stay address space (see the invariants).
        std::unique_ptr<timer_node*[]> grown(new (std::nothrow) timer_node*[chunks * chunk_size]);
        if (!grown) return false;
        try {
            prev_.reserve(chunks);
            prev_.resize(chunks);
        } catch (const std::bad_alloc&) {
            return false;
        }
        if (fresh_ > 0) std::copy_n(entries_.get(), std::size_t{fresh_} * chunk_size, grown.get());
        entries_ = std::move(grown);
        timers_ = capacity_for(chunks);
        return true;
    }

    /// Appends `t` to store s. Nothing is live after the rare call (a new chunk, once per 32 pushes),
    /// so an inlined push costs its caller no saved registers.
    [[gnu::always_inline]] void push(std::uint32_t s, timer_node& t) noexcept { push(entries_.get(), s, t); }
    /// push() given entries(), which a walk holds in a register.
    [[gnu::always_inline]] void push(timer_node** entries, std::uint32_t s, timer_node& t) noexcept {
        if (!push_in_chunk(entries, s, t)) [[unlikely]]
            push_in_new_chunk(s, t);
    }
    /// push() when store s's last chunk has room; false, having changed nothing, when the entry needs
    /// a new chunk (push_in_new_chunk) — always the case for an empty store.
    [[gnu::always_inline]] bool push_in_chunk(timer_node** entries, std::uint32_t s, timer_node& t) noexcept {
        const std::uint32_t e = end_[s];
        if ((e & mask) == 0) [[unlikely]]
            return false;
        entries[e] = &t;
        t.pos_ = e;
        t.slot_ = static_cast<std::uint16_t>(s);
        end_[s] = e + 1;
        return true;
    }
    /// Appends `t` to store s in a chunk of its own (taken from the free list, or untouched before).
    [[gnu::noinline]] void push_in_new_chunk(std::uint32_t s, timer_node& t) noexcept {
        const std::uint32_t e = take_chunk(end_[s]);
        entries_[e] = &t;
        t.pos_ = e;
        t.slot_ = static_cast<std::uint16_t>(s);
        end_[s] = e + 1;
    }

    /// Removes `t` (filed in store t.slot_); returns whether the store became empty.
    [[gnu::always_inline]] bool remove(timer_node& t) noexcept {
        const std::uint32_t s = t.slot_;
        const std::uint32_t last = --end_[s];
        timer_node* moved = entries_[last];
        entries_[t.pos_] = moved;
        moved->pos_ = t.pos_;
        if ((last & mask) == 0) [[unlikely]]
            return drop_tail(s, last);
        return false;
    }

    /// Leaves a tombstone in t's entry (the store keeps its size); see fire_due_batch.
    void tombstone(const timer_node& t) noexcept { entries_[t.pos_] = nullptr; }

    timer_node* at(std::uint32_t e) const noexcept { return entries_[e]; }
    /// The storage itself, for a walk over many entries: valid until the next reserve().
    timer_node** entries() const noexcept { return entries_.get(); }
    void put(std::uint32_t e, timer_node* t) noexcept { entries_[e] = t; }
    std::uint32_t end(std::uint32_t s) const noexcept { return end_[s]; }

    /// The chunks of store s, first to last.
    void chunks_of(std::uint32_t s, std::vector<std::uint32_t>& out) const {
        out.clear();
        if (end_[s] == 0) return;
        for (std::uint32_t c = (end_[s] - 1) >> chunk_bits; c != no_chunk; c = prev_[c]) out.push_back(c);
        std::reverse(out.begin(), out.end());
    }

    /// Calls f(entry index) for every entry of store s, first to last (`chunks` is scratch space).
    template <class F>
    void for_each_entry(std::uint32_t s, std::vector<std::uint32_t>& chunks, F f) const {
        chunks_of(s, chunks);
        for (std::size_t i = 0; i < chunks.size(); ++i)
            for (std::uint32_t e = chunks[i] << chunk_bits; e < chunk_end(chunks, i, end_[s]); ++e) f(e);
    }

    /// One past the last entry of chunks[i], of a store whose chunks (first to last) and end are given.
    static std::uint32_t chunk_end(const std::vector<std::uint32_t>& chunks, std::size_t i, std::uint32_t end) noexcept {
        return i + 1 < chunks.size() ? (chunks[i] << chunk_bits) + chunk_size : end;
    }

    /// Makes store s read as empty, leaving its chunks and entries to the caller (who release()s them).
    void detach(std::uint32_t s) noexcept { end_[s] = 0; }
    void release(std::uint32_t chunk) noexcept {
        prev_[chunk] = free_;
        free_ = chunk;
    }

    /// Returns every chunk of store s to the free list, whatever its entries hold.
    void clear(std::uint32_t s) noexcept {
        if (end_[s] == 0) return;
        std::uint32_t c = (end_[s] - 1) >> chunk_bits;
        while (c != no_chunk) {
            const std::uint32_t before = prev_[c];
            prev_[c] = free_;
            free_ = c;
            c = before;
        }
        end_[s] = 0;
    }

    /// Bytes the pool holds (used and free, touched or not), for memory accounting.
    std::size_t bytes() const noexcept {
        return prev_.size() * chunk_size * sizeof(timer_node*) + prev_.capacity() * sizeof(std::uint32_t);
    }
    /// Of those, the bytes ever touched: the chunks handed out so far and the chunks' links (the rest
    /// is address space the process has not used; see the invariants).
    std::size_t touched_bytes() const noexcept {
        return std::size_t{fresh_} * chunk_size * sizeof(timer_node*) + prev_.capacity() * sizeof(std::uint32_t);
    }

    /// Checks the chunk structure; returns a description of the first broken invariant, or nullptr.
    const char* check() const {
        std::vector<std::uint8_t> seen(prev_.size(), 0);
        for (std::size_t s = 0; s < Stores; ++s) {
            if (end_[s] == 0) continue;
            for (std::uint32_t c = (end_[s] - 1) >> chunk_bits; c != no_chunk; c = prev_[c]) {
                if (c >= prev_.size() || seen[c]) return "a chunk is in two chains, or a chain loops";
                seen[c] = 1;
            }
        }
        for (std::uint32_t c = free_; c != no_chunk; c = prev_[c]) {
            if (c >= prev_.size() || seen[c]) return "a free chunk is also in use";
            seen[c] = 1;
        }
        if (fresh_ > prev_.size()) return "more chunks handed out than there are";
        for (std::size_t c = 0; c < seen.size(); ++c) {
            if (c < fresh_ && !seen[c]) return "a chunk handed out is neither free nor in a store";
            if (c >= fresh_ && seen[c]) return "a chunk never handed out is in use or on the free list";
        }
        return nullptr;
    }

private:
    std::size_t capacity_for(std::size_t chunks) const noexcept {
        // The largest n with n/32 + min(n, reach) + 2 <= chunks: the full chunks, one partly filled
        // chunk per store in reach, and the chunk a walk is emptying while its timers fill others.
        const std::size_t stores = reach_;
        auto fits = [chunks, stores](std::size_t n) { return n / chunk_size + (n < stores ? n : stores) + 2 <= chunks; };
        if (chunks <= 2) return 0;
        std::size_t n = (chunks - 2) * chunk_size / (chunk_size + 1);
        if (chunks > stores + 2 && (chunks - 2 - stores) * chunk_size > n) n = (chunks - 2 - stores) * chunk_size;
        while (n > 0 && !fits(n)) --n;
        while (fits(n + 1)) ++n;
        return n;
    }

    std::uint32_t take_chunk(std::uint32_t end) noexcept {
        std::uint32_t c = free_;
        if (c != no_chunk) {
            free_ = prev_[c];
        } else { // the first use of an untouched chunk: its entries get a value (a walk prefetches ahead)
            c = fresh_++;
            std::fill_n(&entries_[std::size_t{c} << chunk_bits], chunk_size, nullptr);
        }
        prev_[c] = end == 0 ? no_chunk : (end - 1) >> chunk_bits;
        return c << chunk_bits;
    }

    bool drop_tail(std::uint32_t s, std::uint32_t last) noexcept {
        const std::uint32_t c = last >> chunk_bits;
        const std::uint32_t before = prev_[c];
        prev_[c] = free_;
        free_ = c;
        end_[s] = before == no_chunk ? 0 : (before << chunk_bits) + chunk_size;
        return before == no_chunk;
    }

    std::unique_ptr<timer_node*[]> entries_; ///< prev_.size() chunks; those from fresh_ on untouched
    std::vector<std::uint32_t> prev_;
    std::uint32_t free_ = no_chunk;
    std::uint32_t fresh_ = 0; ///< the chunks [0, fresh_) have been handed out
    std::size_t timers_ = 0;
    std::uint32_t reach_ = Stores;
    std::array<std::uint32_t, Stores> end_{};
};

} // namespace heartwheel::detail

#endif
