// heartwheel/net/detail/freed_memory.hpp — memory a process freed goes back to the system.
//
// free() returns only the top of a glibc arena; what was freed between live blocks (the connections
// of a load peak gone, the buffers of a burst of TLS handshakes) stays resident. glibc's malloc_trim
// gives back every whole free page, inside the heap too (madvise). Callers decide when: it walks the
// arenas' free chunks, ~1 ms for a heap of a few hundred MB, so once per episode, not per event.
#ifndef HEARTWHEEL_NET_DETAIL_FREED_MEMORY_HPP
#define HEARTWHEEL_NET_DETAIL_FREED_MEMORY_HPP

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace heartwheel::net::detail {

inline void return_freed_memory() noexcept {
#if defined(__GLIBC__)
    ::malloc_trim(0);
#endif
}

} // namespace heartwheel::net::detail

#endif
