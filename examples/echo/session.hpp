// session.hpp — the echo protocol on one heartwheel::net::connection, for any stream (tcp::socket or
// net::tls_socket) and any timing (net's wheel liveness, or one of --timers' others: timing.hpp).
// Only the protocol lives here: lines up to --max-line bytes are split by line_framer from the chunks
// the stream's async_receive lends (an idle session holds no read buffer); PING is
// answered, PONG consumed (it is not reader activity), everything else echoed; a too-long line closes
// with the application's own reason `line-too-long`. The connection records all I/O (any byte proves
// liveness to the heartbeat), queues and coalesces the replies, stops this session's reading while
// the peer does not take them (on_writable resumes it), and owns the close: BYE <reason> as last
// words, a linger, one count per close. How many connect at once is the listener's admission; per
// source it is the worker's: with a per-source handshake limit a TLS session holds a place in the
// worker's handshake gate until its handshake ends, and (unless --source-share 0) every session is
// counted under its peer's address (either may close it: busy, over-share).
#ifndef HEARTWHEEL_ECHO_SESSION_HPP
#define HEARTWHEEL_ECHO_SESSION_HPP

#include "protocol.hpp"
#include "worker.hpp"

#include <heartwheel/net/connection/connection.hpp>
#include <heartwheel/net/connection/connection_with.hpp>
#include <heartwheel/net/tls/tls_socket.hpp>
#include <heartwheel/net/connection/line_framer.hpp>


#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>

namespace echo {

using heartwheel::net::close_reason;

/// The echo server's own close reasons (net/ knows nothing of them).
inline const heartwheel::net::close_reason line_too_long = heartwheel::net::define_close_reason("line-too-long");
inline const heartwheel::net::close_reason busy = heartwheel::net::define_close_reason("busy");
/// Displaced at --max-connections by a newcomer: its address held the most beyond --source-share.
inline const heartwheel::net::close_reason over_share = heartwheel::net::define_close_reason("over-share");

template <class Stream, class Liveness>
class session final : public session_base {
public:
    using connection_type = heartwheel::net::connection<Stream, Liveness>;

    /// Made by start() (or start_with()) in its connection's heap block, after the connection.
    /// Counted under `peer` (its source) before the population changes: one re-judging of the
    /// pressure per session that starts or ends.
    session(connection_type& c, worker& w, const asio::ip::address& peer)
        : w_(w), conn_(c), framer_(w.options.max_line), held_(0), reading_(false) {
        link_before(w_.sessions);
        if (w_.shares) {
            w_.shares->add(*this, peer);
            w_.mirror_excess();
        }
        w_.counters.active.fetch_add(1, std::memory_order_relaxed);
        w_.population_changed();
    }
    ~session() override {
        if (counted()) {
            w_.shares->remove(*this);
            w_.mirror_excess();
        }
        if (held_) {
            w_.counters.read_buffers.fetch_sub(1, std::memory_order_relaxed);
            w_.counters.read_buffer_bytes.fetch_sub(held_, std::memory_order_relaxed);
        }
        unlink();
        w_.counters.active.fetch_sub(1, std::memory_order_relaxed);
        w_.population_changed();
    }

    /// Takes over `stream`, timed by the wheel's liveness as `ctx` (the worker's context) says: the
    /// session and its connection in one heap block (net::make_connection_with), which the connection
    /// holds until it closes.
    /// `peer`: the client's address (the listener's: a PROXY header's behind a balancer).
    static std::shared_ptr<session> start(worker& w, Stream stream, const asio::ip::address& peer,
                                          const heartwheel::net::connection_context& ctx) {
        auto s = heartwheel::net::make_connection_with<connection_type>(
            [&w, &peer](connection_type& c) { return session(c, w, peer); }, std::move(stream), ctx);
        s->begin(peer);
        return s;
    }
    /// Takes over `stream`, timed by a liveness `make_liveness(liveness_handler&)` makes (a timing
    /// registered for --timers: net::connection's constructor for a liveness of one's own).
    template <class MakeLiveness>
    static std::shared_ptr<session> start_with(worker& w, Stream stream, const asio::ip::address& peer,
                                               MakeLiveness&& make_liveness) {
        auto s = heartwheel::net::make_connection_with<connection_type>(
            [&w, &peer](connection_type& c) { return session(c, w, peer); }, std::move(stream), make_liveness, nullptr,
            w.context.options);
        s->conn_.apply_socket_options(w.options.live.keepalive); // no context: set here
        s->begin(peer);
        return s;
    }

    void shutdown() override { // the goodbye may take the whole shutdown grace to go out
        conn_.close(close_reason::shutdown, std::chrono::milliseconds(w_.options.shutdown_grace_ms));
    }
    void abort() override { conn_.abort(close_reason::shutdown); }
    void displace() override {
        w_.mirror_excess(); // the table uncounted it; the population changes when it ends
        conn_.close(over_share);
    }

private:
    /// A reference that keeps the session — its connection's block — alive (for handlers in flight).
    std::shared_ptr<session> ref() { return {conn_.shared_from_this(), this}; }

