// heartwheel/beast/websocket.hpp — a WebSocket server connection over a heartwheel connection: RFC 6455's
// frames (net/websocket/ws_frames.hpp) read and written over the connection's own stream, the opening
// handshake through Beast's HTTP, all under the connection's one close path.
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
// framed_output (no byte queue: this layer queues messages and writes their frames). Every byte read
// or written goes through the connection's stream and is recorded there (writer idleness sees the
// frames). An idle connection holds no read buffer: a read waits with the stream's async_receive
// (a chunk lent by the thread's pool only once bytes are there) and the frame reader keeps a cut
// header or control frame only; what follows a whole message in a read (pipelined) is kept until the
// next read. Memory per idle connection is the connection, this object and the application's (an
// idle Beast websocket::stream held ~5 KiB more: docs/benchmarks.md, "WebSocket"). This layer is the
// connection's handler and speaks WebSocket for it:
//  - the heartbeat's ping is a ping frame (one in flight at most, written ahead of queued messages);
//    a pong frame is the heartbeat's round trip; a peer's ping is answered with its payload;
//  - idleness counts whole messages (async_read's completions), not frames or bytes: a peer that
//    trickles fragments of a message that never ends, or only answers pings, is idle, as a peer
//    trickling a line that never ends is in the line protocols;
//  - the goodbye is a close frame whose code says why (close_code_for) and whose text is the close
//    reason's name; the connection waits for it to be written (goodbye_in_flight_then_fin /
//    goodbye_written), bounded by its linger, then sends its FIN — in the same segment on TCP — and
//    closes when the peer answers (its close frame or end of stream) or the linger ends. A peer
//    judged dead, which will not read it, is told from the judgement itself (goodbye_now: the frame
//    handed to the socket, the FIN with it, the close at once);
//  - the peer's close frame is answered with its own code, and the connection closes peer-closed
//    once the answer is written;
//  - a peer that breaks the protocol (ws_frames.hpp lists what is refused) is answered with a close
//    frame 1002 (1007 for text that is not UTF-8) and closed protocol-error; a message over
//    max_message, 1009 and message-too-big — judged from its frame's header, before its payload is
//    read; counted once;
//  - the output is bounded in bytes, each message counted with message_overhead (the connection's
//    output policy: the hard limit closes at once, the soft one after its time, slow-consumer), and
//    in messages (max_queued_messages); writable()/on_writable as the connection's. A broadcast
//    hands every recipient one shared_message (make_message): one buffer, no copy per recipient;
//  - the producer is slowed, not its readers closed: the messages a connection's peer sends to others
//    (this connection's make_message) count against its producer budget while any recipient holds
//    them; over it, async_read waits before reading on (the peer's TCP window closes), at most
//    producer_wait at a time (net/connection/producer_budget.hpp says why the wait is bounded).
// No extension is negotiated (no permessage-deflate) and no subprotocol is chosen; messages are
// written as single frames.
//
// Threads: as net::connection — it lives on its socket's executor (a thread's io_context or a strand
// of a pool's); send() and close() may be called from anywhere and post themselves when away.
// Invariants: one frame is written at a time (a frame is never interleaved with another); after the
// close frame nothing else is written; the queue's bytes (each message's size plus message_overhead)
// are counted in queued_; one read is pending at most (async_read is not called again before it
// completes).
#ifndef HEARTWHEEL_BEAST_WEBSOCKET_HPP
#define HEARTWHEEL_BEAST_WEBSOCKET_HPP

#if !defined(HEARTWHEEL_BOOST_ASIO)
#error "heartwheel/beast/websocket.hpp needs heartwheel's Boost.Asio flavour (link heartwheel::beast)"
#endif

