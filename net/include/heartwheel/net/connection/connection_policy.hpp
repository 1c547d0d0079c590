// heartwheel/net/connection/connection_policy.hpp — the connection's own knobs, described like every policy
// (`[connection]` in TOML, `connection.<field>` for flags, a row each in the docs' knob table): how long a
// goodbye may take to flush, what counts as reader activity, whether a first idle event closes, and
// how the write queue chunks its bytes.
//
// A connection reads them from its context (connection_context::options, a view of the configuration's
// [connection] and [output] tables made once per context), so a server configures them where it
// configures its timeouts; a framing layer that knows what a message is (WebSocket, HTTP) makes its
// connections with `activity = messages` whatever the table says, and counts whole messages itself.
// Asio-free: the policies' library describes it; the connection applies it.
#ifndef HEARTWHEEL_NET_CONNECTION_POLICY_HPP
#define HEARTWHEEL_NET_CONNECTION_POLICY_HPP

#include <heartwheel/net/config/policy_description.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace heartwheel::net {

/// What counts as reader activity for idle detection (bytes still prove liveness to the heartbeat
/// and the read timeout either way).
enum class reader_activity : std::uint8_t {
    bytes,    ///< every read that brings bytes
    messages, ///< only what the application reports with message_received() (a data line, not a pong)
};

struct connection_policy {
    /// How long last words may take to flush before the lowest layer is closed anyway (32 bits of ms).
    std::chrono::milliseconds linger{1000};
    reader_activity activity = reader_activity::bytes;
    /// Whether a first idle event closes the connection (otherwise on_idle only reports it).
    bool close_on_idle = true;
    /// A write carries at most this much (whole messages).
    std::size_t chunk_bytes = 64 << 10;
    /// A drained queue keeps a chunk of at most this capacity for reuse; 0: an idle queue holds nothing.
    std::size_t keep_capacity = 0;

    void validate(const std::string& prefix = "connection") const { validate_policy(description(), this, prefix); }
    static const policy_description& description() {
        static const char* const activities[] = {"bytes", "messages"};
        static const field_description fields[] = {
            field<&connection_policy::linger>("linger", 0, 4294967295.0,
                                              "how long a goodbye may take to flush before the socket is closed anyway"),
            choice<&connection_policy::activity>("activity", activities,
                                                 "reader activity for idle detection: every read, or whole messages the "
                                                 "application reports (`message_received`)"),
            field<&connection_policy::close_on_idle>("close_on_idle", 0, 1,
                                                     "a first idle event closes (otherwise `on_idle` only reports it)"),
            field<&connection_policy::chunk_bytes>("chunk_bytes", 512, 64 << 20,
                                                   "a write carries at most this much of the queue (whole messages)"),
            field<&connection_policy::keep_capacity>("keep_capacity", 0, 64 << 20,
                                                     "a drained queue keeps a chunk this large for reuse (0: an idle "
                                                     "connection's queue holds no memory)")};
        static const policy_description d{"connection", fields};
        return d;
    }
};

/// Its place in liveness_config: `config.connection`.
struct connection_slot {
    connection_policy connection;
    connection_policy& policy() noexcept { return connection; }
};

} // namespace heartwheel::net

#endif
