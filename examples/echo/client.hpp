// client.hpp — echo_client: many connections from one io_context, each sending timed requests
// (a line that its echo answers), answering PINGs, counting BYE reasons, and reconnecting with
// backoff. At the end it prints one JSON object (the last line of stdout).
#ifndef HEARTWHEEL_ECHO_CLIENT_HPP
#define HEARTWHEEL_ECHO_CLIENT_HPP

#include "options.hpp"

#include <heartwheel/asio_wheel.hpp>
#include <heartwheel/net/connection/connection_context.hpp>
#include <heartwheel/net/metrics/counters.hpp>

#include <asio/io_context.hpp>
#include <asio/ssl/context.hpp>

#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <random>
#include <vector>

namespace echo {

struct client_stats {
    std::uint64_t connects = 0, connect_failures = 0, reconnects = 0, requests = 0, responses = 0, timeouts = 0;
    std::uint64_t pings_received = 0, pongs_sent = 0, disconnects = 0;
    std::uint64_t failed_on_close = 0; ///< requests still outstanding when their connection closed
    std::uint64_t retried = 0;         ///< outstanding at a BYE draining (never processed): sent again after reconnecting
    std::uint64_t unanswered_at_exit = 0; ///< outstanding when --duration ended (neither answered nor failed)
    std::uint64_t protocol_errors = 0; ///< lines from the server that are not the protocol (the link closed)
    std::map<std::string, std::uint64_t> closed_by_server; ///< BYE reasons: at most max_reasons keys, each cut to 64 bytes
    static constexpr std::size_t max_reasons = 32;
    /// Counts a server's BYE reason; a hostile server's unique reasons cannot grow the map without end.
    void count_bye(std::string_view reason);
    std::map<std::string, std::uint64_t> closed_by_liveness; ///< our own policies' closes (reader-idle, ...)
    std::vector<std::uint32_t> rtt_us; ///< a uniform sample (reservoir) of echo round trips
    std::uint64_t rtt_seen = 0;
    std::mt19937_64 sampler{12345};
    std::int64_t timeline_ms = 0;            ///< --timeline: the bin's width (0: no timeline)
    std::vector<std::uint64_t> established;  ///< first establishments per bin since the start

    void add_rtt(std::uint32_t us);
    std::string json() const;
};

class client_connection;

class load_client {
public:
    explicit load_client(const client_options& options);
    ~load_client();
    /// Runs for --duration, prints progress to `err` (unless --quiet) and the JSON summary to `out`.
    int run(std::ostream& out, std::ostream& err);

    const client_options& options() const noexcept { return options_; }
    client_stats& stats() noexcept { return stats_; }
    asio::io_context& io() noexcept { return io_; }
    heartwheel::asio_wheel& wheel() noexcept { return wheel_; }
    asio::ssl::context* tls() noexcept { return tls_ ? &*tls_ : nullptr; }
    heartwheel::net::liveness_counters& counters() noexcept { return counters_; }
    /// What every link's connection shares: the wheel, the liveness policies, the counters.
    const heartwheel::net::connection_context& context() const noexcept { return context_; }
    bool stopping() const noexcept { return stopping_; }
    /// A connection's first attempt ended (established, or failed): the timeline counts it, and with
    /// --connect-window the next connection begins.
    void first_attempt_done(bool established);

private:
    // Declared before io_ and wheel_: connections still held by handlers in io_ use them until the
    // destructor has drained those handlers.
    client_options options_;
    std::optional<asio::ssl::context> tls_;
    client_stats stats_;
    heartwheel::net::liveness_counters counters_;
    asio::io_context io_{1};
    heartwheel::asio_wheel wheel_;
    heartwheel::net::connection_context context_;
    std::vector<std::shared_ptr<client_connection>> connections_;
    std::vector<heartwheel::timer_handle> staggered_starts_; ///< --connect-stagger-us
    std::size_t next_start_ = 0; ///< --connect-window: the next connection to begin
    heartwheel::clock::time_point start_{};
    bool stopping_ = false;
};

} // namespace echo

#endif
