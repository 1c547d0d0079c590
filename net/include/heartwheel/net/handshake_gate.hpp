// heartwheel/net/handshake_gate.hpp — bounds the handshakes a server has in progress, so that peers
// that never finish one (a TCP connect and no ClientHello, a hello trickled byte by byte) cannot
// take the places of established connections or of healthy new handshakes, and one source cannot
// cost the server more handshakes per second than it allows.
//
// Three limits, each off at 0:
//  - max_pending: handshakes in progress at once. When full, a new one evicts the *oldest* pending
//    handshake (the gate unlinks it and calls its waiter's evicted(); the owner closes it). A
//    healthy handshake takes a round trip or two, so it is never the oldest for long; a peer that
//    stalls its handshake is. To keep a healthy handshake out an attacker must open more than
//    max_pending connections within one of its round trips.
//  - max_pending_per_source: in progress at once from one address; beyond it a new one is refused
//    (admit() says so; the owner closes it), so that one source cannot evict everyone else's.
//  - per_source_rate: handshakes started per second by one address (a token bucket holding one
//    second's worth). A handshake costs the server a key exchange and a signature (~0.5 ms of CPU
//    with X25519 and ECDSA P-256) and a replayed ClientHello costs the peer nothing: this is the
//    bound on the CPU one unauthenticated source can take.
//
// A plain data structure on one thread (time is passed in): a server with several threads keeps a
// gate per thread and splits the limits between them. Memory: with a per-source limit on, one entry
// per source with a handshake in progress or a bucket not yet full (~80 bytes), no more than
// max_sources beyond those in progress (idle ones are swept when the map doubles); the pending list
// is intrusive (the waiter carries its links), so admitting allocates only for a source's first entry.
// Invariants: pending() == the length of the list == the sum of the sources' counts; a waiter is
// linked iff it was admitted and neither released nor evicted since.
#ifndef HEARTWHEEL_NET_HANDSHAKE_GATE_HPP
#define HEARTWHEEL_NET_HANDSHAKE_GATE_HPP

#include <heartwheel/asio.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <unordered_map>

namespace heartwheel::net {

struct handshake_limits {
    std::size_t max_pending = 1024;          ///< in progress at once; the oldest is evicted beyond (0 = off)
    std::size_t max_pending_per_source = 0;  ///< in progress at once from one address; refused beyond (0 = off)
    std::uint32_t per_source_rate = 0;       ///< started per second by one address; refused beyond (0 = off)
    std::size_t max_sources = 65536;         ///< sources remembered at once (their buckets); the idle ones go first (0 = no bound)
};

/// `limits` for a server that holds at most `max_connections`: handshakes in progress at most half of
/// them (at least one), so that with any connection limit the gate engages before half-open
/// handshakes hold every place (1,024 pending never engaged under a limit of 1,000: 1,000 silent
/// connections locked every healthy client out). max_pending 0 (off) stays off.
inline handshake_limits bounded_by_connections(handshake_limits limits, std::size_t max_connections) noexcept {
    const std::size_t half = max_connections / 2 > 0 ? max_connections / 2 : 1;
    if (limits.max_pending > half) limits.max_pending = half;
    return limits;
}

class handshake_gate {
public:
    using clock = std::chrono::steady_clock;

    /// What waits for its handshake: the owner implements evicted(), which must close it (without
    /// calling back into the gate's admit; release() is allowed and does nothing then).
    class waiter {
    public:
        virtual void evicted() = 0;
        bool waiting() const noexcept { return gate_ != nullptr; }

    protected:
        waiter() = default;
        waiter(const waiter&) = delete;
        waiter& operator=(const waiter&) = delete;
        virtual ~waiter(); // releases itself if still waiting (virtual: under a consumer's -Wnon-virtual-dtor)

    private:
        friend class handshake_gate;
        handshake_gate* gate_ = nullptr;
        waiter* prev_ = nullptr;
        waiter* next_ = nullptr;
        void* source_ = nullptr; // the gate's entry for its address
    };

    enum class verdict {
        admitted,
        source_busy,    ///< max_pending_per_source handshakes from its address in progress
        source_too_fast ///< its address started per_source_rate handshakes within the last second
    };

    explicit handshake_gate(const handshake_limits& limits) : limits_(limits) {}
    handshake_gate(const handshake_gate&) = delete;
    handshake_gate& operator=(const handshake_gate&) = delete;
    ~handshake_gate();

    /// A handshake from `source` starting at `now`: links `w` and says admitted, evicting the oldest
    /// pending one first when max_pending are in progress; or says why not (nothing linked).
    verdict admit(waiter& w, const asio::ip::address& source, clock::time_point now);
    /// The handshake ended (done, failed, or its connection closed). Idempotent.
    void release(waiter& w) noexcept;

    std::size_t pending() const noexcept { return pending_; }
    std::size_t sources() const noexcept { return sources_.size(); }
    std::uint64_t evictions() const noexcept { return evictions_; }
    std::uint64_t refusals() const noexcept { return refusals_; }
    const handshake_limits& limits() const noexcept { return limits_; }

private:
    struct source {
        std::size_t pending = 0;
        double tokens = 0;           // handshakes it may still start (per_source_rate)
        clock::time_point refilled{}; // when tokens were last brought up to date
    };
    using source_map = std::unordered_map<asio::ip::address, source>;

    void refill(source& s, clock::time_point now) const;
    bool forgettable(const source& s, clock::time_point now) const;
    void forget_idle_sources(clock::time_point now);
    void unlink(waiter& w) noexcept;

    handshake_limits limits_;
    source_map sources_;
    waiter* oldest_ = nullptr;
    waiter* newest_ = nullptr;
    std::size_t pending_ = 0;
    std::size_t sweep_at_ = 64; // sources_ size at which idle sources are next looked for
    std::uint64_t evictions_ = 0, refusals_ = 0;
};

} // namespace heartwheel::net

#endif