    /// Starts the protocol on its connection.
    void begin(const asio::ip::address& peer) {
        if constexpr (connection_type::is_tls) {
            if (!admit_handshake(peer)) return;
            conn_.async_handshake(asio::ssl::stream_base::server, [self = ref()](std::error_code ec) {
                self->place_.reset(); // done, failed or shed: its source's place is free
                if (!ec) self->pump(); // a failure or timeout closed (and counted) it already
            });
        } else {
            pump();
        }
    }

    /// The session's place among its source's handshakes in progress (TLS, until its handshake ends).
    using handshake_place = heartwheel::net::handshake_gate::waiter;

    /// Takes a place in the worker's handshake gate (with per-source limits), or closes the
    /// connection busy (its source is at its limit).
    bool admit_handshake(const asio::ip::address& peer) {
        const auto& l = w_.handshakes.limits();
        if (l.max_pending_per_source == 0 && l.per_source_rate == 0) return true;
        place_ = std::make_unique<handshake_place>();
        using verdict = heartwheel::net::handshake_gate::verdict;
        if (w_.handshakes.admit(*place_, peer, heartwheel::net::handshake_gate::clock::now()) == verdict::admitted) return true;
        place_.reset();
        w_.counters.busy.fetch_add(1, std::memory_order_relaxed);
        conn_.abort(busy);
        return false;
    }

    // --- connection_handler ------------------------------------------------------------------------
    void send_ping() override { send("PING " + std::to_string(++ping_seq_)); }
    void last_words(close_reason r) override {
        if (r == heartwheel::net::draining_reason()) // the window the client may reconnect within
            return send("BYE draining " + std::to_string(w_.options.drain_window_ms));
        send("BYE " + std::string(heartwheel::net::to_string(r)));
    }
    void on_writable() override { pump(); }

    // Handles the lines kept and lent, receives more unless the connection is closing or its write
    // queue is full (the connection's on_writable pumps again once drained), then keeps what is left
    // of the lent bytes (backpressure, a close) so that their chunk can go back, and counts it.
    void pump() {
        read();
        framer_.stash();
        account();
    }

    // The receive holds no buffer while it waits; the chunk it brings is the thread's, lent to the
    // framer for one pump.
    void read() {
        if (reading_ || !handle_lines()) return;
        reading_ = true;
        conn_.stream().async_receive(
            [self = ref()](std::error_code ec, heartwheel::net::read_chunk chunk) {
                self->reading_ = false;
                self->on_read(ec, chunk);
            });
    }

    void on_read(std::error_code ec, const heartwheel::net::read_chunk& chunk) {
        if (ec) return conn_.read_failed(ec); // the peer's end (TLS: with or without close_notify), or an error
        framer_.feed(chunk.bytes());
        pump();
    }

    // Keeps the worker's count of connections holding a read buffer (and its bytes) current.
    void account() {
        const std::size_t now = framer_.memory();
        if (now == held_) return;
        if ((now == 0) != (held_ == 0)) w_.counters.read_buffers.fetch_add(now ? 1 : std::uint64_t(-1), std::memory_order_relaxed);
        w_.counters.read_buffer_bytes.fetch_add(now - held_, std::memory_order_relaxed);
        held_ = static_cast<std::uint32_t>(now);
    }

    /// True when every complete line was handled and more bytes are wanted.
    bool handle_lines() {
        std::string_view line;
        while (conn_.can_read()) {
            switch (framer_.next(line)) {
            case heartwheel::net::line_framer::status::need_more: return true;
            case heartwheel::net::line_framer::status::too_long: conn_.close(line_too_long); return false;
            case heartwheel::net::line_framer::status::line: on_line(line); break;
            }
        }
        return false;
    }

    void on_line(std::string_view line) {
        const parsed_line p = parse_line(line);
        w_.counters.lines.fetch_add(1, std::memory_order_relaxed);
        if (p.kind == line_kind::pong) {
            conn_.pong_received();
            return;
        }
        conn_.message_received();
        if (p.kind == line_kind::ping) {
            w_.counters.pings_answered.fetch_add(1, std::memory_order_relaxed);
            send("PONG " + std::string(p.arg));
        } else {
            send(line);
        }
    }

    void send(std::string_view line) { conn_.send({line, "\n"}); }

    worker& w_;
    connection_type& conn_; ///< in the same heap block, made before the session and destroyed after it
    struct no_place {};
    /// Only while a TLS handshake is in progress; a TCP session has no member for it.
    [[no_unique_address]] std::conditional_t<connection_type::is_tls, std::unique_ptr<handshake_place>, no_place> place_;
    heartwheel::net::line_framer framer_;
    // 32-bit, beside each other, the flag in the count's word: a ping a second wraps after a
    // century, and a framer holds at most --max-line (16 MiB) and a chunk. With no place_ a TCP
    // session is 112 bytes (the handler's vtable pointer, the worker's ring, its source-share membership,
    // the framer, these), inside its connection's heap block (echo_protocol_test holds it there).
    std::uint32_t ping_seq_ = 0;
    std::uint32_t held_ : 31;   ///< framer_.memory() as last counted
    std::uint32_t reading_ : 1;
};

} // namespace echo

#endif
