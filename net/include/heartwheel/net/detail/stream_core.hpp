// heartwheel/net/detail/stream_core.hpp — what a liveness_stream shares with its pending operations.
//
// The idea: an operation may outlive its stream (Asio lets a socket be destroyed with operations
// pending; they complete with operation_aborted), so it cannot hold the stream. It holds a handle on a
// small core instead: the observer (the connection), nulled by the stream's destructor, and the next
// layer, used only while the observer is set. The receive's step lives here too (one receive at a time
// per stream, as any read), so that a pending receive on a socket is one pointer.
//
// Invariants: the core's count is not atomic — the stream and its operations run on the stream's
// executor (an operation is moved, never copied, between threads on its way back to it); `next` is
// dereferenced only while `observer` is set; `reads` counts reads started and not completed.
#ifndef HEARTWHEEL_NET_DETAIL_STREAM_CORE_HPP
#define HEARTWHEEL_NET_DETAIL_STREAM_CORE_HPP

#include <heartwheel/net/stream_observer.hpp>

#include <heartwheel/asio.hpp>

#include <cstdint>
#include <utility>

namespace heartwheel::net::detail {

/// The steps of a receive (see receive_op).
enum class receive_step : std::uint8_t { start, waited, probed, read };

/// 24 bytes, a heap block of 32.
template <class NextLayer>
struct stream_core {
    stream_observer* observer;
    NextLayer* next;
    std::uint32_t refs = 1;    ///< the stream and its operations
    std::uint16_t reads = 0;   ///< reads (read_some, receive) started and not yet completed
    std::uint8_t at_ : 2;      ///< the receive's step: at(), set_at()
    std::uint8_t more_waiting : 1; ///< the last receive filled its chunk: read before waiting
    char probe = 0;            ///< TLS: the one byte a receive waits with
    stream_core(stream_observer& o, NextLayer& n) noexcept : observer(&o), next(&n), at_(0), more_waiting(0) {}
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

/// An owning handle on the core: one word, a count of its own (no shared_ptr control block).
template <class NextLayer>
class stream_core_ref {
public:
    stream_core_ref(stream_observer& o, NextLayer& n) : p_(new stream_core<NextLayer>(o, n)) {}
    stream_core_ref(const stream_core_ref& r) noexcept : p_(r.p_) { ++p_->refs; }
    stream_core_ref(stream_core_ref&& r) noexcept : p_(std::exchange(r.p_, nullptr)) {}
    stream_core_ref& operator=(const stream_core_ref&) = delete;
    stream_core_ref& operator=(stream_core_ref&&) = delete;
    ~stream_core_ref() {
        if (p_ != nullptr && --p_->refs == 0) delete p_;
    }
    stream_core<NextLayer>* operator->() const noexcept { return p_; }

private:
    stream_core<NextLayer>* p_;
};

} // namespace heartwheel::net::detail

#endif
