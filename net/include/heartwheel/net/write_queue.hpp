// heartwheel/net/write_queue.hpp — one connection's bounded output: bytes, not messages.
//
// Idea: appends copy into one contiguous `pending` buffer; a write takes the whole of it at once
// (swapping it with the empty `inflight` buffer), so any number of small messages queued while a
// write is in flight go out together in the next one — a flood of one-byte lines costs one write
// per round trip of the loop, not one per line, and no per-message allocation or header.
// Invariants:
//  - bytes leave in the order they were appended; a write never sees bytes appended after it began;
//  - queued() counts every byte not yet accepted by the kernel; memory() every byte really held
//    (both buffers' capacities), which is what the limits judge — per-message overhead is zero;
//  - a drained buffer larger than `keep_capacity` is released, so a burst does not pin memory.
// Backpressure: above_high_water() tells the reader to stop; below_low_water() to resume (a gap
// between the two avoids flapping). The write timeout is the connection's business: each completed
// write_some with n > 0 is progress; a peer that does not read stops all progress, whatever is queued.
// Not thread-safe: one connection, one strand.
#ifndef HEARTWHEEL_NET_WRITE_QUEUE_HPP
#define HEARTWHEEL_NET_WRITE_QUEUE_HPP

#include <cstddef>
#include <string>
#include <string_view>

namespace heartwheel::net {

struct write_queue_limits {
    std::size_t high_water = 1 << 20;    ///< stop reading above this many queued bytes
    std::size_t low_water = 256 << 10;   ///< resume reading at or below this
    std::size_t keep_capacity = 16 << 10; ///< a drained buffer keeps at most this much memory
};

class write_queue {
public:
    explicit write_queue(write_queue_limits limits = {}) : limits_(limits) {}

    /// Queues bytes behind everything queued so far.
    void append(std::string_view bytes) { pending_.append(bytes.data(), bytes.size()); }
    void append(char c) { pending_.push_back(c); }

    /// Whether a write is in flight (begin_write() was called and its bytes are not all consumed).
    bool writing() const noexcept { return offset_ < inflight_.size(); }
    /// The bytes to hand to write_some now: the rest of the write in flight, or — when none is — all
    /// that is pending, which becomes the write in flight. Empty when nothing is queued.
    std::string_view next_bytes();
    /// `n` bytes of next_bytes() were accepted. Returns true when the write in flight is complete.
    bool consumed(std::size_t n);

    std::size_t queued() const noexcept { return inflight_.size() - offset_ + pending_.size(); }
    bool empty() const noexcept { return queued() == 0; }
    std::size_t memory() const noexcept { return inflight_.capacity() + pending_.capacity(); }
    bool above_high_water() const noexcept { return queued() > limits_.high_water; }
    bool below_low_water() const noexcept { return queued() <= limits_.low_water; }
    const write_queue_limits& limits() const noexcept { return limits_; }

    /// Drops what is pending but keeps the rest of a write in flight (it cannot be taken back from
    /// the middle of a stream): what is appended next follows it directly. For "say goodbye now".
    void drop_pending() noexcept;
    /// Drops everything and releases the memory. Not while a write is in flight (its buffer is in use).
    void clear() noexcept;

private:
    static void release_if_large(std::string& s, std::size_t keep) noexcept;

    write_queue_limits limits_;
    std::string inflight_; ///< the bytes of the write in flight; [offset_, size) not yet accepted
    std::size_t offset_ = 0;
    std::string pending_;  ///< appended since that write began
};

} // namespace heartwheel::net

#endif
