// heartwheel/net/admission.hpp — how many connections and TLS handshakes a server takes on at once,
// by backpressure: at a limit the listener stops accepting and the kernel's backlog holds the
// newcomers (HAProxy's maxconn and nginx's worker_connections do the same), so that nothing the
// server already paid for is thrown away to make room.
//
// Why not evict: a handshake gate that sheds its oldest pending handshake for each newcomer
// collapses under a storm of healthy clients (10,000 TLS connects at 10,000/s kept 1,730: the server
// paid a key exchange for most of the others and threw it away). With backpressure a storm is served
// at the rate handshakes complete. What backpressure alone would not survive is a flood of peers
// that connect and never send a ClientHello: they would hold every place until their handshake
// timeout. So while newcomers wait, a handshake that is *stalled* — in progress for `handshake_stall`
// with no ClientHello read and nothing unread in the kernel (our slowness is not the peer's) — is
// closed `handshake-shed`; one whose hello arrived is never shed, however slow we are with it.
//
// Who counts: the listener reserves a place for each socket it accepts; a net::connection made on an
// execution context the listener has accepted into takes that place over when it is made and gives
// it back when its socket closes (the context's teardown_registry carries the admission, so a
// connection holds no pointer of its own); its server-side TLS handshake (connection::async_handshake)
// holds a handshake place from its start to its end. Every net::connection of such a context counts,
// so a context given to a listener with limits should hold that listener's connections only. A
// socket accepted and then dropped without a connection must be given back: listener::dropped()
// (or the listener forgets reservations nothing took over within a second, at a limit).
//
// Thread-safe: counts are atomics, the handshakes in progress an intrusive list under a mutex (one
// lock per handshake start and end). Memory: the limits, the counts, the list heads; a handshake
// place (heap, only while a TLS handshake is in progress) ~80 bytes.
// Invariants: open() + reserved() never drops below 0 (a give-back without its take saturates, as it
// does when a context moves to another listener); handshakes() is the length of the list.
#ifndef HEARTWHEEL_NET_ADMISSION_HPP
#define HEARTWHEEL_NET_ADMISSION_HPP

#include <heartwheel/net/close_reason.hpp>
#include <heartwheel/net/detail/list_hook.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>

namespace heartwheel::net {

struct admission_limits {
    /// Connections open at once (0: no limit but the descriptors'). At the limit the listener waits
    /// (or refuses, with refuse_at_limit).
    std::size_t max_connections = 0;
    /// Server-side TLS handshakes in progress at once (0: no limit); never more than half of
    /// max_connections (effective_max_handshakes), so that half-open handshakes cannot hold every place.
    std::size_t max_handshakes = 1024;
    /// While newcomers wait for a handshake place, a handshake this old with no ClientHello read and
    /// nothing unread is shed. 1 ms to 60 s.
    std::chrono::milliseconds handshake_stall{250};
    /// At max_connections: accept and refuse (the listener's refusal bytes, counted busy) instead of
    /// leaving newcomers in the backlog.
    bool refuse_at_limit = false;

    /// max_handshakes bounded by half of max_connections (at least 1); 0 stays 0.
    std::size_t effective_max_handshakes() const noexcept;
    /// Whether anything is limited at all.
    bool enabled() const noexcept { return max_connections != 0 || max_handshakes != 0; }
    /// config_error naming the field and its range.
    void validate() const;
};

/// The close reason of a handshake shed for being stalled while newcomers waited.
close_reason handshake_shed_reason();

class admission {
public:
    using clock = std::chrono::steady_clock;

    /// A server-side TLS handshake in progress. `check` is called (with the admission's lock held: it
    /// must only post) when the handshake may be stalled; it looks on the connection's own executor
    /// and closes it handshake-shed if it is (no ClientHello read, nothing unread).
    class handshake_place : detail::list_hook {
    public:
        handshake_place(admission& a, std::function<void()> check);
        ~handshake_place();
        handshake_place(const handshake_place&) = delete;
        handshake_place& operator=(const handshake_place&) = delete;

    private:
        friend class admission;
        admission& a_;
        std::function<void()> check_;
        clock::time_point next_check_;
    };

    explicit admission(const admission_limits& limits);
    admission(const admission&) = delete;
    admission& operator=(const admission&) = delete;

    const admission_limits& limits() const noexcept { return limits_; }

    /// The listener: whether a newcomer may be accepted now (connections and handshakes both below
    /// their limits, counting the sockets accepted and not yet made connections).
    bool room_for_connection() const noexcept;
    bool room_for_handshake() const noexcept;
    /// The listener accepted a socket: a place is held for it until a connection takes it over.
    void reserve() noexcept;
    /// A reserved socket was dropped without becoming a connection.
    void unreserve() noexcept;
    /// Forgets every reservation: the listener's safety net when nothing took them over for a while
    /// (a socket dropped without unreserve() must not stop accepting for good).
    void forget_reservations() noexcept { reserved_.store(0, std::memory_order_relaxed); }
    /// A connection was made (takes a reserved place over, or a new one) / its socket closed.
    void arrived() noexcept;
    void left() noexcept;

    /// While newcomers wait for a handshake place: asks each handshake begun at least handshake_stall
    /// before `now` (and not asked within the last handshake_stall) to check itself. Returns how many
    /// were asked.
    std::size_t check_stalled(clock::time_point now);

    std::size_t open() const noexcept { return open_.load(std::memory_order_relaxed); }
    std::size_t reserved() const noexcept { return reserved_.load(std::memory_order_relaxed); }
    std::size_t handshakes() const noexcept { return handshakes_.load(std::memory_order_relaxed); }

private:
    static void saturating_decrement(std::atomic<std::size_t>& n) noexcept;

    admission_limits limits_;
    std::size_t max_handshakes_;
    std::atomic<std::size_t> open_{0}, reserved_{0}, handshakes_{0};
    std::mutex mutex_;
    detail::list_head pending_; ///< handshakes in progress, oldest first
};

} // namespace heartwheel::net

#endif
