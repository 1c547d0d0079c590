// heartwheel/net/connection/write_queue.hpp — one connection's bounded output: bytes, not messages.
//
// Idea: messages are copied into chunks of contiguous memory, each holding whole messages and at
// most `chunk_bytes` of them (a larger message has a chunk of its own). A write takes the front chunk
// whole, so any number of small messages queued meanwhile go out together — a flood of one-byte
// lines costs one write per chunk, not one per line, and no per-message allocation or header.
// Invariants:
//  - bytes leave in the order they were appended; a chunk being written is never appended to, so
//    its memory stays put while the write is in flight;
//  - every chunk boundary is a message boundary, so dropping what is not yet in flight (a close's
//    last words replace it) never cuts a message, and what is in flight is at most one chunk;
//  - queued() counts every byte not yet accepted by the kernel; memory() every byte really held
//    (the chunks' capacities), which is what the limits judge — per-message overhead is zero;
//  - a drained queue keeps at most one chunk of `keep_capacity` for reuse (none by default), and
//    nothing else: the first chunk's handle lives in the queue object, and only a backlog of several
//    chunks (or a kept spare) allocates the rest, released when the backlog is gone. An idle
//    connection's queue holds no heap memory, and is 48 bytes: its sizes are 32-bit counts and its
//    chunks detail::byte_arrays (a std::string's inline room would spare a short message its
//    allocation but cost every idle connection 16 bytes).
// The bounds — backpressure's water marks, a slow consumer's hard and soft limits — are the
// connection's policy (output_policy), judged against queued(); the write timeout is the
// connection's business too: each completed write_some with n > 0 is progress.
// Not thread-safe: one connection, one strand.
#ifndef HEARTWHEEL_NET_WRITE_QUEUE_HPP
#define HEARTWHEEL_NET_WRITE_QUEUE_HPP

#include <heartwheel/net/detail/byte_array.hpp>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string_view>
#include <vector>

namespace heartwheel::net {

struct write_queue_limits {
    std::size_t chunk_bytes = 64 << 10;   ///< a write carries at most this much (whole messages)
    /// A drained queue keeps a chunk of at most this capacity for reuse. 0 (the default): an empty
    /// queue holds no memory — idle connections are the common case; a busy one allocates a chunk
    /// per write, not per message.
    std::size_t keep_capacity = 0;
};

class write_queue {
public:
    /// Limits above 4 GiB - 1 are taken as 4 GiB - 1.
    explicit write_queue(write_queue_limits limits = {});
    ~write_queue();
    write_queue(const write_queue&) = delete;
    write_queue& operator=(const write_queue&) = delete;

    /// Queues one message behind everything queued so far.
    void append(std::string_view message) { append({message}); }
    /// Queues one message made of parts (e.g. a line and its newline): never split across writes.
    void append(std::initializer_list<std::string_view> parts) { append(parts.begin(), parts.size()); }
    /// The same with `count` parts at `parts` (e.g. an HTTP serializer's header and body buffers).
    void append(const std::string_view* parts, std::size_t count);

    /// Whether a write is in flight (next_bytes() was handed out and not all of it consumed).
    bool writing() const noexcept { return in_flight_; }
    /// The bytes to hand to write_some now: the rest of the write in flight, or the front chunk,
    /// which becomes the write in flight. Empty when nothing is queued.
    std::string_view next_bytes();
    /// `n` bytes of next_bytes() were accepted. Returns true when the write in flight is complete.
    bool consumed(std::size_t n);

    std::size_t queued() const noexcept { return queued_; }
    bool empty() const noexcept { return queued_ == 0; }
    std::size_t memory() const noexcept;

    /// Drops everything not yet in flight (the rest of a write in flight cannot be taken back from
    /// the middle of a stream, and ends on a message boundary): what is appended next follows it
    /// directly. For "say goodbye now".
    void drop_pending() noexcept;

private:
    /// What only a backlog or a kept spare needs: allocated with the first of them, freed with the last.
    using chunk = detail::byte_array;
    struct more {
        std::vector<chunk> rest; ///< chunks behind the front one
        chunk spare;             ///< a drained chunk kept for reuse
    };
    std::size_t chunk_count() const noexcept { return front_.empty() ? 0 : 1 + (more_ ? more_->rest.size() : 0); }
    chunk& back() noexcept { return more_ && !more_->rest.empty() ? more_->rest.back() : front_; }
    chunk take_spare() noexcept;
    void pop_front() noexcept;
    void release_more() noexcept;

    chunk front_; ///< the first chunk (the write in flight, if any); [offset_, size) unsent
    std::unique_ptr<more> more_;
    std::size_t queued_ = 0;
    std::uint32_t offset_ = 0; ///< within front_, which is at most one chunk or one message
    std::uint32_t chunk_bytes_, keep_capacity_;
    bool in_flight_ = false;
};

} // namespace heartwheel::net

#endif
