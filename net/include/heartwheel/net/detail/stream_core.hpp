// heartwheel/net/detail/stream_core.hpp — what a liveness_stream shares with its pending operations.
//
// The idea: an operation may outlive its stream (Asio lets a socket be destroyed with operations
// pending; they complete with operation_aborted), so it cannot hold the stream. It holds a handle on a
// small core instead: the observer (the connection), nulled by the stream's destructor, and the next
// layer, used only while the observer is set. The receive's step lives here too (one receive at a time
// per stream, as any read), so that a pending receive on a socket is one pointer.
//
// The receive's memory lives here as well. What an idle connection keeps pending is Asio's wait
// operation for its receive; left to Asio it is a heap block of its own, taken from the thread's
// recycling cache — which hands out whatever block was freed last, such as an accept's (240 bytes
// where the wait needs 96: two thirds of echo_server's connections kept one after an accept burst,
// heaptrack showed). Here the core is sized for that wait (Asio's own type, with a handler of two pointers: a
// shared_ptr) and the receive's operations are placed in it one after another (receive_allocator):
// one heap block per stream, not two. An operation that does not fit (a larger handler: a composed
// operation's, a coroutine's), or comes while the memory is taken, gets a heap block of its own size
// — not the recycling cache's, whose last freed block (a handshake's read, 728 bytes) would be kept
// for the whole idle wait: 0.9 of every WebSocket connection held one where the wait needs ~300.
//
// Invariants: the core's count is not atomic — the stream and its operations run on the stream's
// executor (an operation is moved, never copied, between threads on its way back to it; a move
// touches only the handles); `next` is dereferenced only while `observer` is set; `reads` counts
// reads started and not completed; the receive's memory holds at most one operation, and `slot_taken`
// says whether it does (set by the allocation, cleared by the deallocation: Asio frees an operation's
// memory before it runs its handler, which may start the next; a handler's copy that owns the core
// outlives that deallocation, so the core does too).
#ifndef HEARTWHEEL_NET_DETAIL_STREAM_CORE_HPP
#define HEARTWHEEL_NET_DETAIL_STREAM_CORE_HPP

#include <heartwheel/net/detail/slot_allocator.hpp>
#include <heartwheel/net/detail/tls_traits.hpp>
#include <heartwheel/net/connection/stream_observer.hpp>

#include <heartwheel/asio.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>

namespace heartwheel::net::detail {

/// The steps of a receive (see receive_op).
enum class receive_step : std::uint8_t { start, waited, probed, read };

template <class T>
struct is_stream_socket : std::false_type {};
template <class P, class E>
struct is_stream_socket<asio::basic_stream_socket<P, E>> : std::true_type {};
/// Streams whose receive waits for readiness and then reads without blocking.
template <class T>
inline constexpr bool waits_for_readiness = is_stream_socket<T>::value || is_tls_socket<T>;

/// What the receive's memory is sized for: a receive operation with a handler of two pointers.
struct receive_stand_in {
    void* core;
    void* handler[2];
    void operator()(error_code) {}
};

/// Bytes of the receive's memory: Asio's wait operation for a receive that waits for readiness
/// (none for other streams, nor where Asio has no reactor: their operations allocate as before).
template <class NextLayer>
constexpr std::size_t receive_memory_size() noexcept {
#if defined(HEARTWHEEL_ASIO_REACTIVE_WAIT)
    if constexpr (waits_for_readiness<NextLayer>)
        return sizeof(asio::detail::reactive_wait_op<receive_stand_in, typename NextLayer::lowest_layer_type::executor_type>);
#endif
    return 0;
}

template <std::size_t Size>
struct receive_memory {
    alignas(void*) unsigned char bytes[Size];
};
template <>
struct receive_memory<0> {};

/// 24 bytes and the receive's memory (96 on a socket typed with its io_context's executor: a heap
/// block of 128).
template <class NextLayer>
struct stream_core {
    static constexpr std::size_t memory_size = receive_memory_size<NextLayer>();

    stream_observer* observer;
    NextLayer* next;
    std::uint16_t refs = 1;    ///< the stream and its operations
    std::uint16_t reads = 0;   ///< reads (read_some, receive) started and not yet completed
    std::uint8_t at_ : 2;      ///< the receive's step: at(), set_at()
    std::uint8_t more_waiting : 1; ///< the last receive filled its chunk: read before waiting
    std::uint8_t stamps : 1;       ///< the socket stamps what it receives: receives report arrivals
    char probe = 0;            ///< TLS: the one byte a receive waits with
    bool slot_taken = false;   ///< the receive's memory holds an operation (its own byte: see above)
    [[no_unique_address]] receive_memory<memory_size> memory;
    /// The receive's memory, for slot_allocator.
    static constexpr std::size_t slot_size = memory_size;
    void* slot() noexcept {
        if constexpr (memory_size > 0) return memory.bytes;
        else return nullptr;
    }
    stream_core(stream_observer& o, NextLayer& n) noexcept : observer(&o), next(&n), at_(0), more_waiting(0), stamps(0) {}
    /// The receive in progress (one at a time, as any read): back to start before it completes.
    receive_step at() const noexcept { return static_cast<receive_step>(at_); }
    void set_at(receive_step s) noexcept { at_ = static_cast<std::uint8_t>(s) & 3u; }
    /// The error an operation completes with: the close's own once the connection closed.
    error_code outcome(error_code ec) const noexcept {
        if (!ec || observer == nullptr) return ec;
        const error_code closed = observer->close_error();
        return closed ? closed : ec;
    }
};

/// An owning handle on the core: one word, a count of its own (no shared_ptr control block). A
/// moved-from handle owns nothing but still names the core (its low bit marks it): Asio may ask a
/// moved-from handler for its allocator to free an operation whose construction failed.
template <class NextLayer>
class stream_core_ref {
public:
    stream_core_ref(stream_observer& o, NextLayer& n) : p_(reinterpret_cast<std::uintptr_t>(new stream_core<NextLayer>(o, n))) {}
    stream_core_ref(const stream_core_ref& r) noexcept : p_(r.p_ & ~moved) { ++get()->refs; }
    stream_core_ref(stream_core_ref&& r) noexcept : p_(r.p_) { r.p_ |= moved; }
    stream_core_ref& operator=(const stream_core_ref&) = delete;
    stream_core_ref& operator=(stream_core_ref&&) = delete;
    ~stream_core_ref() {
        if ((p_ & moved) == 0 && --get()->refs == 0) delete get();
    }
    stream_core<NextLayer>* get() const noexcept { return reinterpret_cast<stream_core<NextLayer>*>(p_ & ~moved); }
    stream_core<NextLayer>* operator->() const noexcept { return get(); }

private:
    static constexpr std::uintptr_t moved = 1;
    std::uintptr_t p_;
};

/// Places the receive's operations in its core's memory (see above); what does not fit, in a block of its size.
template <class T, class NextLayer>
using receive_allocator = slot_allocator<T, stream_core<NextLayer>>;

} // namespace heartwheel::net::detail

#endif
