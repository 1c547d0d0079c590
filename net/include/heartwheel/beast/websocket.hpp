// heartwheel/beast/websocket.hpp — a Boost.Beast WebSocket stream over a heartwheel connection: the
// framing layer above the byte transport, under the connection's one close path.
//
//   auto ws = ws::ws_connection<tcp::socket>::create(std::move(socket), ctx, app_handler);
//   co_await ws->async_accept(use_awaitable);               // the upgrade, under handshake_timeout
//   auto n = co_await ws->async_read(buffer, use_awaitable); // one whole message: reader activity
//   ws->send(text);                                         // a queued message, bounded; any thread
//
// A server that answers plain HTTP on its WebSocket port as well (its own page, a health check) reads
// the opening request first (async_read_request), then upgrades it (async_accept(req)) or answers it
// (respond(): the connection closes http-served once the answer is written); both under the handshake
// timeout, as the upgrade alone is.
//
// The layers. net::connection keeps what every connection has: its liveness (wheel timers), the
// count of each close with its reason, the linger, the FIN, the handler; its output layer is
// framed_output (no byte queue: this layer queues messages, Beast writes them). Beast's
// websocket::stream<connection::stream_type&> frames messages over the connection's own stream, so
// every byte Beast reads or writes is recorded there (any byte proves liveness to the heartbeat;
// writer idleness sees the frames). This layer is the connection's handler and speaks WebSocket for it:
//  - the heartbeat's ping is a ping frame (one in flight at most); the pong arrives through Beast's
//    control callback, during a read, and is the heartbeat's round trip;
//  - idleness counts whole messages (async_read's completions), not frames or bytes: a peer that
//    trickles fragments of a message that never ends, or only answers pings, is idle, as a peer
//    trickling a line that never ends is in the line protocols;
//  - the goodbye is a close frame whose code says why (close_code_for) and whose reason text is the
//    close reason's name; the connection waits for it (goodbye_in_flight / goodbye_written), bounded
//    by its linger — not for a peer judged dead, which will not answer it — then sends its FIN. Beast's own teardown is the connection's: async_teardown on a
//    liveness_stream completes at once and leaves the socket to the close path;
//  - a peer that breaks the protocol or sends a message over max_message is answered by Beast with a
//    close frame (1002 / 1009) and closed protocol-error / message-too-big, counted once; a close
//    frame with an undefined code (5000 and up), which Beast would echo, is answered 1002 here;
//  - the output is bounded in bytes, each message counted with message_overhead (the connection's
//    output policy: the hard limit closes at once, the soft one after its time, slow-consumer), and
//    in messages (max_queued_messages); writable()/on_writable as the connection's. A broadcast
//    hands every recipient one shared_message (make_message): one buffer, no copy per recipient;
//  - the producer is slowed, not its readers closed: the messages a connection's peer sends to others
//    (this connection's make_message) count against its producer budget while any recipient holds
//    them; over it, async_read waits before reading on (the peer's TCP window closes), at most
//    producer_wait at a time (net/connection/producer_budget.hpp says why the wait is bounded).
// Beast's own timeouts (stream_base::timeout) stay off: the wheel times everything.
//
// Threads: as net::connection — it lives on its socket's executor (a thread's io_context or a strand
// of a pool's); send() and close() may be called from anywhere and post themselves when away.
// Invariants: one write (message or close frame) and one ping are in flight at most, as Beast
// requires; after the close frame nothing else is written; the queue's bytes (each message's size plus
// message_overhead) are counted in queued_.
#ifndef HEARTWHEEL_BEAST_WEBSOCKET_HPP
#define HEARTWHEEL_BEAST_WEBSOCKET_HPP

#if !defined(HEARTWHEEL_BOOST_ASIO)
#error "heartwheel/beast/websocket.hpp needs heartwheel's Boost.Asio flavour (link heartwheel::beast)"
#endif

#include <heartwheel/net/config/liveness_config.hpp>
#include <heartwheel/net/connection/connection.hpp>
#include <heartwheel/net/connection/framed_output.hpp>
#include <heartwheel/net/connection/output_bound.hpp>
#include <heartwheel/net/connection/producer_budget.hpp>
#include <heartwheel/net/detail/home_executor.hpp>

