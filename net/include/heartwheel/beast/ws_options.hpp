// heartwheel/beast/ws_options.hpp — what the WebSocket layer (heartwheel/beast/websocket.hpp) is
// configured with and says: its `[websocket]` table (ws_options: described once, validated against
// the output bound its messages are queued under), its close reasons and the close code each
// reason's frame carries, and the shared message a broadcast hands every recipient.
#ifndef HEARTWHEEL_BEAST_WS_OPTIONS_HPP
#define HEARTWHEEL_BEAST_WS_OPTIONS_HPP

#include <heartwheel/net/config/liveness_config.hpp>
#include <heartwheel/net/connection/close_reason.hpp>
#include <heartwheel/net/connection/producer_budget.hpp>
#include <heartwheel/net/server/drain.hpp> // draining_reason

#include <boost/beast/websocket/rfc6455.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace heartwheel::ws {

namespace websocket = boost::beast::websocket;

/// Closes of this layer's own: a peer that broke the protocol (answered 1002, or 1007 for text that
/// is not UTF-8), or sent a message larger than max_message (answered 1009).
inline const net::close_reason protocol_error = net::define_close_reason("protocol-error");
inline const net::close_reason message_too_big = net::define_close_reason("message-too-big");
/// A plain HTTP request on the WebSocket port answered (respond()): the connection's end, not a fault.
inline const net::close_reason http_served = net::define_close_reason("http-served");

/// What goes in the close frame for a close reason: 1001 (going away) for the liveness policies,
/// max age and shutdown; 1008 (policy violation) for a slow consumer; 1002 / 1009 for protocol errors
/// and oversized messages; 1000 (normal) for the application's own reasons.
inline websocket::close_code close_code_for(net::close_reason r) {
    using net::close_reason;
    if (r == close_reason::slow_consumer) return websocket::close_code::policy_error;
    if (r == protocol_error) return websocket::close_code::protocol_error;
    if (r == message_too_big) return websocket::close_code::too_big;
    if (r == net::draining_reason()) return websocket::close_code::service_restart; // 1012: come back soon
    if (net::is_policy_reason(r) || r == close_reason::shutdown) return websocket::close_code::going_away;
    return websocket::close_code::normal;
}

/// One message as every recipient of a broadcast holds it: made once, never copied, freed when the
/// last queue holding it has written it. A broadcast's messages are best made by their producer's
/// connection (ws_connection::make_message: counted against its producer budget); this one counts
/// against nothing (a server's own announcement).
using shared_message = net::shared_message;
inline shared_message make_message(std::string text) { return std::make_shared<const std::string>(std::move(text)); }

/// What one queued message costs beyond its bytes (its queue entry and share of the buffer's block,
/// its frame header): counted against the output bound, so that a flood of tiny messages fills a
/// slow reader's bound in proportion to what it holds, not at a message count.
inline constexpr std::size_t message_overhead = 64;

struct ws_options {
    std::size_t max_message = 64 * 1024;      ///< a larger incoming message closes message-too-big
    std::uint32_t max_queued_messages = 65536; ///< queued past this: slow-consumer (bytes: the output policy)
    bool binary = false;                      ///< send() writes binary messages instead of text
    /// The bytes of a connection's own messages (make_message) that recipients may hold before it
    /// stops reading (net::producer_budget); derived_budget: half the output's soft limit (or, with
    /// it off, of the hard limit): a flood held there never reaches a healthy reader's bound. 0: off.
    std::size_t producer_budget = derived_budget;
    /// The longest a producer waits for its budget (a recipient that reads nothing holds it): 1 ms..60 s.
    std::chrono::milliseconds producer_wait{1000};
    static constexpr std::size_t derived_budget = static_cast<std::size_t>(-1);

    /// The producer budget in bytes under `output` (derived_budget resolved; 0: none).
    std::size_t budget_under(const net::output_policy& output) const noexcept {
        if (producer_budget != derived_budget) return producer_budget;
        const std::size_t bound = output.soft_limit != 0 ? output.soft_limit : output.hard_limit;
        return bound / 2;
    }

    /// Throws config_error naming the field: max_message 16..64 MiB and, with the output's hard
    /// limit on, below it (one message would close every reader it went to); max_queued_messages
    /// 1..2^24; producer_budget 0 or 1 KiB..4 GiB, below the hard limit (a producer's own messages
    /// would close a healthy reader); producer_wait 1 ms..60 s.
    void validate(const net::output_policy& output, const std::string& prefix = "websocket") const {
        net::validate_policy(description(), this, prefix); // each field's own range
        if (producer_budget != derived_budget && producer_budget != 0) {
            if (output.hard_limit != 0 && producer_budget >= output.hard_limit)
                throw net::config_error(prefix + ".producer_budget", std::to_string(producer_budget),
                                        "below the output's hard limit (" + std::to_string(output.hard_limit) +
                                            " bytes): one producer's messages would close a healthy reader");
        }
        if (output.hard_limit != 0 && max_message + message_overhead > output.hard_limit)
            throw net::config_error(prefix + ".max_message", std::to_string(max_message),
                                    "below the output's hard limit (" + std::to_string(output.hard_limit) +
                                        " bytes): one such message would close every recipient slow-consumer");
    }
    /// The `[websocket]` table: each field's own range and help, once (TOML, flags, the docs' knob
    /// table); the bounds against the output's limits are validate(output)'s.
    static const net::policy_description& description() {
        using net::field;
        static const net::field_description fields[] = {
            field<&ws_options::max_message>("max_message", 16, 64 << 20, "a larger incoming message closes `message-too-big`"),
            field<&ws_options::max_queued_messages>("max_queued_messages", 1, 1 << 24,
                                                    "messages queued for a connection past this: closed `slow-consumer`"),
            field<&ws_options::binary>("binary", 0, 1, "send() writes binary messages instead of text"),
            net::derived_when_unset(
                net::noted(net::off_at_zero(field<&ws_options::producer_budget>(
                               "producer_budget", 0, 4294967295.0,
                               "bytes of a connection's own messages its recipients may hold before it stops reading")),
                           "0 (off), 1KiB..4GiB-1, below output.hard_limit"),
                "half of output.soft_limit"),
            field<&ws_options::producer_wait>("producer_wait", 1, 60'000,
                                              "the longest a producer waits for its budget (a recipient that reads nothing holds it)")};
        static const net::policy_description d{"websocket", fields, [](const void* p, const std::string& prefix) {
                                                   const auto b = static_cast<const ws_options*>(p)->producer_budget;
                                                   if (b != 0 && b != derived_budget && b < 1024)
                                                       throw net::config_error(prefix + ".producer_budget", std::to_string(b),
                                                                               "0 (off) or 1024..4294967295 bytes");
                                               }};
        return d;
    }
};

/// The `[websocket]` table's place in a configuration: `net::configuration<ws::ws_slot>` has `.websocket`.
struct ws_slot {
    ws_options websocket;
    ws_options& policy() noexcept { return websocket; }
};

} // namespace heartwheel::ws

#endif
