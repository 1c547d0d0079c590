// read_chunk.cpp — see read_chunk.hpp. The pool is the thread's block_cache of free chunks;
// outstanding() is one relaxed atomic shared by all threads.
#include <heartwheel/net/connection/read_chunk.hpp>

#include <heartwheel/net/detail/block_cache.hpp>

#include <atomic>
#include <new>

namespace heartwheel::net {

namespace {

std::atomic<std::size_t> alive{0};

// The free chunks of each thread (at most read_chunk::pooled).
using chunk_cache = detail::block_cache<read_chunk, read_chunk::pooled>;

} // namespace

read_chunk& read_chunk::operator=(read_chunk&& other) noexcept {
    if (this != &other) {
        reset();
        data_ = other.data_;
        size_ = other.size_;
        other.data_ = nullptr;
        other.size_ = 0;
    }
    return *this;
}

read_chunk read_chunk::take() {
    read_chunk c;
    c.data_ = static_cast<char*>(chunk_cache::take(capacity));
    alive.fetch_add(1, std::memory_order_relaxed);
    return c;
}

void read_chunk::reset() noexcept {
    if (data_ == nullptr) return;
    chunk_cache::give(data_);
    data_ = nullptr;
    size_ = 0;
    alive.fetch_sub(1, std::memory_order_relaxed);
}

std::size_t read_chunk::outstanding() noexcept { return alive.load(std::memory_order_relaxed); }

} // namespace heartwheel::net
