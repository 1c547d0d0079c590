// heartwheel/net/connection/read_chunk.hpp — the bytes one read brought, in memory lent by the thread's pool.
//
// Idea (nginx frees a keep-alive connection's buffers while it waits; Netty pools them): a connection
// that waits for its peer should hold no read buffer. liveness_stream::async_receive waits for
// readability first and only then takes a chunk from the pool of the thread it runs on, reads into it
// and hands it to the application, which keeps what it cannot use yet (a partial message) in its own,
// usually empty, buffer and drops the chunk: the memory goes back to the pool of the thread that
// drops it. So a server holds read memory per *thread* (the pool keeps at most `pooled` free chunks),
// not per connection.
// Invariants: a chunk is owned by exactly one read_chunk (move-only); a default-constructed or
// moved-from read_chunk holds nothing; outstanding() counts the chunks alive in the process (lent,
// not yet dropped), so a test or a metric can check that idle connections hold none.
#ifndef HEARTWHEEL_NET_READ_CHUNK_HPP
#define HEARTWHEEL_NET_READ_CHUNK_HPP

#include <cstddef>
#include <string_view>

namespace heartwheel::net {

class read_chunk {
public:
    /// Bytes per chunk: one read takes at most this much from the kernel.
    static constexpr std::size_t capacity = 16 * 1024;
    /// Free chunks a thread's pool keeps; more are freed.
    static constexpr std::size_t pooled = 8;

    read_chunk() noexcept = default;
    read_chunk(read_chunk&& other) noexcept : data_(other.data_), size_(other.size_) {
        other.data_ = nullptr;
        other.size_ = 0;
    }
    read_chunk& operator=(read_chunk&& other) noexcept;
    read_chunk(const read_chunk&) = delete;
    read_chunk& operator=(const read_chunk&) = delete;
    ~read_chunk() { reset(); }

    /// A chunk of `capacity` bytes from this thread's pool, size() 0.
    static read_chunk take();

    /// The chunk's memory, to read into (capacity bytes; nullptr when nothing is held).
    char* data() noexcept { return data_; }
    /// The bytes read: the first size() of the chunk.
    std::string_view bytes() const noexcept { return {data_, size_}; }
    std::size_t size() const noexcept { return size_; }
    bool empty() const noexcept { return size_ == 0; }
    /// The first `n` (at most capacity) bytes of data() hold what was read.
    void set_size(std::size_t n) noexcept { size_ = n; }
    /// Gives the memory back to this thread's pool.
    void reset() noexcept;

    /// Chunks alive in the process (taken and not yet given back).
    static std::size_t outstanding() noexcept;

private:
    char* data_ = nullptr;
    std::size_t size_ = 0;
};

} // namespace heartwheel::net

#endif
