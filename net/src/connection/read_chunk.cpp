// read_chunk.cpp — see read_chunk.hpp. The pool is a thread_local stack of free chunks, freed when
// the thread ends; outstanding() is one relaxed atomic shared by all threads.
#include <heartwheel/net/connection/read_chunk.hpp>

#include <atomic>
#include <new>

namespace heartwheel::net {

namespace {

std::atomic<std::size_t> alive{0};

// Set once this thread's pool is destroyed (thread exit): chunks dropped later are simply freed.
thread_local bool pool_gone = false;

struct pool {
    char* free[read_chunk::pooled] = {};
    std::size_t count = 0;
    ~pool() {
        pool_gone = true;
        while (count > 0) ::operator delete(free[--count]);
    }
};

pool& this_thread_pool() {
    thread_local pool p;
    return p;
}

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
    pool* p = pool_gone ? nullptr : &this_thread_pool();
    c.data_ = p && p->count > 0 ? p->free[--p->count] : static_cast<char*>(::operator new(capacity));
    alive.fetch_add(1, std::memory_order_relaxed);
    return c;
}

void read_chunk::reset() noexcept {
    if (data_ == nullptr) return;
    if (pool_gone) {
        ::operator delete(data_);
    } else if (pool& p = this_thread_pool(); p.count < pooled) {
        p.free[p.count++] = data_;
    } else {
        ::operator delete(data_);
    }
    data_ = nullptr;
    size_ = 0;
    alive.fetch_sub(1, std::memory_order_relaxed);
}

std::size_t read_chunk::outstanding() noexcept { return alive.load(std::memory_order_relaxed); }

} // namespace heartwheel::net
