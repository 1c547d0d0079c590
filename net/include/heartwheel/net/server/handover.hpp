// heartwheel/net/server/handover.hpp — a restart that refuses no connect: the listening sockets go from the
// old process to the new one, the kernel's backlog with them.
//
// Closing a listening socket resets every connection queued in its backlog, and until the new
// process listens, connects are refused. Both are avoided when the socket itself outlives the
// process: the new process receives the very socket the old one listened on (SCM_RIGHTS over a Unix
// socket — the way HAProxy's seamless reload and Envoy's hot restart pass theirs), accepts from the
// same queue, and the old one stops accepting and drains. Nothing is ever unbound, so nothing
// queued is lost and nobody is refused.
//
//   new process                                old process (a handover_server at PATH)
//   inherited_listeners::take(PATH)  ──connect──▶  accepts
//       "heartwheel-handover 1\n"    ───────────▶  give(): its listening sockets (duplicated)
//                                    ◀───────────  "heartwheel-listeners N\n" + N descriptors
//   claim(endpoint) → acceptor, for each it serves
//   confirm(): "taken\n"             ───────────▶  given(): stop accepting, drain
//   its own handover_server at PATH (the old file replaced)
//
// Invariants: the old process lets go only after the new one confirmed that it listens on them: a
// new process that fails half-way (dies, or finds no socket for its address) leaves the old one
// serving. A handover_server hands over once,
// then stops serving; it removes its path when it closes only while the path is still its own
// socket (a successor's is never removed). take() of a path nobody serves (none, or a stale file of
// a process gone) is empty: the first start binds as usual. Received descriptors are close-on-exec
// and checked to be listening stream sockets; what nobody claims is closed.
// systemd's socket activation (LISTEN_PID, LISTEN_FDS) is the other way to inherit a listening socket:
// claim_systemd() finds those the same way. net::listener does all of it given an endpoint
// (listener_options::handover, ::inherit); the two classes here are for a process with sockets of its
// own beside it.
#ifndef HEARTWHEEL_NET_HANDOVER_HPP
#define HEARTWHEEL_NET_HANDOVER_HPP

#include <heartwheel/net/server/listen.hpp>

#include <heartwheel/asio.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace heartwheel::net {

/// Listening sockets a previous process handed over (or systemd passed), claimed by their endpoint.
class inherited_listeners {
public:
    inherited_listeners() = default;
    inherited_listeners(inherited_listeners&& other) noexcept
        : fds_(std::move(other.fds_)), channel_(other.channel_), path_(std::move(other.path_)) {
        other.fds_.clear();
        other.channel_ = -1;
    }
    inherited_listeners& operator=(inherited_listeners&& other) noexcept;
    inherited_listeners(const inherited_listeners&) = delete;
    inherited_listeners& operator=(const inherited_listeners&) = delete;
    ~inherited_listeners(); ///< closes what nobody claimed; without confirm(), the predecessor serves on

    /// Asks the process serving the handover socket `path` for its listening sockets. Empty when
    /// nobody serves it (no file, or a stale one: a first start binds as usual); throws
    /// listen_error naming `path` when a process answers wrongly or not within `timeout`.
    static inherited_listeners take(const std::string& path, std::chrono::milliseconds timeout = std::chrono::seconds(5));
    /// The socket systemd's socket activation passed this process for `endpoint` (LISTEN_PID,
    /// LISTEN_FDS: descriptors from 3 on, read once per process, the variables then unset), as claim()
    /// finds it; nullopt when not activated or none listens there. Thread-safe.
    static std::optional<asio::ip::tcp::acceptor> claim_systemd(const asio::any_io_executor& ex,
                                                                const asio::ip::tcp::endpoint& endpoint);

    /// The socket listening on `endpoint` as an acceptor on `ex`, no longer held here; with port 0
    /// the first one on that address. nullopt when none listens there.
    std::optional<asio::ip::tcp::acceptor> claim(const asio::any_io_executor& ex, const asio::ip::tcp::endpoint& endpoint);

    /// Tells the process they came from that this one listens on them now: it stops accepting and
    /// drains. Throws listen_error when it cannot be told (it then serves on). No-op for systemd's.
    void confirm();

    std::size_t size() const noexcept { return fds_.size(); }
    bool empty() const noexcept { return fds_.empty(); }

private:
    explicit inherited_listeners(std::vector<int> fds) : fds_(std::move(fds)) {}
    static inherited_listeners from_systemd();
    std::vector<int> fds_;
    int channel_ = -1; // to the predecessor, until confirm()
    std::string path_;
};

/// Serves one handover, on a Unix socket at `path`, of this process's listening sockets.
class handover_server {
public:
    /// `give`: the native handles of the listening sockets to hand over, in the order a successor
    /// claims them (they are duplicated; this process's stay open). `given`: called on `ex` once the
    /// successor holds them — stop accepting and drain. Replaces a stale socket file at `path`;
    /// throws listen_error naming `path` when it cannot (a file that is not a socket, a directory
    /// that does not exist, a process already serving it).
    handover_server(const asio::any_io_executor& ex, std::string path, std::function<std::vector<int>()> give,
                    std::function<void()> given);
    handover_server(const handover_server&) = delete;
    handover_server& operator=(const handover_server&) = delete;
    ~handover_server(); ///< close()

    /// Stops serving; removes `path` if it is still this server's socket. Idempotent.
    void close() noexcept;
    const std::string& path() const noexcept;
    /// Whether the sockets went to a successor.
    bool handed_over() const noexcept;

private:
    struct state;
    std::shared_ptr<state> state_;
};

} // namespace heartwheel::net

#endif