#include <heartwheel/beast/detail/ws_upgrade.hpp>
#include <heartwheel/beast/ws_options.hpp>
#include <heartwheel/net/connection/connection.hpp>
#include <heartwheel/net/connection/connection_with.hpp>
#include <heartwheel/net/connection/framed_output.hpp>
#include <heartwheel/net/connection/output_bound.hpp>
#include <heartwheel/net/connection/producer_budget.hpp>
#include <heartwheel/net/detail/home_executor.hpp>
#include <heartwheel/net/detail/lean_op.hpp>
#include <heartwheel/net/websocket/ws_frames.hpp>

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace heartwheel::ws {

namespace websocket = boost::beast::websocket;

template <class NextLayer>
class ws_connection final : public net::connection_handler {
    struct make_tag {}; // create() only

public:
    /// The session's life under this layer; framed_output: no byte queue of its own, this layer writes frames.
    using connection_type = net::connection<NextLayer, net::connection_liveness, net::framed_output>;
    /// The opening request as async_read_request reads it: a head, no body.
    using request_type = websocket::request_type;
    /// The longest opening request head (a larger one closes handshake-failed).
    static constexpr std::uint32_t max_request_head = 8 * 1024;

    /// A WebSocket connection over `next_layer` (TLS streams: handshake with connection() first),
    /// timed as `ctx` says with whole messages as reader activity. `handler` (may be null) is told
    /// on_close, on_writable and on_idle; pings and goodbyes are this layer's. The layer lives in its
    /// connection's heap block (net::make_connection_with): the pointer returned shares that block.
    static std::shared_ptr<ws_connection> create(NextLayer next_layer, const net::connection_context& ctx,
                                                 std::shared_ptr<net::connection_handler> handler = nullptr,
                                                 ws_options options = {}) {
        options.validate(ctx.options.output);
        net::connection_options o = ctx.options;
        o.activity = net::reader_activity::messages; // messages are activity (message_received), not bytes
        return net::make_connection_with<connection_type>(
            [&](connection_type& c) { return ws_connection(make_tag{}, c, ctx, std::move(handler), options); },
            std::move(next_layer), ctx, nullptr, o);
    }

    ws_connection(make_tag, connection_type& c, const net::connection_context& ctx,
                  std::shared_ptr<net::connection_handler> handler, const ws_options& options)
        : timers_(ctx.timers), app_(std::move(handler)), bound_(ctx.options.output),
          budget_(options.budget_under(ctx.options.output), message_overhead, options.producer_wait), conn_(c),
          reader_(options.max_message), max_queued_(options.max_queued_messages), binary_(options.binary),
          on_strand_(net::detail::is_strand_executor(c.get_executor())) {}
    ws_connection(const ws_connection&) = delete;
    ws_connection& operator=(const ws_connection&) = delete;

    /// The WebSocket upgrade in the server role, timed by the handshake timeout: reads the opening
    /// request and answers it 101, or — a request that is no valid upgrade — 400 (426 for another
    /// protocol version) and closes handshake-failed. Completion: void(error_code).
    template <class Token>
    auto async_accept(Token&& token) {
        return asio::async_compose<Token, void(error_code)>(accept_op{self(), nullptr}, token, conn_.stream());
    }

    /// Reads the opening request, for a server that answers plain HTTP on its WebSocket port too:
    /// under the handshake timeout, its head at most max_request_head bytes and no body (otherwise
    /// the connection closes handshake-failed). Then async_accept(req) if websocket::is_upgrade(req),
    /// else respond(). On the connection's executor. Completion: void(error_code).
    template <class Token>
    auto async_read_request(request_type& req, Token&& token) {
        return asio::async_compose<Token, void(error_code)>(read_request_op{self(), req, nullptr}, token,
                                                            conn_.stream());
    }
    /// The upgrade of a request async_read_request read (`req` outlives the operation); still under
    /// the handshake timeout it started. A request that is no valid upgrade is answered 400 (426)
    /// and closed handshake-failed. Completion: void(error_code).
    template <class Token>
    auto async_accept(const request_type& req, Token&& token) {
        return asio::async_compose<Token, void(error_code)>(accept_op{self(), &req}, token,
                                                            conn_.stream());
    }
    /// Answers a request async_read_request read that is not an upgrade with `res` (its length
    /// prepared by the caller; sent with Connection: close) and closes the connection http-served
    /// once it is written — still under the handshake timeout (a peer that does not read the answer
    /// is closed handshake-timeout). On the connection's executor.
    template <class Body, class Fields>
    void respond(boost::beast::http::response<Body, Fields> res) {
        if (conn_.closing()) return;
        res.keep_alive(false);
        auto held = std::make_shared<boost::beast::http::response<Body, Fields>>(std::move(res));
        boost::beast::http::async_write(conn_.stream(), *held, [self = self(), held](error_code ec, std::size_t) {
            self->conn_.handshake_finished();
            if (self->conn_.closing()) return;
            if (ec) return self->conn_.read_failed(ec);
            self->conn_.close(http_served);
        });
    }

    /// Reads one whole message into `buffer` (a DynamicBuffer): reader activity. First, while this
    /// connection's messages held by recipients are over its producer budget, it waits (the peer's
    /// silence meanwhile is not judged: hold_reads). An error closes the connection with what it
    /// means: websocket::error::closed for the peer's close frame (answered, peer-closed), a
    /// protocol error (bad_opcode, bad_frame_payload for text that is not UTF-8, ...: closed
    /// protocol-error with 1002 or 1007), message_too_big (1009, message-too-big), the stream's
    /// error (peer-closed, io-error); after a close, the close's error. Completion:
    /// void(error_code, std::size_t).
    template <class DynamicBuffer, class Token>
    auto async_read(DynamicBuffer& buffer, Token&& token) {
        return net::detail::async_lean_op<void(error_code, std::size_t)>(read_op<DynamicBuffer>{self(), buffer},
                                                                          token);
    }

    /// Queues one message (text, or binary with ws_options::binary); written in order, one at a time,
    /// from the end of the upgrade on (a greeting may be sent before it). Ignored once closing.
    /// Bounded as the connection's output (see the top of this file). From outside the connection's
    /// strand it goes through an inbox: one post takes all that arrived.
    void send(std::string_view message) { send(make_message(std::string(message))); }
    void send(const char* message) { send(make_message(message)); }
    void send(std::string&& message) { send(make_message(std::move(message))); }
    /// A message of this connection's peer for others (a broadcast's), counted against this
    /// connection's producer budget while any recipient holds it: over it, async_read waits before
    /// reading on. On this connection's executor.
    shared_message make_message(std::string text) { return budget_.make_message(std::move(text)); }
    /// A message shared with other recipients (a broadcast): queued by reference, never copied.
    void send(shared_message message) {
        if (away()) return send_from_away(std::move(message));
        if (conn_.closing() || bound_.slow()) return;
        queued_ += cost(*message);
        push(std::move(message));
        bound_output();
        if (!bound_.slow() && open_) write_next(); // before the upgrade: written once it is done
    }
    /// Whether a producer may send now (the output's high-water mark); on_writable follows a false.
    bool writable() const noexcept { return bound_.writable(queued_); }
    /// Bytes queued and not yet written (the message being written included).
    std::size_t queued() const noexcept { return queued_; }

    /// The connection's close path: a close frame saying `why`, then the FIN; from any thread.
    void close(net::close_reason why) { conn_.close(why); }

    connection_type& connection() noexcept { return conn_; }
    auto get_executor() noexcept { return conn_.get_executor(); }

private:
    std::shared_ptr<ws_connection> self() { return {conn_.shared_from_this(), this}; }
    bool away() { return on_strand_ && !net::detail::running_in_home(conn_.get_executor()); }

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
        if (!open_ || pinging_ || close_due_ || close_sent_) return;
        pinging_ = true; // until it is written: one in flight at most
        write_next();
    }
    // The close frame: the code the close calls for (the peer's own code echoed when it closed
    // first; a refused frame's 1002 / 1007 / 1009 with no text), the close reason's name as its text.
    void last_words(net::close_reason why) override {
        drop_queue();
        if (!open_ || close_sent_) return; // no WebSocket yet (mid-upgrade), or said already
        std::uint16_t code = close_code_for(why);
        std::string_view text = net::to_string(why);
        if (failed_code_ != 0) code = failed_code_, text = {};
        else if (peer_code_ != 0) code = peer_code_, text = {};
        auto frame = std::make_unique<std::string>(control_frame(net::ws_opcode::close, code, text));
        if (!writing_) { // a dead peer's goodbye, with the FIN, from the judgement itself (TCP)
            close_sent_ = true;
            if (conn_.goodbye_now(asio::buffer(*frame))) return;
            close_sent_ = false;
        }
        conn_.goodbye_in_flight_then_fin(); // on_written(close) sends the FIN: one segment with it
        close_due_ = std::move(frame);
        write_next(); // behind a message in flight; the peer's answer is read by the application's read
        // A peer judged dead answers no close frame: its goodbye is out once handed to the socket,
        // which a write does as it begins (or it waits behind a write the dead peer's window holds,
        // lost with it either way) — the FIN follows on the next turn, not at the linger's end.
        if (net::is_peer_dead_reason(why)) conn_.post([](connection_type& c) { c.goodbye_written(); });
    }
    void on_close(net::close_reason why) override {
        drop_queue();
        bound_.stop();
        budget_.cancel(); // a read waiting for the budget completes, with the close's error
        in_.reset();
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
            if (!inbox_) inbox_ = std::make_unique<std::vector<shared_message>>();
            inbox_->push_back(std::move(m));
            if (inbox_posted_) return;
            inbox_posted_ = true;
        }
        conn_.post([self = self()](connection_type&) { self->take_inbox(); });
    }
    void take_inbox() {
        std::unique_ptr<std::vector<shared_message>> arrived;
        {
            const inbox_lock lock(inbox_busy_);
            arrived = std::move(inbox_);
            inbox_posted_ = false;
        }
        if (arrived)
            for (auto& m : *arrived) send(std::move(m));
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

    // --- writing: one frame at a time, control frames first ----------------------------------------
    // What goes next: the close frame (then nothing more), a pong owed, our ping, then the oldest
    // message. A control frame waits for the frame being written, never for the queue behind it.
    enum class frame_kind : std::uint8_t { message, ping, pong, close };
    void write_next() {
        if (writing_ || close_sent_) return;
        if (close_due_) {
            close_sent_ = true;
            drop_queue();
            auto frame = std::move(close_due_);
            const asio::const_buffer bytes = asio::buffer(*frame);
            return write_frame(frame_kind::close, std::array<asio::const_buffer, 1>{bytes}, std::move(frame));
        }
        if (pong_due_) {
            auto frame = std::move(pong_due_);
            const asio::const_buffer bytes = asio::buffer(*frame);
            return write_frame(frame_kind::pong, std::array<asio::const_buffer, 1>{bytes}, std::move(frame));
        }
        if (pinging_ && !ping_written_) {
            static constexpr unsigned char empty_ping[] = {0x89, 0x00};
            return write_frame(frame_kind::ping, std::array<asio::const_buffer, 1>{asio::buffer(empty_ping)}, nullptr);
        }
        if (!open_ || pending() == 0 || conn_.closing() || bound_.slow()) return;
        current_ = pop(); // written from current_: the queue may grow meanwhile
        const auto op = binary_ ? net::ws_opcode::binary : net::ws_opcode::text;
        head_size_ = static_cast<std::uint8_t>(net::ws_frame_header(head_, op, current_->size()));
        write_frame(frame_kind::message,
                    std::array<asio::const_buffer, 2>{asio::buffer(head_, head_size_), asio::buffer(*current_)}, nullptr);
    }
    template <class Buffers>
    void write_frame(frame_kind kind, const Buffers& buffers, std::unique_ptr<std::string> held) {
        writing_ = true;
        if (kind == frame_kind::ping) ping_written_ = true;
        asio::async_write(conn_.stream(), buffers,
                          [self = self(), kind, held = std::move(held)](error_code ec, std::size_t) {
                              self->on_written(kind, ec);
                          });
    }
    void on_written(frame_kind kind, error_code ec) {
        writing_ = false;
        if (kind == frame_kind::message) {
            queued_ -= cost(*current_);
            current_.reset();
        } else if (kind == frame_kind::ping) pinging_ = ping_written_ = false;
        else if (kind == frame_kind::close) {
            conn_.goodbye_written(); // the FIN follows
            // The handshake is over when the peer closed first; a refused peer is not waited for.
            if (ec || peer_code_ != 0 || failed_code_ != 0) conn_.abort(net::close_reason::io_error);
            return;
        }
        if (ec) return conn_.abort(net::close_reason::io_error); // while closing: ends the close
        write_next();
        if (kind == frame_kind::message && !conn_.closing() && bound_.drained(queued_) && app_) app_->on_writable();
    }
    static std::string control_frame(net::ws_opcode op, std::uint16_t code, std::string_view text) {
        std::string payload;
        if (code != 0) {
            payload.push_back(static_cast<char>(code >> 8));
            payload.push_back(static_cast<char>(code & 0xFF));
            payload.append(text.substr(0, 123));
        }
        return with_header(op, payload);
    }
    static std::string with_header(net::ws_opcode op, std::string_view payload) {
        unsigned char head[10];
        const std::size_t n = net::ws_frame_header(head, op, payload.size());
        std::string frame(reinterpret_cast<const char*>(head), n);
        frame.append(payload);
        return frame;
    }

    // --- the message queue -------------------------------------------------------------------------
    // Everything not yet being written goes (a frame in flight is written from current_).
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
        const bool over_count = pending() + (current_ ? 1u : 0u) > max_queued_;
        const auto on_soft_time = [this] {
            // `this`: the timer is bound_'s, and dies with this layer.
            return [this] {
                const auto keep = conn_.weak_from_this().lock();
                if (keep && bound_.soft_time_up(queued_)) conn_.close_slow_consumer(net::slow_bound::soft_limit);
            };
        };
        if (bound_.grew(queued_, timers_, on_soft_time, over_count)) {
            drop_queue(); // the memory goes now; the close follows on the next turn (a broadcast loop stays valid)
            const auto which = over_count ? net::slow_bound::message_count : net::slow_bound::hard_limit;
            conn_.post([which](connection_type& c) { c.close_slow_consumer(which); });
        }
    }

    // --- reading: frames from the connection's receive, no buffer while idle -----------------------
    enum class fed : std::uint8_t { more, message, stop };
    // Feeds `n` bytes at `p` (a read's chunk, or what a read left): a message's payload goes into
    // `buffer`, a ping is answered, a pong is the heartbeat's, the peer's close or a refused frame
    // stops (ec says which). What follows a whole message is kept for the next read.
    template <class DynamicBuffer>
    fed feed(char* p, std::size_t n, DynamicBuffer& buffer, std::size_t& size, error_code& ec) {
        std::size_t used = 0;
        for (;;) {
            const net::ws_event ev = reader_.next(p + used, n - used);
            used += ev.consumed;
            switch (ev.kind) {
            case net::ws_event::need_more: return fed::more;
            case net::ws_event::data:
                try {
                    buffer.commit(asio::buffer_copy(buffer.prepare(ev.payload.size()), asio::buffer(ev.payload)));
                } catch (const std::length_error&) { // the application's buffer is full: as over max_message
                    refuse(net::ws_error::message_too_big, ec);
                    return fed::stop;
                }
                size += ev.payload.size();
                break;
            case net::ws_event::message_end:
                if (used < n) in_ = std::make_unique<std::string>(p + used, n - used);
                return fed::message;
            case net::ws_event::ping:
                if (!close_due_ && !close_sent_) {
                    pong_due_ = std::make_unique<std::string>(with_header(net::ws_opcode::pong, ev.payload));
                    write_next();
                }
                break;
            case net::ws_event::pong: conn_.pong_received(); break;
            case net::ws_event::close:
                peer_closing(ev.close_code);
                ec = websocket::error::closed;
                return fed::stop;
            case net::ws_event::error: refuse(ev.why, ec); return fed::stop;
            }
        }
    }
    // The peer's close frame: answered with its own code (RFC 6455 5.5.1), then the FIN and the
    // socket's close; ours already said, the handshake is over.
    void peer_closing(std::uint16_t code) {
        peer_code_ = code == 1005 ? 1000 : code;
        if (!conn_.closing()) return conn_.close(net::close_reason::peer_closed);
        if (close_sent_ && !writing_) conn_.abort(net::close_reason::peer_closed);
    }
    void refuse(net::ws_error why, error_code& ec) {
        ec = error_for(why);
        if (conn_.closing()) return conn_.abort(protocol_error); // during our goodbye: the first reason stays
        failed_code_ = net::ws_close_code(why);
        conn_.close(why == net::ws_error::message_too_big ? message_too_big : protocol_error);
    }
    static error_code error_for(net::ws_error why) {
        using e = websocket::error;
        switch (why) {
        case net::ws_error::bad_reserved_bits: return e::bad_reserved_bits;
        case net::ws_error::bad_opcode: return e::bad_opcode;
        case net::ws_error::bad_unmasked_frame: return e::bad_unmasked_frame;
        case net::ws_error::bad_control_fragment: return e::bad_control_fragment;
        case net::ws_error::bad_control_size: return e::bad_control_size;
        case net::ws_error::bad_continuation: return e::bad_continuation;
        case net::ws_error::bad_data_frame: return e::bad_data_frame;
        case net::ws_error::bad_size: return e::bad_size;
        case net::ws_error::bad_utf8: return e::bad_frame_payload;
        case net::ws_error::bad_close_size: return e::bad_close_size;
        case net::ws_error::bad_close_code: return e::bad_close_code;
        case net::ws_error::message_too_big: return e::message_too_big;
        case net::ws_error::none: break;
        }
        return e::closed;
    }
    // What a read after the end completes with.
    error_code ended() const {
        if (reader_.failed() != net::ws_error::none) return error_for(reader_.failed());
        if (peer_code_ != 0) return websocket::error::closed;
        return error_code(net::errc::connection_closed);
    }
    bool ended_reading() const noexcept { return reader_.failed() != net::ws_error::none || peer_code_ != 0; }

    // --- composed operations -----------------------------------------------------------------------
    struct accept_op {
        std::shared_ptr<ws_connection> c;
        const request_type* req = nullptr; ///< read by async_read_request (which started the handshake timeout)
        std::unique_ptr<request_type> own = {}; ///< read here (async_accept without a request)
        std::unique_ptr<boost::beast::http::response<boost::beast::http::string_body>> res = {};
        error_code refused = {};
        enum { start, read, answered } stage = start;
        template <class Self>
        void operator()(Self& self, error_code ec = {}, std::size_t = 0) {
            if (stage == start) {
                if (c->conn_.closing()) return self.complete(error_code(net::errc::connection_closed));
                if (!req) {
                    stage = read;
                    own = std::make_unique<request_type>();
                    auto& r = *own;
                    return c->async_read_request(r, std::move(self));
                }
            } else if (stage == read && ec) return self.complete(ec); // closed by the read, counted
            if (stage != answered) {
                const request_type& r = req ? *req : *own;
                refused = detail::check_upgrade(r);
                res = detail::answer_upgrade(r, refused);
                stage = answered;
                auto& msg = *res;
                return boost::beast::http::async_write(c->conn_.stream(), msg, std::move(self));
            }
            c->conn_.handshake_finished();
            if (c->conn_.closing()) return self.complete(ec ? ec : error_code(net::errc::connection_closed));
            if (ec || refused) {
                c->in_.reset();
                c->conn_.abort(net::close_reason::handshake_failed);
                return self.complete(refused ? refused : ec);
            }
            c->open_ = true;
            if (c->drain_after_upgrade_) c->conn_.leave(); // asked mid-upgrade: the 1012 goes now
            c->write_next();                                 // what was sent during the upgrade
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
                if (c->conn_.closing()) return self.complete(error_code(net::errc::connection_closed));
                in = std::make_unique<opening>();
                in->parser.header_limit(max_request_head);
                c->conn_.handshake_started();
                auto& state = *in;
                return boost::beast::http::async_read(c->conn_.stream(), state.buffer, state.parser, std::move(self));
            }
            if (c->conn_.closing()) return self.complete(ec ? ec : error_code(net::errc::connection_closed));
            if (ec) {
                // Gone before a byte of a request — a browser's spare preconnection ends it, a balancer's
                // health check resets it (HAProxy's checks close without lingering) — is the peer's own
                // end, not a failed handshake; a request cut or garbled is one.
                const bool gone = ec == boost::beast::http::error::end_of_stream || ec == asio::error::connection_reset ||
                                  ec == asio::error::eof;
                const bool nothing_sent = gone && !in->parser.got_some() && in->buffer.size() == 0;
                c->conn_.abort(nothing_sent ? net::close_reason::peer_closed : net::close_reason::handshake_failed);
                return self.complete(ec);
            }
            req = in->parser.release();
            // A client's first frames sent right behind its request: the first read takes them.
            const auto rest = in->buffer.data();
            if (rest.size() != 0) c->in_ = std::make_unique<std::string>(static_cast<const char*>(rest.data()), rest.size());
            self.complete(ec);
        }
    };

    template <class DynamicBuffer>
    struct read_op {
        std::shared_ptr<ws_connection> c;
        DynamicBuffer& buffer;
        std::size_t size = 0; ///< the message's bytes so far
        enum { start, waited, reading } stage = start;

        auto get_executor() const noexcept { return c->conn_.get_executor(); }

        template <class Self>
        void operator()(Self& self, error_code = {}) { // the start, and the end of a wait for the budget
            if (stage == start && c->budget_.over() && !c->conn_.closing() && !c->ended_reading()) {
                stage = waited;
                c->conn_.hold_reads(true);
                return c->budget_.async_wait(c->timers_, c->get_executor(), std::move(self));
            }
            if (stage == waited) c->conn_.hold_reads(false);
            if (c->ended_reading() || (stage == start && c->conn_.closing()) || c->conn_.closed())
                return self.complete(c->ended(), 0);
            stage = reading;
            if (c->in_) { // what the last read left: the next message, or its beginning
                const auto held = std::move(c->in_);
                if (take(self, held->data(), held->size())) return;
            }
            c->conn_.stream().async_receive(std::move(self));
        }
        template <class Self>
        void operator()(Self& self, error_code ec, net::read_chunk chunk) {
            if (ec) {
                if (!c->ended_reading()) c->conn_.read_failed(ec); // its end of stream or error, as the connection reads them
                return self.complete(c->ended_reading() ? c->ended() : ec, 0);
            }
            if (take(self, chunk.data(), chunk.size())) return;
            chunk.reset(); // back to the pool before the wait: an idle connection holds none
            c->conn_.stream().async_receive(std::move(self));
        }
        // Whether the operation completed on these bytes.
        template <class Self>
        bool take(Self& self, char* p, std::size_t n) {
            error_code ec;
            switch (c->feed(p, n, buffer, size, ec)) {
            case fed::more: return false;
            case fed::message:
                c->conn_.message_received();
                self.complete(ec, size);
                return true;
            case fed::stop: break;
            }
            self.complete(ec, 0);
            return true;
        }
    };

    timer_scheduler& timers_;
    std::shared_ptr<net::connection_handler> app_;
    net::output_bound bound_; ///< the slow-consumer bound and the water marks of the message queue
    net::producer_budget budget_; ///< this peer's messages that others still hold (make_message)
    connection_type& conn_; ///< the block's: this layer lives in its connection's heap block
    net::ws_frame_reader reader_; ///< the peer's frames
    std::unique_ptr<std::string> in_; ///< bytes a read left behind a whole message (pipelined): usually none
    // The messages not yet written (oldest first), and the one being written.
    std::unique_ptr<std::deque<shared_message>> queue_;
    std::unique_ptr<std::vector<shared_message>> inbox_; ///< sent from other strands, not yet taken (under inbox_busy_)
    std::atomic_flag inbox_busy_ = ATOMIC_FLAG_INIT;
    bool inbox_posted_ = false;         ///< a take_inbox is on its way (under inbox_busy_)
    shared_message current_;
    std::unique_ptr<std::string> pong_due_;  ///< the pong owed to the peer's last ping, not yet written
    std::unique_ptr<std::string> close_due_; ///< the close frame, not yet written
    static std::size_t cost(const std::string& m) noexcept { return m.size() + message_overhead; }
    std::size_t pending() const noexcept { return queue_ ? queue_->size() : 0; }
    std::size_t queued_ = 0;
    unsigned char head_[10] = {}; ///< the header of the message being written
    std::uint8_t head_size_ = 0;
    std::uint16_t peer_code_ = 0;   ///< the peer's close frame's code (1005 read as 1000); 0: none yet
    std::uint16_t failed_code_ = 0; ///< the close code for a refused frame; 0: none
    std::uint32_t max_queued_;      ///< ws_options::max_queued_messages
    bool binary_;                   ///< ws_options::binary
    bool open_ = false, writing_ = false, pinging_ = false, ping_written_ = false, close_sent_ = false;
    bool drain_after_upgrade_ = false; ///< a drain asked during the upgrade: leave once it is done
    const bool on_strand_; ///< the connection lives on a strand: send() looks whether it runs inside it
};

} // namespace heartwheel::ws

#endif