#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/websocket.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <deque>
#include <thread>
#include <vector>
#include <memory>
#include <string>
#include <string_view>

namespace heartwheel::net {

// Beast's teardown customization for a connection's stream: the connection's close path owns the
// socket (FIN after the goodbye, the linger, the close), so Beast's part of it is done at once.
template <class NextLayer>
void teardown(boost::beast::role_type, liveness_stream<NextLayer>&, error_code& ec) {
    ec = {};
}
template <class NextLayer, class TeardownHandler>
void async_teardown(boost::beast::role_type, liveness_stream<NextLayer>& stream, TeardownHandler&& handler) {
    asio::post(stream.get_executor(), boost::beast::bind_front_handler(std::forward<TeardownHandler>(handler), error_code{}));
}

} // namespace heartwheel::net

namespace heartwheel::ws {

namespace websocket = boost::beast::websocket;

/// Closes of this layer's own: a peer that broke the protocol (Beast answered 1002), or sent a
/// message larger than max_message (Beast answered 1009).
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
/// Beast's frame header): counted against the output bound, so that a flood of tiny messages fills a
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

template <class NextLayer>
class ws_connection final : public std::enable_shared_from_this<ws_connection<NextLayer>>,
                            private net::connection_handler {
    struct make_tag {}; // create() only

public:
    /// The session's life under this layer; framed_output: no byte queue of its own, Beast writes.
    using connection_type = net::connection<NextLayer, net::connection_liveness, net::framed_output>;
    using websocket_type = websocket::stream<typename connection_type::stream_type&>;
    /// The opening request as async_read_request reads it: a head, no body.
    using request_type = websocket::request_type;
    /// The longest opening request head (a larger one closes handshake-failed).
    static constexpr std::uint32_t max_request_head = 8 * 1024;

    /// A WebSocket connection over `next_layer` (TLS streams: handshake with connection() first),
    /// timed as `ctx` says with whole messages as reader activity. `handler` (may be null) is told
    /// on_close, on_writable and on_idle; pings and goodbyes are this layer's.
    static std::shared_ptr<ws_connection> create(NextLayer next_layer, const net::connection_context& ctx,
                                                 std::shared_ptr<net::connection_handler> handler = nullptr,
                                                 ws_options options = {}) {
        options.validate(ctx.options.output);
        auto self = std::make_shared<ws_connection>(make_tag{}, ctx, std::move(handler), options);
        net::connection_options o = ctx.options;
        o.activity = net::reader_activity::messages; // messages are activity (message_received), not bytes
        self->conn_ = std::make_shared<connection_type>(
            std::move(next_layer), ctx, std::shared_ptr<net::connection_handler>(self, static_cast<net::connection_handler*>(self.get())), o);
        self->on_strand_ = net::detail::is_strand_executor(self->conn_->get_executor());
        self->ws_.emplace(self->conn_->stream());
        self->ws_->read_message_max(options.max_message);
        self->ws_->binary(options.binary);
        self->ws_->control_callback([raw = self.get()](websocket::frame_type kind, boost::beast::string_view) {
            if (kind == websocket::frame_type::pong) raw->conn_->pong_received();
            else if (kind == websocket::frame_type::close) raw->refuse_undefined_close_code();
        });
        return self;
    }

    ws_connection(make_tag, const net::connection_context& ctx, std::shared_ptr<net::connection_handler> handler,
                  ws_options options)
        : timers_(ctx.timers), app_(std::move(handler)), options_(options), bound_(ctx.options.output),
          budget_(options.budget_under(ctx.options.output), message_overhead, options.producer_wait) {
    }

    /// The WebSocket upgrade in the server role, timed by the handshake timeout; a bad request is
    /// answered by Beast (400) and closed handshake-failed. Completion: void(error_code).
    template <class Token>
    auto async_accept(Token&& token) {
        return asio::async_compose<Token, void(error_code)>(accept_op{this->shared_from_this(), nullptr}, token, conn_->stream());
    }

    /// Reads the opening request, for a server that answers plain HTTP on its WebSocket port too:
    /// under the handshake timeout, its head at most max_request_head bytes and no body (otherwise
    /// the connection closes handshake-failed). Then async_accept(req) if websocket::is_upgrade(req),
    /// else respond(). On the connection's executor. Completion: void(error_code).
    template <class Token>
    auto async_read_request(request_type& req, Token&& token) {
        return asio::async_compose<Token, void(error_code)>(read_request_op{this->shared_from_this(), req, nullptr}, token,
                                                            conn_->stream());
    }
    /// The upgrade of a request async_read_request read (`req` outlives the operation); still under
    /// the handshake timeout it started. A request Beast refuses is answered 400 and closed
    /// handshake-failed. Completion: void(error_code).
    template <class Token>
    auto async_accept(const request_type& req, Token&& token) {
        return asio::async_compose<Token, void(error_code)>(accept_op{this->shared_from_this(), &req}, token,
                                                            conn_->stream());
    }
    /// Answers a request async_read_request read that is not an upgrade with `res` (its length
    /// prepared by the caller; sent with Connection: close) and closes the connection http-served
    /// once it is written — still under the handshake timeout (a peer that does not read the answer
    /// is closed handshake-timeout). On the connection's executor.
    template <class Body, class Fields>
    void respond(boost::beast::http::response<Body, Fields> res) {
        if (conn_->closing()) return;
        res.keep_alive(false);
        auto held = std::make_shared<boost::beast::http::response<Body, Fields>>(std::move(res));
        boost::beast::http::async_write(conn_->stream(), *held, [self = this->shared_from_this(), held](error_code ec, std::size_t) {
            self->conn_->handshake_finished();
            if (self->conn_->closing()) return;
            if (ec) return self->conn_->read_failed(ec);
            self->conn_->close(http_served);
        });
    }

    /// Reads one whole message into `buffer` (a DynamicBuffer): reader activity. First, while this
    /// connection's messages held by recipients are over its producer budget, it waits (the peer's
    /// silence meanwhile is not judged: hold_reads). An error closes the
    /// connection with what it means (peer-closed for the peer's close frame or end of stream,
    /// protocol-error, message-too-big, io-error); after a close, the close's error. Completion:
    /// void(error_code, std::size_t).
    template <class DynamicBuffer, class Token>
    auto async_read(DynamicBuffer& buffer, Token&& token) {
        return asio::async_compose<Token, void(error_code, std::size_t)>(read_op<DynamicBuffer>{this->shared_from_this(), buffer},
                                                                         token, conn_->stream());
    }

    /// Queues one message (text, or binary with ws_options::binary); written in order, one at a time,
    /// from the end of the upgrade on (a greeting may be sent before it). Ignored once closing. Bounded as the connection's output (see the top of this file). From
    /// outside the connection's strand it goes through an inbox: one post takes all that arrived.
    void send(std::string_view message) { send(make_message(std::string(message))); }
    void send(const char* message) { send(make_message(message)); }
    void send(std::string&& message) { send(make_message(std::move(message))); }
    /// A message of this connection's peer for others (a broadcast's), counted against this
    /// connection's producer budget while any recipient holds it: over it, async_read waits before
    /// it reads the next message (see net/connection/producer_budget.hpp). On the connection's executor.
    shared_message make_message(std::string text) { return budget_.make_message(std::move(text)); }
    /// A message shared with other recipients (a broadcast): queued by reference, never copied.
    void send(shared_message message) {
        if (away()) return send_from_away(std::move(message));
        if (conn_->closing() || bound_.slow()) return;
        queued_ += cost(*message);
        push(std::move(message));
        bound_output();
        if (!writing_ && !bound_.slow() && open_) write_next(); // before the upgrade: written once it is done
    }
    /// Whether a producer may send now (the output's high-water mark); on_writable follows a false.
    bool writable() const noexcept { return bound_.writable(queued_); }
    /// Bytes queued and not yet written (the message being written included).
    std::size_t queued() const noexcept { return queued_; }

    /// The connection's close path: a close frame saying `why`, then the FIN; from any thread.
    void close(net::close_reason why) { conn_->close(why); }

    connection_type& connection() noexcept { return *conn_; }
    websocket_type& websocket() noexcept { return *ws_; }
    auto get_executor() noexcept { return conn_->get_executor(); }

private:
    bool away() { return on_strand_ && !net::detail::running_in_home(conn_->get_executor()); }

    // --- net::connection_handler: the connection asks, WebSocket answers --------------------------
    // A drain: an open WebSocket closes `draining`, its last words the close 1012. One asked in the
    // middle of its upgrade finishes it first (closed now, the client would see its upgrade fail, a
    // connect that failed rather than a server that asked it to come back), then leaves the same
    // way; an upgrade that never finishes ends at its handshake deadline or the drain window's end.
    bool on_drain() override {
        if (open_) return false;
        drain_after_upgrade_ = true;
        return true;
    }
    void send_ping() override {
        if (!open_ || pinging_) return;
        pinging_ = true;
        ws_->async_ping({}, [self = this->shared_from_this()](error_code) { self->pinging_ = false; });
    }
    void last_words(net::close_reason why) override {
        drop_queue();
        if (!open_) return; // no WebSocket yet (mid-upgrade): nothing to say
        conn_->goodbye_in_flight();
        const std::string_view name = net::to_string(why);
        websocket::close_reason frame(close_code_for(why), boost::beast::string_view(name.data(), name.size()));
        // Beast queues it behind a message write in flight; then it waits for the peer's close frame.
        ws_->async_close(frame, [self = this->shared_from_this()](error_code) { self->conn_->goodbye_written(); });
        // A peer judged dead answers no close frame: its goodbye is out once handed to the socket,
        // which Beast did as it began (or it waits behind a write the dead peer's window holds, lost
        // with it either way) — the FIN follows on the next turn, not at the linger's end.
        if (net::is_peer_dead_reason(why)) conn_->post([](connection_type& c) { c.goodbye_written(); });
    }
    void on_close(net::close_reason why) override {
        drop_queue();
        bound_.stop();
        budget_.cancel(); // a read waiting for the budget completes, with the close's error
        if (auto app = std::exchange(app_, nullptr)) app->on_close(why);
    }
    void on_idle(net::idle_event e) override {
        if (app_) app_->on_idle(e);
    }
    void on_detached() noexcept override {
        budget_.drop(); // a read waiting for the budget holds this connection: the cycle goes
        if (auto app = std::exchange(app_, nullptr)) app->on_detached();
    }

    // --- sends from other strands: one inbox, one post --------------------------------------------
    // A broadcast from another shard reaches this connection through its inbox: the messages wait
    // there (16 bytes each) and one post takes them all to the strand, where a post per message held
    // a handler each (~100 bytes) while the server was behind — most of what a busy room held.
    void send_from_away(shared_message m) {
        {
            const inbox_lock lock(inbox_busy_);
            inbox_.push_back(std::move(m));
            if (inbox_posted_) return;
            inbox_posted_ = true;
        }
        conn_->post([self = this->shared_from_this()](connection_type&) { self->take_inbox(); });
    }
    void take_inbox() {
        std::vector<shared_message> arrived;
        {
            const inbox_lock lock(inbox_busy_);
            arrived.swap(inbox_);
            inbox_posted_ = false;
        }
        for (auto& m : arrived) send(std::move(m));
    }
    // A spin lock (one byte; held for a push_back): the inbox is touched by producers on other
    // threads and once per post by the strand.
    struct inbox_lock {
        explicit inbox_lock(std::atomic_flag& f) noexcept : flag(f) {
            while (flag.test_and_set(std::memory_order_acquire)) std::this_thread::yield();
        }
        ~inbox_lock() { flag.clear(std::memory_order_release); }
        std::atomic_flag& flag;
    };

    // --- the message queue -------------------------------------------------------------------------
    void write_next() {
        writing_ = true;
        current_ = pop(); // Beast writes from current_: the queue may grow meanwhile
        ws_->async_write(asio::buffer(*current_), [self = this->shared_from_this()](error_code ec, std::size_t) {
            self->on_written(ec);
        });
    }
    void on_written(error_code ec) {
        writing_ = false;
        queued_ -= cost(*current_);
        current_.reset();
        if (ec) return conn_->abort(net::close_reason::io_error); // while closing: ends the close
        if (conn_->closing()) return;
        if (pending() > 0) return write_next();
        if (bound_.drained(queued_) && app_) app_->on_writable();
    }
    // Everything not yet being written goes (Beast is writing from current_).
    void drop_queue() {
        if (!queue_) return;
        for (const auto& m : *queue_) queued_ -= cost(*m);
        queue_.reset();
    }
    // The queue is a deque made at the first message and freed once drained: memory in proportion to
    // what it holds (its blocks of 32 entries come and go; a vector's capacity doubled to twice its
    // peak), nothing at all while idle (an empty libstdc++ deque already holds ~600 bytes).
    void push(shared_message m) {
        if (!queue_) queue_ = std::make_unique<std::deque<shared_message>>();
        queue_->push_back(std::move(m));
    }
    shared_message pop() {
        shared_message m = std::move(queue_->front());
        queue_->pop_front();
        if (queue_->empty()) queue_.reset();
        return m;
    }
    void bound_output() {
        const bool over_count = pending() + (writing_ ? 1u : 0u) > options_.max_queued_messages;
        const auto on_soft_time = [this] {
            return [weak = this->weak_from_this()] {
                auto self = weak.lock();
                if (self && self->bound_.soft_time_up(self->queued_)) self->conn_->close_slow_consumer(net::slow_bound::soft_limit);
            };
        };
        if (bound_.grew(queued_, timers_, on_soft_time, over_count)) {
            drop_queue(); // the memory goes now; the close follows on the next turn (a broadcast loop stays valid)
            const auto which = over_count ? net::slow_bound::message_count : net::slow_bound::hard_limit;
            conn_->post([which](connection_type& c) { c.close_slow_consumer(which); });
        }
    }

    // --- composed operations -----------------------------------------------------------------------
    struct accept_op {
        std::shared_ptr<ws_connection> c;
        const request_type* req = nullptr; ///< read by async_read_request (which started the handshake timeout)
        bool started = false;
        template <class Self>
        void operator()(Self& self, error_code ec = {}) {
            if (!started) {
                started = true;
                if (c->conn_->closing()) return self.complete(error_code(net::errc::connection_closed));
                if (req) return c->ws_->async_accept(*req, std::move(self));
                c->conn_->handshake_started();
                return c->ws_->async_accept(std::move(self));
            }
            c->conn_->handshake_finished();
            if (c->conn_->closing()) return self.complete(ec ? ec : error_code(net::errc::connection_closed));
            if (ec) {
                c->conn_->abort(net::close_reason::handshake_failed);
                return self.complete(ec);
            }
            c->open_ = true;
            if (c->drain_after_upgrade_) c->conn_->leave(); // asked mid-upgrade: the 1012 goes now
            if (c->pending() > 0 && !c->writing_) c->write_next(); // what was sent during the upgrade
            self.complete(ec);
        }
    };

    struct read_request_op {
        std::shared_ptr<ws_connection> c;
        request_type& req;
        struct opening {
            boost::beast::flat_buffer buffer;
            boost::beast::http::request_parser<boost::beast::http::empty_body> parser;
        };
        std::unique_ptr<opening> in; ///< only while the request is read: an open connection holds none
        template <class Self>
        void operator()(Self& self, error_code ec = {}, std::size_t = 0) {
            if (!in) {
                if (c->conn_->closing()) return self.complete(error_code(net::errc::connection_closed));
                in = std::make_unique<opening>();
                in->parser.header_limit(max_request_head);
                c->conn_->handshake_started();
                auto& state = *in;
                return boost::beast::http::async_read(c->conn_->stream(), state.buffer, state.parser, std::move(self));
            }
            if (c->conn_->closing()) return self.complete(ec ? ec : error_code(net::errc::connection_closed));
            if (ec) {
                // Gone before a byte of a request — a browser's spare preconnection ends it, a balancer's
                // health check resets it (HAProxy's checks close without lingering) — is the peer's own
                // end, not a failed handshake; a request cut or garbled is one.
                const bool gone = ec == boost::beast::http::error::end_of_stream || ec == asio::error::connection_reset ||
                                  ec == asio::error::eof;
                const bool nothing_sent = gone && !in->parser.got_some() && in->buffer.size() == 0;
                c->conn_->abort(nothing_sent ? net::close_reason::peer_closed : net::close_reason::handshake_failed);
                return self.complete(ec);
            }
            req = in->parser.release();
            self.complete(ec);
        }
    };

    template <class DynamicBuffer>
    struct read_op {
        std::shared_ptr<ws_connection> c;
        DynamicBuffer& buffer;
        enum { start, waited, reading } stage = start;
        template <class Self>
        void operator()(Self& self, error_code ec = {}, std::size_t n = 0) {
            if (stage == start && c->budget_.over() && !c->conn_->closing()) {
                stage = waited;
                c->conn_->hold_reads(true);
                return c->budget_.async_wait(c->timers_, c->get_executor(), std::move(self));
            }
            if (stage != reading) {
                if (stage == waited) c->conn_->hold_reads(false);
                if (c->conn_->closing()) return self.complete(error_code(net::errc::connection_closed), 0);
                stage = reading;
                return c->ws_->async_read(buffer, std::move(self));
            }
            if (ec) c->read_failed(ec);
            else c->conn_->message_received();
            self.complete(ec, n);
        }
    };

    // RFC 6455 7.4.2: close codes from 5000 on are not defined, and a peer that sends one fails the
    // connection (1002). Beast accepts them and echoes the peer's code, from a local copy no hook can
    // change: so, before it writes, this layer says 1002 itself (plain sockets with no write of
    // Beast's in flight: the frame cannot land inside another), ends its side and closes the
    // connection protocol-error at once (the peer's close frame is read: nothing unread to reset
    // it); Beast's echo then fails on the closed socket.
    void refuse_undefined_close_code() {
        if (ws_->reason().code < 5000) return;
        undefined_close_code_ = true;
        auto& socket = conn_->stream().lowest_layer();
        error_code ec;
        if constexpr (!connection_type::is_tls) {
            static constexpr unsigned char protocol_error_frame[] = {0x88, 0x02, 0x03, 0xEA};
            if (!writing_ && !pinging_) conn_->stream().next_layer().write_some(asio::buffer(protocol_error_frame), ec);
        }
        socket.shutdown(asio::socket_base::shutdown_send, ec);
        conn_->abort(protocol_error);
    }

    void read_failed(error_code ec) {
        if (undefined_close_code_) return conn_->abort(protocol_error);
        // The peer's close frame (Beast answered it): the close handshake is over.
        if (ec == websocket::error::closed) return conn_->abort(net::close_reason::peer_closed);
        if (conn_->closing()) return conn_->read_failed(ec); // ended by our own close
        if (ec == websocket::error::message_too_big) return conn_->abort(message_too_big);
        if (ec == websocket::condition::protocol_violation) return conn_->abort(protocol_error);
        conn_->read_failed(ec);
    }

    timer_scheduler& timers_;
    std::shared_ptr<net::connection_handler> app_;
    ws_options options_;
    net::output_bound bound_; ///< the slow-consumer bound and the water marks of the message queue
    net::producer_budget budget_; ///< this peer's messages that others still hold (make_message)
    std::shared_ptr<connection_type> conn_;
    std::optional<websocket_type> ws_;
    // The messages not yet written (oldest first), and the one being written.
    std::unique_ptr<std::deque<shared_message>> queue_;
    std::vector<shared_message> inbox_; ///< sent from other strands, not yet taken (under inbox_busy_)
    std::atomic_flag inbox_busy_ = ATOMIC_FLAG_INIT;
    bool inbox_posted_ = false;         ///< a take_inbox is on its way (under inbox_busy_)
    shared_message current_;
    static std::size_t cost(const std::string& m) noexcept { return m.size() + message_overhead; }
    std::size_t pending() const noexcept { return queue_ ? queue_->size() : 0; }
    std::size_t queued_ = 0;
    bool open_ = false, writing_ = false, pinging_ = false, undefined_close_code_ = false;
    bool drain_after_upgrade_ = false; ///< a drain asked during the upgrade: leave once it is done
    bool on_strand_ = false; ///< the connection lives on a strand: send() looks whether it runs inside it
};

} // namespace heartwheel::ws

#endif
