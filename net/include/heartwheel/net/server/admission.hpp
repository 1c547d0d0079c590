// heartwheel/net/server/admission.hpp — how many connections and TLS handshakes a server takes on at once,
// by backpressure, so that nothing the server already paid for is thrown away to make room.
//
// Connections: at `max_connections` the listener stops accepting and the kernel's backlog holds the
// newcomers (HAProxy's maxconn and nginx's worker_connections do the same).
//
// Handshakes: a place is the CPU and memory of a key exchange, so only a peer that has sent something
// takes one. A server-side handshake first waits, holding no place, for its peer's first bytes; then it
// takes a place, or queues (first come, first served) until one frees. The listener goes on accepting
// meanwhile: a storm of new TLS connections waits in that queue, not in a kernel backlog that overflows
// (a dropped SYN costs the client a retransmission, 1 s and then 3 s), and is served at the rate
// handshakes complete. Why not evict: a gate that shed its oldest handshake for each newcomer collapsed
// under a storm of healthy clients (10,000 TLS connects at 10,000/s kept 1,730); one that shed what had
// sent no ClientHello within 250 ms while the places were full shed 7,089 of 10,000 whose client was
// merely slow (one echo_client on the same two cores) — a slow client is not an attacker while it
// holds nothing scarce.
//
// What is shed, `handshake-shed`, is a stalled handshake — in progress for `handshake_stall` with no
// ClientHello read and nothing unread in the kernel (our slowness is not the peer's) — and only while
// it holds what others wait for: one silent from the start while newcomers wait for a *connection*
// place (the listener asks, at max_connections: a flood of peers that connect and say nothing cannot
// hold every place until their handshake timeout), one holding a handshake place while handshakes are
// queued for one (a peer that sent a byte of its hello and stopped). One whose hello arrived is never
// shed, however slow we are with it.
//
// Who counts: the listener reserves a place for each socket it accepts; a net::connection made on an
// execution context the listener has accepted into takes that place over when it is made and gives
// it back when its socket closes (the context's teardown_registry carries the admission, so a
// connection holds no pointer of its own); its server-side TLS handshake (connection::async_handshake)
// registers from its start to its end. Every net::connection of such a context counts, so a context
// given to a listener with limits should hold that listener's connections only. A socket accepted and
// then dropped without a connection must be given back: listener::dropped() (or the listener forgets
// reservations nothing took over within a second, at a limit).
//
// Thread-safe: counts are atomics, the handshakes an intrusive list and a queue under a mutex (a lock
// per handshake's start, request and end). Memory: the limits, the counts, the list heads; per handshake
// in progress (heap, only while a TLS handshake is in progress) ~100 bytes.
// Invariants: open() + reserved() never drops below 0 (a give-back without its take saturates, as it
// does when a context moves to another listener); handshakes() is the number of places granted and
// never exceeds the effective bound; a place frees to the queue's first before anyone else.
#ifndef HEARTWHEEL_NET_ADMISSION_HPP
#define HEARTWHEEL_NET_ADMISSION_HPP

#include <heartwheel/net/connection/close_reason.hpp>
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
    /// Server-side TLS handshakes with a place at once (0: no limit): a handshake takes one when its
    /// peer's first bytes arrive and queues for one beyond; never more than half of max_connections
    /// (effective_max_handshakes).
    std::size_t max_handshakes = 1024;
    /// A handshake this old with no ClientHello read and nothing unread is shed while it holds what
    /// others wait for (see above). 1 ms to 60 s.
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

/// The close reason of a handshake shed for being stalled while others waited.
close_reason handshake_shed_reason();

class admission {
public:
    using clock = std::chrono::steady_clock;

    /// A server-side TLS handshake from its start to its end: silent (its peer has sent nothing yet,
    /// no place held), queued for a place, or holding one. `check` is called (with the admission's lock
    /// held: it must only post) when the handshake may be stalled; it looks on the connection's own
    /// executor and closes it handshake-shed if it is (no ClientHello read, nothing unread).
    class handshake_place : detail::list_hook {
    public:
        handshake_place(admission& a, std::function<void()> check);
        ~handshake_place();
        handshake_place(const handshake_place&) = delete;
        handshake_place& operator=(const handshake_place&) = delete;

        /// The peer's first bytes arrived: takes a place now (true), or queues for one and returns
        /// false; `granted` is then called once (with the admission's lock held: it must only post)
        /// when a place is this handshake's. Called once. `now`: when (the stall checks it may make).
        bool request(std::function<void()> granted, clock::time_point now = clock::now());
        /// request() without queueing: takes a place if one is free (true), else changes nothing —
        /// the common case, before the caller makes what waiting needs.
        bool try_take(clock::time_point now = clock::now());
        bool holds_place() const noexcept { return state_ == state::granted; }

    private:
        friend class admission;
        enum class state : unsigned char { silent, queued, granted };
        bool take_locked(clock::time_point now); ///< a free place, if any, becomes this one's
        admission& a_;
        std::function<void()> check_, granted_;
        clock::time_point next_check_;
        state state_ = state::silent;
    };

    explicit admission(const admission_limits& limits);
    admission(const admission&) = delete;
    admission& operator=(const admission&) = delete;

    const admission_limits& limits() const noexcept { return limits_; }

    /// The listener: whether a newcomer may be accepted now (the connections open and the sockets
    /// accepted and not yet made connections below the limit).
    bool room_for_connection() const noexcept;
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

    /// While newcomers wait for a connection place (the listener, at max_connections): asks each
    /// handshake that is silent or holds a place, begun at least handshake_stall before `now` (and not
    /// asked within the last handshake_stall), to check itself. Returns how many were asked.
    std::size_t check_stalled(clock::time_point now) { return check(now, false); }

    std::size_t open() const noexcept { return open_.load(std::memory_order_relaxed); }
    std::size_t reserved() const noexcept { return reserved_.load(std::memory_order_relaxed); }
    /// Handshakes holding a place / queued for one.
    std::size_t handshakes() const noexcept { return handshakes_.load(std::memory_order_relaxed); }
    std::size_t queued() const noexcept { return queued_count_.load(std::memory_order_relaxed); }

private:
    static void saturating_decrement(std::atomic<std::size_t>& n) noexcept;
    /// check_stalled's walk (with the lock taken); `holders_only`: only those holding a place.
    std::size_t check(clock::time_point now, bool holders_only);
    std::size_t check_locked(clock::time_point now, bool holders_only);

    admission_limits limits_;
    std::size_t max_handshakes_;
    std::atomic<std::size_t> open_{0}, reserved_{0}, handshakes_{0}, queued_count_{0};
    std::mutex mutex_;
    detail::list_head pending_; ///< silent and place-holding handshakes, oldest first
    detail::list_head queue_;   ///< handshakes waiting for a place, first come first
    clock::time_point last_queue_check_{};
};

} // namespace heartwheel::net

#endif
