// heartwheel/net/server/handshake_gate.hpp — per-source bounds on the TLS handshakes a server has in
// progress, so that one address cannot take every handshake place nor cost the server more handshakes
// per second than it allows. (How many handshakes the server takes on in all is the listener's
// admission: backpressure, not eviction — admission.hpp.)
//
// Two limits, each off at 0:
//  - max_pending_per_source: in progress at once from one address; beyond it a new one is refused
//    (admit() says so; the owner closes it), so that one source cannot fill the admission's places.
//  - per_source_rate: handshakes started per second by one address (a token bucket holding one
//    second's worth). A handshake costs the server a key exchange and a signature (~0.5 ms of CPU
//    with X25519 and ECDSA P-256) and a replayed ClientHello costs the peer nothing: this is the
//    bound on the CPU one unauthenticated source can take.
//
// A plain data structure on one thread (time is passed in): a server with several threads keeps a
// gate per thread and splits the limits between them. Memory: one entry per source with a handshake
// in progress or a bucket not yet full (~80 bytes), no more than max_sources beyond those in progress
// (idle ones are swept when the map doubles); the waiter carries its source, so admitting allocates
// only for a source's first entry. Invariants: pending() == the length of the waiters' list == the
// sum of the sources' counts; a waiter is linked iff it was admitted and not released since.
#ifndef HEARTWHEEL_NET_HANDSHAKE_GATE_HPP
#define HEARTWHEEL_NET_HANDSHAKE_GATE_HPP

#include <heartwheel/asio.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <unordered_map>

namespace heartwheel::net {

struct handshake_limits {
    std::size_t max_pending_per_source = 0;  ///< in progress at once from one address; refused beyond (0 = off)
    std::uint32_t per_source_rate = 0;       ///< started per second by one address; refused beyond (0 = off)
    std::size_t max_sources = 65536;         ///< sources remembered at once (their buckets); the idle ones go first (0 = no bound)
};

class handshake_gate {
public:
    using clock = std::chrono::steady_clock;

    /// A handshake's place in the gate, from admit() to release() (or its destruction).
    class waiter {
    public:
        waiter() = default;
        waiter(const waiter&) = delete;
        waiter& operator=(const waiter&) = delete;
        ~waiter(); // releases itself if still waiting
        bool waiting() const noexcept { return gate_ != nullptr; }

    private:
        friend class handshake_gate;
        handshake_gate* gate_ = nullptr;
        waiter* prev_ = nullptr; // the gate's list: a gate destroyed first unlinks its waiters
        waiter* next_ = nullptr;
        void* source_ = nullptr; // the gate's entry for its address (null: no per-source limit)
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

    /// A handshake from `source` starting at `now`: links `w` and says admitted, or says why not
    /// (nothing linked).
    verdict admit(waiter& w, const asio::ip::address& source, clock::time_point now);
    /// The handshake ended (done, failed, or its connection closed). Idempotent.
    void release(waiter& w) noexcept;

    std::size_t pending() const noexcept { return pending_; }
    std::size_t sources() const noexcept { return sources_.size(); }
    std::uint64_t refusals() const noexcept { return refusals_; }
    const handshake_limits& limits() const noexcept { return limits_; }

private:
    void unlink(waiter& w) noexcept;

    struct source {
        std::size_t pending = 0;
        double tokens = 0;           // handshakes it may still start (per_source_rate)
        clock::time_point refilled{}; // when tokens were last brought up to date
    };
    using source_map = std::unordered_map<asio::ip::address, source>;

    void refill(source& s, clock::time_point now) const;
    bool forgettable(const source& s, clock::time_point now) const;
    void forget_idle_sources(clock::time_point now);

    handshake_limits limits_;
    source_map sources_;
    std::size_t pending_ = 0;
    std::size_t sweep_at_ = 64; // sources_ size at which idle sources are next looked for
    waiter* first_ = nullptr;
    std::uint64_t refusals_ = 0;
};

} // namespace heartwheel::net

#endif
