// heartwheel/net/detail/block_cache.hpp — a thread's stack of freed heap blocks of one size, for
// objects made and dropped often on one thread (a read's chunk, a write burst's timer): taking one
// is a pointer pop instead of malloc, and what a thread keeps is bounded by Capacity, not by the
// connections it serves.
//
// Invariants: every block came from ::operator new with the same size (Tag names one user, so two
// users' sizes never mix); a block may be given back on another thread than the one that took it
// (it joins that thread's stack). The stack is plain data with no destructor of its own, so it stays
// usable however late in a thread's end; a reaper, registered when the first block is kept, frees
// the kept blocks when the thread ends and closes the stack, after which blocks go straight back
// to the heap.
#ifndef HEARTWHEEL_NET_DETAIL_BLOCK_CACHE_HPP
#define HEARTWHEEL_NET_DETAIL_BLOCK_CACHE_HPP

#include <cstddef>
#include <new>

namespace heartwheel::net::detail {

template <class Tag, std::size_t Capacity>
class block_cache {
public:
    /// A block of `size` bytes: a kept one, or a new one.
    static void* take(std::size_t size) {
        if (!stack_.closed && stack_.held > 0) return stack_.blocks[--stack_.held];
        return ::operator new(size);
    }
    /// Keeps `p` for this thread's next take(), or frees it when the stack is full or closed.
    static void give(void* p) noexcept {
        if (stack_.closed || stack_.held == Capacity) return ::operator delete(p);
        if (stack_.held == 0) reaper_registered();
        stack_.blocks[stack_.held++] = p;
    }
private:
    struct stack {
        void* blocks[Capacity];
        std::size_t held;
        bool closed;
    };
    struct reaper {
        ~reaper() {
            stack_.closed = true;
            while (stack_.held > 0) ::operator delete(stack_.blocks[--stack_.held]);
        }
    };
    // Its first call on a thread registers the reaper with the thread's end.
    static void reaper_registered() noexcept { thread_local reaper r; }

    static inline thread_local stack stack_{};
};

} // namespace heartwheel::net::detail

#endif
