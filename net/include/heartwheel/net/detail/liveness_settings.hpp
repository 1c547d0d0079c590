// heartwheel/net/detail/liveness_settings.hpp — what a connection's liveness reads of its config after
// it is made, kept once and shared by every liveness made from an equal config.
//
// A connection used to carry its own copy of the settings its policies judge by (the idle periods,
// the heartbeat's interval, timeout and factors, the request policy, the handshake timeout, which
// close reasons scale): 32 bytes per connection, 48 with a heartbeat (footprint_test), the same in
// every connection of a server. Here they
// are one immutable object the liveness points to: its idle_state and heartbeat read their policies
// from it, the limits are given theirs when a handshake starts.
//
// Sharing: intern() returns the settings it made before on this thread from an equal config if there
// are any (a few recent ones are remembered per thread), else new ones (a copy of the config, and
// which close reasons scale). Equal is decided by the policies' descriptions, for every policy of the
// config: every described field and every scalable minimum — so a field added to a policy is compared
// without a change here (a test makes settings from configs that differ in one field each; the
// policies the liveness reads have their sizes checked, for a member the descriptions would miss).
// Whether the liveness has an overload scale is part of the key (it decides which reasons scale).
//
// Invariants: settings never change once made; a liveness holds a counted reference (atomic: a
// connection may be destroyed on another thread than the one that made it), and its parts point
// into the settings it holds, so they outlive the parts; the per-thread memory holds references too,
// released at the thread's exit.
#ifndef HEARTWHEEL_NET_DETAIL_LIVENESS_SETTINGS_HPP
#define HEARTWHEEL_NET_DETAIL_LIVENESS_SETTINGS_HPP

#include <heartwheel/net/detail/counted_ref.hpp>
#include <heartwheel/net/config/liveness_config.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <utility>

namespace heartwheel::net::detail {

struct liveness_settings {
    liveness_config config;           ///< the liveness reads its idle, heartbeat, request and limits policies
    std::uint32_t scaled_reasons = 0; ///< bit per close_reason, of the timeouts that scale
    bool scaled = false;              ///< resolved for a liveness with an overload scale

    bool scaled_reason(close_reason why) const noexcept {
        return (scaled_reasons >> static_cast<unsigned>(why) & 1u) != 0;
    }
    mutable std::atomic<std::size_t> refs{0};
};

/// A counted reference to shared settings.
using settings_ref = counted_ref<liveness_settings>;

/// The settings of `config` (validated: config_error) for a liveness with (`scaled`) or without an
/// overload scale: the ones made before on this thread from an equal config, or new ones.
settings_ref intern(const liveness_config& config, bool scaled);

} // namespace heartwheel::net::detail

#endif
