// heartwheel/net/connection/stream_observer.hpp — what a liveness_stream tells about its I/O as it happens.
//
// net::connection implements it (its liveness policies hear every read and write); a stream's pending
// operations ask it, once the connection has closed, for the error they complete with.
#ifndef HEARTWHEEL_NET_STREAM_OBSERVER_HPP
#define HEARTWHEEL_NET_STREAM_OBSERVER_HPP

#include <heartwheel/asio.hpp>
#include <heartwheel/net/detail/arrival_stamp.hpp>

#include <cstddef>

namespace heartwheel::net {

/// Told about a stream's I/O as it happens (implemented by net::connection).
class stream_observer {
public:
    /// `n` bytes were read; `arrived`: when the newest of them reached the host (the kernel's stamp,
    /// detail/arrival_stamp.hpp), or no_arrival when the stream does not know.
    virtual void on_bytes_read(std::size_t n, time_point arrived) = 0;
    virtual void on_write_started() = 0;
    /// `n` bytes of a write of `size` went out (n == size: the write is complete).
    virtual void on_bytes_written(std::size_t n, std::size_t size) = 0;
    /// The error a pending operation completes with once the connection closed; none while open.
    virtual error_code close_error() const noexcept = 0;

protected:
    ~stream_observer() = default;
};

} // namespace heartwheel::net

#endif
