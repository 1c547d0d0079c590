// heartwheel/net/connection/connection.hpp — one connection's life: a stream that records its own activity, its
// liveness policies, the one close path, and an output layer under it. An application only speaks its
// protocol: it reads from stream(), send()s replies, and calls close(reason) when it wants out.
//
// Two layers. The connection is the session's life — liveness, phase deadlines, requests, the close
// path with its count, last words, linger, FIN and handler. Its Output is the layer that writes:
// byte_output (the default: a bounded, coalescing write queue, send(), backpressure, close_after_sent)
// for applications that speak bytes, or framed_output for a framing layer that writes for itself (a
// Beast WebSocket stream over stream(): no byte queue, no send(), only a goodbye the close waits for).
// Both sit under the same close path; byte_output.hpp states the contract between the two.
//
//   struct session : net::connection_handler {             // the application: override what it needs
//       void send_ping() override { c->send("PING\n"); }
//       void last_words(net::close_reason r) override { c->send(bye_line(r)); }
//       net::connection<tcp::socket>* c;
//   };
//   net::connection_context ctx(wheel, config, &counters);   // once per thread
//   auto c = std::make_shared<net::connection<tcp::socket>>(std::move(socket), ctx, session_ptr);
//   c->async_handshake(ssl::stream_base::server, h);       // TLS only (keepalive: set from the context)
//   n = co_await c->stream().async_read_some(buf, use_awaitable);   // recorded: no on_read() by hand
//   c->send(reply);                                        // coalesced, bounded, timed
//   c->expires_after(10s, header_timeout);                 // a phase of the protocol, on the wheel
//
// The close path. close(reason) — from a policy, the application, a peer's EOF, an I/O error, a
// handshake failure or timeout, or shutdown — latches once: the liveness policies stop (outstanding
// requests fail), the reason is counted once, the application's last_words() may queue a goodbye,
// which is flushed for at most `linger` (its one timer node, made when a close lingers), followed by a FIN (TCP: in the goodbye's last
// segment); the lowest layer is closed when the peer ends its side (the application's read sees it
// and calls abort) or the linger ends — for a peer judged dead (is_peer_dead_reason), which will
// not end its side, right after the FIN; for a peer that does not read (is_peer_not_reading_reason:
// write-timeout, slow-consumer) with a reset instead of the FIN, which would wait behind bytes it
// never takes, holding the kernel's send buffer; then pending operations complete with close_error()
// (errc::timed_out for a policy's reason, errc::connection_closed otherwise) and on_close() runs.
// abort(reason) is the same without last words (nothing can be written: an I/O error, a write
// timeout, a handshake that never finished).
//
// Threads: a connection lives on its socket's executor, which must be its wheel's too (a thread's own
// io_context, or one strand of a pool's). On a strand, send(), close(), abort(), complete_request()
// and post() may be called from anywhere: outside the strand they post themselves to it. It is made
// inside its strand (its policies arm the strand's wheel as it is made): made elsewhere, it throws
// std::logic_error rather than race that wheel.
//
// Ownership: create it with std::make_shared; its own writes and linger hold a reference while they
// are in flight. The application is a connection_handler (an interface: one shared pointer per
// connection, not a std::function per hook — memory matters at a million idle connections); its
// calls run on the connection's executor, and the connection keeps it — typically the application's
// session — until it is closed, then lets go. connection_hooks wraps lambdas for small programs.
// make_connection_with (connection_with.hpp) makes a connection and its handler in one heap block
// (one control block, no pointer between them to own: ~48 bytes less per connection); not final for
// that block's sake, and not meant to be derived from otherwise.
// Teardown order: connections (and the application objects holding them) before their wheel, the
// wheel before its io_context; a connection's pending operations and requests complete or are
// destroyed with it (no leak). An application that leaves with io.stop() while sessions that own
// their connection are its handlers (a cycle until the close) leaks nothing either: the io_context's
// shutdown makes every connection still open let go of its handler (detail::teardown_registry).
//
// The Output parameter is the output layer (above); a framing layer of your own picks framed_output.
// The Liveness parameter is what times the connection: connection_liveness on a wheel by default; the
// echo server's per-socket steady_timer baseline plugs in the same way. It is made by a factory called
// with the connection as its liveness_handler, which returns it by value: it is made in place, inside
// the connection's own heap block (one allocation per connection, not two). It must offer
// on_read(bool), on_write_started(), on_write_progress(), on_write_complete(bool),
// handshake_started(), handshake_done(), close(), on_pong() (and may offer set_ping_writer(ping_writer*):
// the application, named while the connection can talk — after TLS's handshake, until the close —
// null otherwise; and handshake_waiting(): a handshake
// queued for its place, its deadline paused, nothing else resumed; and expire_phase_at(time_point)
// with cancel_phase(): the phase deadline kept on the liveness's own node, which then calls the
// connection's on_phase_deadline() — connection_liveness does), and name the wheel the connection's own timers
// (linger, phase deadline, soft limit) go on and the counters its closes are counted in:
// scheduler(), counters() (null: none). The connection keeps no copy of either.
#ifndef HEARTWHEEL_NET_CONNECTION_HPP
#define HEARTWHEEL_NET_CONNECTION_HPP

#include <heartwheel/net/connection/byte_output.hpp>
#include <heartwheel/net/connection/close_reason.hpp>
#include <heartwheel/net/connection/connection_context.hpp>
#include <heartwheel/net/connection/connection_handler.hpp>
#include <heartwheel/net/policies/connection_liveness.hpp>
#include <heartwheel/net/detail/home_executor.hpp>
#include <heartwheel/net/detail/teardown_registry.hpp>
#include <heartwheel/net/server/drain.hpp>
#include <heartwheel/net/connection/errc.hpp>
#include <heartwheel/net/connection/keepalive.hpp>
#include <heartwheel/net/connection/liveness_stream.hpp>
#include <heartwheel/net/policies/policies.hpp>
#include <heartwheel/timer_node.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#ifdef __linux__
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#endif

namespace heartwheel::net {

namespace detail {
// Whether a liveness offers handshake_waiting() (optional: handshake_done() stands in for it).
template <class L, class = void>
struct has_handshake_waiting : std::false_type {};
template <class L>
struct has_handshake_waiting<L, std::void_t<decltype(std::declval<L&>().handshake_waiting())>> : std::true_type {};
// Whether a liveness sends pings (set_ping_writer: optional, a liveness without a heartbeat has none).
template <class L, class = void>
struct has_ping_writer : std::false_type {};
template <class L>
struct has_ping_writer<L, std::void_t<decltype(std::declval<L&>().set_ping_writer(nullptr))>> : std::true_type {};
// Whether a liveness takes the arrival of a read's bytes (optional: on_read(bool, time_point), and
// wants_arrival_stamps() saying whether the socket should be asked for them).
template <class L, class = void>
struct has_arrival_read : std::false_type {};
template <class L>
struct has_arrival_read<L, std::void_t<decltype(std::declval<L&>().on_read(true, time_point{})),
                                       decltype(bool(std::declval<L&>().wants_arrival_stamps()))>> : std::true_type {};
// Whether a liveness keeps the connection's phase deadline on its own node (expire_phase_at and
// cancel_phase; optional: the connection files a node of its own otherwise).
template <class L, class = void>
struct has_phase_deadline : std::false_type {};
template <class L>
struct has_phase_deadline<L, std::void_t<decltype(std::declval<L&>().expire_phase_at(time_point{})),
                                         decltype(std::declval<L&>().cancel_phase())>> : std::true_type {};
// Whether a liveness tells whole messages apart from the bytes already reported (on_message; optional).
template <class L, class = void>
struct has_on_message : std::false_type {};
template <class L>
struct has_on_message<L, std::void_t<decltype(std::declval<L&>().on_message())>> : std::true_type {};
} // namespace detail

template <class NextLayer, class Liveness = connection_liveness, template <class> class Output = byte_output>
class connection : public std::enable_shared_from_this<connection<NextLayer, Liveness, Output>>,
                         private stream_observer,
                         private liveness_handler,
                         private detail::teardown_registry::entry,
                         public Output<connection<NextLayer, Liveness, Output>> { // last: see the members
public:
    using stream_type = liveness_stream<NextLayer>;
    using executor_type = typename NextLayer::executor_type;
    using output_type = Output<connection>;
    static constexpr bool is_tls = detail::tls_traits<NextLayer>::is_tls;
    /// Whether the lowest layer is a TCP socket (keepalive options, the goodbye's cork).
    static constexpr bool is_tcp =
        std::is_same_v<typename stream_type::lowest_layer_type::protocol_type, asio::ip::tcp>;

    /// A connection timed by the wheel's liveness (connection_liveness), with everything else from its
    /// thread's context — its TCP keepalive included, set on an open TCP lowest layer here.
    /// `handler` may be null (set_handler() later, or nothing to be told).
    template <class L = Liveness, std::enable_if_t<std::is_same_v<L, connection_liveness>, int> = 0>
    connection(NextLayer next_layer, const connection_context& context, std::shared_ptr<connection_handler> handler = nullptr)
        : connection(std::move(next_layer), context, std::move(handler), context.options) {}
    /// The same with options adjusted from the context's (a framing layer's: whole messages, not
    /// bytes, as reader activity).
    template <class L = Liveness, std::enable_if_t<std::is_same_v<L, connection_liveness>, int> = 0>
    connection(NextLayer next_layer, const connection_context& context, std::shared_ptr<connection_handler> handler,
               connection_options options)
        : connection(
              std::move(next_layer),
              [&context](liveness_handler& h) {
                  return connection_liveness::from_settings(context.timers, context.settings, h, context.counters,
                                                            context.scale);
              },
              std::move(handler), std::move(options)) {
        // A socket not connected yet (opened later) gets it from apply_socket_options, as does a
        // connection made with a liveness of its own.
        if (stream_.lowest_layer().is_open()) (void)apply_socket_options(context.config.keepalive);
        if (live_.wants_arrival_stamps()) (void)stream_.enable_arrival_stamps(); // a closed socket: apply_socket_options
    }

    /// A connection with a liveness of your own: `make_liveness(liveness_handler&)` returns a Liveness
    /// by value — a prvalue, so it need not be movable: `return my_liveness(h, ...);` (Liveness: what
    /// connection_liveness offers the connection — on_read, on_write_*, handshake_started/done,
    /// on_pong, close; tools/echo_baselines/liveness.hpp has two).
    template <class MakeLiveness, std::enable_if_t<std::is_invocable_v<MakeLiveness&, liveness_handler&>, int> = 0>
    connection(NextLayer next_layer, MakeLiveness&& make_liveness, std::shared_ptr<connection_handler> handler = nullptr,
               connection_options options = {})
        : output_type(validated(options)), reads_are_idle_activity_(options.reads_are_idle_activity()),
          close_on_idle_(options.close_on_idle), stream_(*this, made_at_home(next_layer)),
          handler_(std::move(handler)), live_(make_liveness(static_cast<liveness_handler&>(*this))),
          linger_ms_(static_cast<std::uint32_t>(options.linger.count())), handshake_done_(!is_tls), closing_(false), closed_(false),
          in_last_words_(false), half_closed_(false), deadline_fired_(false), reads_held_(false) {
        detail::teardown_registry::of(stream_.get_executor()).add(*this);
        name_ping_writer();
    }
    /// Virtual: make_connection_with's block derives from the connection (nothing else should).
    virtual ~connection() {
        detail::teardown_registry::of(stream_.get_executor()).remove(*this, stream_.get_executor(), !closed_);
        live_.close();
    }
    connection(const connection&) = delete;
    connection& operator=(const connection&) = delete;

    /// Replaces the handler (before start, typically). The connection holds it until it is closed.
    void set_handler(std::shared_ptr<connection_handler> handler) {
        handler_ = std::move(handler);
        name_ping_writer();
    }
    /// Lambdas as the handler (hooks that use the connection itself capture its raw pointer: the
    /// connection owns its handler, so they never outlive it).
    void set_hooks(connection_hooks hooks) { set_handler(std::make_shared<detail::hooks_handler>(std::move(hooks))); }

    stream_type& stream() noexcept { return stream_; }
    typename stream_type::lowest_layer_type& lowest_layer() noexcept { return stream_.lowest_layer(); }
    executor_type get_executor() noexcept { return stream_.get_executor(); }
    Liveness& liveness() noexcept { return live_; }

    /// Applies the keepalive options to a TCP lowest layer (errors are returned, not thrown), and asks
    /// it for receive stamps when the liveness counts from arrivals (a heartbeat's). A connection
    /// made with a context has its configuration's already, when its socket was open.
    error_code apply_socket_options(const keepalive_options& k) {
        if constexpr (detail::has_arrival_read<Liveness>::value) {
            if (live_.wants_arrival_stamps()) (void)stream_.enable_arrival_stamps(); // best effort
        }
        if constexpr (is_tcp) {
            if (!k.enabled && k.user_timeout.count() == 0) return {};
            return apply_keepalive(stream_.lowest_layer(), k);
        } else {
            return {};
        }
    }

    /// TLS streams: the handshake, under limits.handshake_timeout. A failure closes the connection
    /// with handshake-failed, a timeout with handshake-timeout (each counted); the handler gets
    /// errc::timed_out for the latter. Completion: void(error_code).
    template <class Token>
    auto async_handshake(asio::ssl::stream_base::handshake_type type, Token&& token) {
        static_assert(is_tls, "async_handshake needs a TLS stream (net::tls_socket or asio::ssl::stream)");
        return asio::async_compose<Token, void(error_code)>(handshake_op{this->shared_from_this(), type, handshake_op::step::start, nullptr, nullptr, nullptr},
                                                                 token, stream_.next_layer());
    }

    /// The application read a whole message that counts as activity (with `activity = messages`,
    /// connection_policy.hpp: e.g. a data line, not a pong).
    void message_received() {
        if constexpr (detail::has_on_message<Liveness>::value) live_.on_message(); // its bytes were reported as read
        else live_.on_read(true);
    }


    /// The one close path (see the top of this file). Idempotent: the first reason wins. `linger`
    /// overrides the options' for this close (a graceful shutdown may give the goodbye its grace).
    /// From outside the connection's strand (thread-pool model) it is posted there, as send() is.
    void close(close_reason why, std::optional<std::chrono::milliseconds> linger = std::nullopt) {
        if (away()) return post([why, linger](connection& c) { c.close(why, linger); });
        if (linger) linger_ms_ = linger_bound(*linger);
        begin_close(why, true);
    }
    /// Closes now, without last words; on a connection already closing, cuts its linger short (the
    /// first reason stays). Posted from outside the connection's strand, as close() is.
    void abort(close_reason why) {
        if (away()) return post([why](connection& c) { c.abort(why); });
        if (closing_) return finish_close();
        begin_close(why, false);
    }

    /// Runs fn(*this) on the connection's executor (later, never inline), keeping the connection alive
    /// until then: the way to reach it from another thread or strand with anything else.
    template <class F>
    void post(F&& fn) {
        asio::post(stream_.get_executor(), [self = this->shared_from_this(), f = std::forward<F>(fn)]() mutable { f(*self); });
    }
    /// Asks the connection to leave, as a drain does: its handler leaves its protocol's way if it
    /// says so (connection_handler::on_drain), else it closes `draining` (its last words say so) —
    /// once no tracked request (requests()) is in flight: each is answered first, and the connection
    /// leaves just after the last one's completion has run (posted behind it, on the connection's
    /// executor), or at the drain window's end with the rest. On the connection's executor.
    void leave() {
        if (closing_) return;
        if (handler_ && handler_->on_drain()) return;
        if constexpr (std::is_same_v<Liveness, connection_liveness>) {
            if (live_.outstanding_requests() > 0)
                return live_.requests().when_idle([w = this->weak_from_this()] {
                    if (auto self = w.lock()) self->post([](connection& c) { c.leave(); });
                });
        }
        close(draining_reason());
    }
    /// A tracked request's response arrived (requests().complete(id)); from outside the connection's
    /// strand — a backend thread answering — it is posted there. Returns false for an id it knows is
    /// not outstanding (only when called on the strand).
    bool complete_request(std::uint64_t id) {
        if (away()) {
            post([id](connection& c) { c.complete_request(id); });
            return true;
        }
        return live_.requests().complete(id);
    }

    /// A read on stream() failed with `ec`: closes with what it means, as the connection does for its
    /// own writes — peer-closed for the peer's end of stream (eof; over TLS also a TCP close without
    /// close_notify, stream_truncated), io-error for anything else. On a connection already closing
    /// (a read ended by the close itself: errc::timed_out, connection_closed) it only ends the close
    /// (the peer's end of stream ends a lingering goodbye), and the first reason stays.
    void read_failed(error_code ec) {
        const bool peer_closed = ec == asio::error::eof || detail::is_tls_truncation(ec);
        abort(peer_closed ? close_reason::peer_closed : close_reason::io_error);
    }
    /// A handshake of the application's own protocol (a WebSocket upgrade, after TLS's) began / ended:
    /// it is timed by limits.handshake_timeout, as async_handshake's TLS handshake is.
    void handshake_started() { live_.handshake_started(); }
    void handshake_finished() { live_.handshake_done(); }


    /// A deadline for a phase of the application's protocol (Beast's expires_after, on the wheel): an
    /// HTTP server's wait for the next request, its request head, its body. Unless expires_never() or
    /// another expires_after() comes first, the connection closes with `why` — its last words
    /// included (a 408) — and pending operations complete with errc::timed_out. One deadline at a
    /// time; kept by the liveness's own node when it offers expire_phase_at (connection_liveness: a
    /// field, no timer or allocation of its own), else by a node made at the first call and re-armed
    /// by later ones. Like the policies' judgements of silence it waits while the peer's bytes wait unread
    /// for a pending read (a process stall: the next request is in the kernel, not late), looking
    /// again unread_input_recheck later. On the connection's executor only.
    void expires_after(std::chrono::milliseconds d, close_reason why) {
        expires_at(live_.scheduler().deadline_after(std::chrono::duration_cast<duration>(d)), why);
    }
    /// The same at `due` on the wheel's clock (a deadline counted on from an earlier one's due time).
    void expires_at(time_point due, close_reason why) {
        if (closing_) return;
        deadline_reason_ = why;
        if constexpr (detail::has_phase_deadline<Liveness>::value) live_.expire_phase_at(due); // its node's
        else live_.scheduler().schedule(phase_timer(), due);
    }
    /// No phase deadline (after expires_after): the application is not waiting for the peer.
    void expires_never() noexcept {
        if (closing_) return; // closing: the node times the linger
        if constexpr (detail::has_phase_deadline<Liveness>::value) live_.cancel_phase();
        else if (timer_) timer_->cancel();
    }

    /// Closes slow-consumer (an output bound fired: `which` is counted beside the close, for the
    /// operator who must tell a too-small bound from a peer that does not read). On the connection's
    /// executor only.
    void close_slow_consumer(slow_bound which) {
        if (closing_) return;
        if (liveness_counters* n = live_.counters()) n->slow_consumer(which);
        close(close_reason::slow_consumer);
    }
    /// The peer answered our ping (the protocol's pong): a round-trip sample for the heartbeat.
    void pong_received() { live_.on_pong(); }
    /// The application holds its reads back (true) or reads again (false): a producer waiting for its
    /// recipients (producer_budget). Meanwhile the peer's silence is ours, not its own: the liveness
    /// judgements and phase deadlines wait, as they do while a stall leaves bytes unread. On the
    /// connection's executor only.
    void hold_reads(bool held) noexcept { reads_held_ = held; }
    /// The connection's tracked requests (wheel liveness): track(id, [timeout,] token), complete(id).
    decltype(auto) requests() { return live_.requests(); }

    bool closing() const noexcept { return closing_; }
    bool closed() const noexcept { return closed_; }
    std::optional<close_reason> reason() const noexcept { return reason_; }

private:
    friend output_type; // the output layer (byte_output, framed_output) reads the close's state and
                        // calls begin_close / half_close: one close path for both layers
    // A connection whose socket lives on a strand (the thread-pool model) is made inside that strand:
    // its policies arm timers in the strand's wheel as it is made, which from another thread would
    // race that wheel. Refused with a clear error rather than a silent corruption (a Beast-style
    // server makes its session in the acceptor's handler: make the connection in the session's
    // dispatch to its strand instead).
    static NextLayer&& made_at_home(NextLayer& layer) {
        if (detail::is_strand_executor(layer.get_executor()) && !detail::running_in_home(layer.get_executor()))
            throw std::logic_error("heartwheel::net::connection made outside its socket's strand, where its "
                                   "timers would race the strand's wheel: make it inside the strand (e.g. in "
                                   "asio::dispatch(socket.get_executor(), ...))");
        return std::move(layer);
    }
    /// Called from outside the connection's strand (so the call must be posted to it).
    bool away() { return on_strand_ && !detail::running_in_home(stream_.get_executor()); }

    // --- stream_observer: what the stream records --------------------------------------------------
    void on_bytes_read(std::size_t, time_point arrived) override {
        if constexpr (detail::has_arrival_read<Liveness>::value) live_.on_read(reads_are_idle_activity_, arrived);
        else live_.on_read(reads_are_idle_activity_);
    }
    void on_write_started() override {
        if (!closing_) live_.on_write_started();
    }
    void on_bytes_written(std::size_t n, std::size_t size) override {
        if (closing_) return;
        if (n < size) live_.on_write_progress();
        else live_.on_write_complete(this->queued() <= n);
    }
    error_code close_error() const noexcept override {
        if (!closed_) return {};
        return reason_ && (deadline_fired_ || is_policy_reason(*reason_)) ? error_code(errc::timed_out)
                                                     : error_code(errc::connection_closed);
    }

    // --- liveness_handler: what the liveness asks ------------------------------------------------
    void on_policy_close(close_reason r) override {
        // Nothing can be written to a peer that does not read, or mid-handshake.
        const bool can_talk = r != close_reason::write_timeout && handshake_done_;
        begin_close(r, can_talk);
    }
    void on_idle(idle_event e) override {
        if (handler_) handler_->on_idle(e);
    }
    bool close_on_idle() const noexcept override { return close_on_idle_; }
    asio::any_io_executor completion_executor() override { return stream_.get_executor(); }
    // The heartbeat's pings go from the liveness straight to the application — one call, no relay
    // through the connection — whenever it can talk. Nothing of the protocol goes out before TLS's
    // handshake is done (a ping then would be written into a session that does not exist yet, and its
    // write's end would start the application's read early; the heartbeat still judges its misses, so
    // a peer silent through its handshake dies), nor once the connection is closing, nor to a handler
    // let go. Named again at each of those changes.
    void name_ping_writer() noexcept {
        if constexpr (detail::has_ping_writer<Liveness>::value)
            live_.set_ping_writer(handshake_done_ && !closing_ ? handler_.get() : nullptr);
    }
    // The io_context shuts down with this connection open: break a session <-> connection cycle.
    void on_context_shutdown() noexcept override {
        const auto handler = std::exchange(handler_, nullptr); // may destroy *this as it goes
        name_ping_writer();
        if (handler) handler->on_detached();
    }
    // A drain (net/server/drain.hpp) asks it to leave: on its own executor, its handler's way if it has one.
    std::shared_ptr<void> keep() noexcept override { return this->weak_from_this().lock(); }
    void drain(std::shared_ptr<void> keep) override {
        asio::post(stream_.get_executor(), [k = std::move(keep), this] { leave(); });
    }
    void close_with(std::shared_ptr<void> keep, close_reason why) override {
        asio::post(stream_.get_executor(), [k = std::move(keep), this, why] { close(why); });
    }
    bool input_waiting() override { return !closing_ && (reads_held_ || stream_.input_waiting()); }
    void on_phase_deadline(time_point due) override { deadline_passed(due); } // the liveness's node kept it

    void begin_close(close_reason why, bool last_words) {
        if (closing_) return;
        const auto keep = this->weak_from_this().lock(); // hooks may drop the application's reference
        closing_ = true;
        reason_ = why;
        live_.close();
        name_ping_writer();
        if (liveness_counters* n = live_.counters()) n->closed(why);
        this->output_closing();
        if (timer_) timer_->cancel(); // a closing connection has no phase deadline
        if (!last_words) return finish_close();
        if (handler_) {
            this->output_before_last_words();
            in_last_words_ = true;
            handler_->last_words(why);
            in_last_words_ = false;
        }
        if (!this->output_busy()) return finish_close();
        this->output_flush();
        timer_scheduler& svc = live_.scheduler(); // the linger: finish_close when it ends
        svc.schedule(phase_timer(), svc.deadline_after(std::chrono::duration_cast<duration>(std::chrono::milliseconds(linger_ms_))));
    }

    // The connection's one timer node, made at first use (40 bytes): the linger once closing, and the
    // phase deadline while open (expires_after) when the liveness does not keep it on its own node
    // (connection_liveness does: a field there, not a block here) — begin_close cancels the deadline
    // before it lingers.
    timer_node& phase_timer() {
        if (!timer_) timer_ = std::make_unique<node_timer>(*this);
        return *timer_;
    }
    void timer_fired() {
        if (closing_) return finish_close(); // the linger ended
        deadline_passed(live_.scheduler().now()); // its due time passed (not earlier than now)
    }
    bool lingering() const noexcept { return closing_ && timer_ && timer_->pending(); }

    // TCP: the kernel keeps the last words' partial segment until the FIN, which half_close sends as
    // soon as they are written, and the two leave as one segment: one transmit, one receive and one
    // acknowledgement fewer per close (on loopback the sender pays for the receiver's softirq too).
    // Full segments still go at once; nothing waits longer than the write. Best effort: without
    // TCP_CORK, or if it fails, they go as two segments. For an output whose goodbye is followed by
    // the FIN as soon as it is written (a goodbye that waits for the peer must not be held).
    void hold_tail_for_fin() noexcept {
#ifdef TCP_CORK
        if constexpr (is_tcp) {
            const int on = 1;
            (void)::setsockopt(stream_.lowest_layer().native_handle(), IPPROTO_TCP, TCP_CORK, &on, sizeof on);
        }
#endif
    }

    // A peer judged dead (is_peer_dead_reason) is told inside the judgement, on a plain TCP socket:
    // its last words are handed to the socket without waiting — what the socket does not take is lost
    // with the peer, which reads nothing more anyway — and the close goes on at once, the FIN with
    // them in one segment (hold_tail_for_fin), not a turn of the executor later behind every handler
    // ready then (a burst of deaths: docs/benchmarks.md, "WebSocket"). The outputs ask first.
    static constexpr bool plain_tcp_socket = detail::is_stream_socket<NextLayer>::value && is_tcp;
    bool goodbye_now_applies() const noexcept {
        if constexpr (plain_tcp_socket) return in_last_words_ && reason_ && is_peer_dead_reason(*reason_);
        else return false;
    }
    /// Writes what the socket takes of `bytes` now; whether it took them all.
    bool write_goodbye_now(asio::const_buffer bytes) {
        if constexpr (plain_tcp_socket) {
            auto& sock = stream_.next_layer();
            error_code ec;
            if (!sock.non_blocking()) sock.non_blocking(true, ec);
            const std::size_t n = ec ? 0 : sock.write_some(bytes, ec);
            return !ec && n == bytes.size();
        } else {
            (void)bytes;
            return false;
        }
    }

    // The last words are written: send FIN behind them and close at the end of the linger, or as soon
    // as the application sees the peer's end of stream (abort). Closing at once could turn unread
    // input into a reset that overtakes the goodbye on the peer's side (nginx's lingering close).
    void half_close() {
        if (closed_) return;
        error_code ignored;
        // A TLS stream says what it says before the FIN (a tls_socket: close_notify, so the peer can
        // tell a goodbye from a cut connection).
        if constexpr (is_tls) detail::tls_traits<NextLayer>::say_goodbye(stream_.next_layer());
        stream_.lowest_layer().shutdown(asio::socket_base::shutdown_send, ignored);
        half_closed_ = true;
        // A peer judged dead (is_peer_dead_reason) sends nothing that could reset the goodbye, and
        // waiting for its end of stream would only hold the descriptor and put off on_close — a
        // client's reconnect — by the whole linger.
        if (!lingering() || is_peer_dead_reason(*reason_)) finish_close();
    }

    // The phase deadline passed (expires_after): closes with its reason — unless the peer's bytes wait
    // unread for a pending read (a stall: look again a little later).
    void deadline_passed(time_point due) {
        if (closing_) return;
        const auto keep = this->weak_from_this().lock();
        if (!keep) return;
        // The layer's own turn first (an HTTP eager read's grace, every quiet request's): no close, so
        // no need to ask the kernel for unread bytes (a system call).
        if (handler_ && handler_->on_deadline(due)) return;
        if (input_waiting()) {
            timer_scheduler& svc = live_.scheduler();
            const time_point again = saturating_add(svc.now(), unread_input_recheck);
            if constexpr (detail::has_phase_deadline<Liveness>::value) return live_.expire_phase_at(again);
            else return svc.schedule(*timer_, again);
        }
        deadline_fired_ = true;
        begin_close(deadline_reason_, handshake_done_);
    }

    void finish_close() {
        if (closed_) return;
        const auto keep = this->weak_from_this().lock();
        closed_ = true;
        if (timer_) timer_->cancel(); // the linger, if it was one
        error_code ignored;
        auto& sock = stream_.lowest_layer();
        bool reset = false;
        if constexpr (is_tcp) {
            if (reason_ && is_peer_not_reading_reason(*reason_)) {
                // A peer that does not read would keep what the kernel still holds for it — up to the
                // send buffer, megabytes — in a FIN that never leaves: the socket outlives its
                // descriptor in FIN-WAIT-1 for as long as the peer answers the zero-window probes. A
                // reset (SO_LINGER 0) frees it at once; the peer loses only what it was not reading.
                sock.set_option(asio::socket_base::linger(true, 0), ignored);
                reset = !ignored;
            }
        }
        // The FIN goes even if the descriptor was duplicated (close alone would not send it); after
        // half_close it is out already, and a second shutdown would only wake the reactor for nothing.
        if (!reset && !half_closed_) sock.shutdown(asio::socket_base::shutdown_both, ignored);
        sock.close(ignored);
        detail::teardown_registry::of(stream_.get_executor()).connection_closed(); // its admission place
        // The handler (typically the application's session) goes now: a closed connection calls
        // nothing more, and a session that holds the connection is not kept alive by it.
        const auto handler = std::exchange(handler_, nullptr);
        if (handler) handler->on_close(*reason_);
    }

    // A server-side handshake under a listener's admission (admission.hpp) waits, holding no place,
    // for its peer's first bytes; then it takes a handshake place or queues for one (the grant wakes
    // `wake`, on this executor), and holds it to its end. The handshake deadline counts the peer's
    // silence and its handshake, not the time queued. Asked whether it is stalled, it looks here, on
    // its own executor. A connection closed while queued is let go when its turn comes.
    struct handshake_op {
        enum class step : unsigned char { start, silent, queued, handshaking };
        std::shared_ptr<connection> c;
        asio::ssl::stream_base::handshake_type type;
        step at = step::start;
        std::shared_ptr<admission> adm;           // before the place: outlives it
        std::unique_ptr<admission::handshake_place> place;
        std::shared_ptr<asio::steady_timer> wake; // only while queued for a place
        template <class Self>
        void operator()(Self& self, error_code ec = {}) {
            switch (at) {
            case step::start:
                c->live_.handshake_started();
                if (type == asio::ssl::stream_base::server && register_place()) {
                    at = step::silent;
                    return c->stream_.lowest_layer().async_wait(asio::socket_base::wait_read, std::move(self));
                }
                return handshake(self);
            case step::silent:
                if (c->closing_) return closed(self);
                if (place->try_take()) return handshake(self); // what waiting needs is made only to wait
                wake = std::make_shared<asio::steady_timer>(c->stream_.get_executor());
                if (place->request([w = std::weak_ptr<asio::steady_timer>(wake), ex = c->get_executor()] {
                        asio::post(ex, [w] {
                            if (auto t = w.lock()) t->cancel();
                        });
                    }))
                    return handshake(self);
                // The time queued is ours, not the peer's: its handshake deadline starts again at its turn.
                at = step::queued;
                if constexpr (detail::has_handshake_waiting<Liveness>::value) c->live_.handshake_waiting();
                else c->live_.handshake_done();
                wake->expires_at(asio::steady_timer::time_point::max());
                return wake->async_wait(std::move(self));
            case step::queued:
                wake.reset();
                if (c->closing_) return closed(self);
                c->live_.handshake_started();
                return handshake(self);
            case step::handshaking:
                break;
            }
            place.reset();
            if (c->closing_) return closed(self);
            if (ec) {
                c->abort(peer_left(ec) ? close_reason::peer_closed : close_reason::handshake_failed);
                return self.complete(ec);
            }
            c->handshake_done_ = true;
            c->name_ping_writer();
            c->live_.handshake_done();
            self.complete(ec);
        }
        template <class Self>
        void handshake(Self& self) {
            at = step::handshaking;
            c->stream_.next_layer().async_handshake(type, std::move(self));
        }
        template <class Self>
        void closed(Self& self) {
            place.reset();
            self.complete(c->closed_ ? c->close_error() : error_code(errc::timed_out));
        }
        // A client that closed or reset before its ClientHello was read whole (a balancer's health
        // check resets, a port scan) left: it did not fail a handshake. Garbage or a bad hello fails.
        bool peer_left(const error_code& ec) const {
            return type == asio::ssl::stream_base::server &&
                   !detail::tls_traits<NextLayer>::hello_received(c->stream_.next_layer()) &&
                   (ec == asio::error::eof || ec == asio::error::connection_reset || detail::is_tls_truncation(ec));
        }
        bool register_place() {
            adm = detail::teardown_registry::of(c->get_executor()).admission_of();
            if (!adm || adm->limits().effective_max_handshakes() == 0) return false;
            place = std::make_unique<admission::handshake_place>(*adm, [weak = c->weak_from_this(), ex = c->get_executor()] {
                asio::post(ex, [weak] {
                    if (auto self = weak.lock()) self->shed_if_stalled();
                });
            });
            return true;
        }
    };
    /// Closes handshake-shed a handshake that has read no ClientHello and has nothing unread: the
    /// peer's silence, not our slowness.
    void shed_if_stalled() {
        if (closing_ || handshake_done_) return;
        if (detail::tls_traits<NextLayer>::hello_received(stream_.next_layer())) return;
        error_code ec;
        if (stream_.lowest_layer().available(ec) > 0 && !ec) return;
        abort(handshake_shed_reason());
    }

    /// The options' linger is checked before anything is made (the output's policy by the output
    /// itself): kept in 32 bits of milliseconds, it is 0 to 49 days, else config_error.
    static const connection_options& validated(const connection_options& o) {
        if (o.linger.count() < 0 || o.linger.count() > std::numeric_limits<std::uint32_t>::max())
            throw config_error("linger", std::to_string(o.linger.count()) + "ms", "0ms to 4294967295ms (49 days)");
        return o;
    }
    /// A close's own linger is bounded the same way, silently: a close does not throw (longer is taken
    /// as 49 days, a negative one as 0).
    static std::uint32_t linger_bound(std::chrono::milliseconds l) noexcept {
        constexpr auto most = std::chrono::milliseconds(std::numeric_limits<std::uint32_t>::max());
        return static_cast<std::uint32_t>(l.count() <= 0 ? 0 : l > most ? most.count() : l.count());
    }

    // The first members fit in the tail of the output's base (its own few flags), the last ones share
    // one word (the linger in 32 bits, the flags in one byte): 472 bytes with connection_liveness, so
    // that make_shared's block is 496, not 544 (footprint_test).
    close_reason deadline_reason_ = close_reason::shutdown;
    std::optional<close_reason> reason_;
    bool reads_are_idle_activity_, close_on_idle_;
    stream_type stream_;
    std::shared_ptr<connection_handler> handler_;
    Liveness live_; ///< in the connection's block (made by the factory in place)
    using node_timer = heartwheel::member_timer<connection, &connection::timer_fired>;
    std::unique_ptr<node_timer> timer_; ///< the phase deadline, then the linger (phase_timer())
    std::uint32_t linger_ms_;
    // Touched only on the connection's executor (one byte: bit-fields).
    bool handshake_done_ : 1;
    bool closing_ : 1, closed_ : 1, in_last_words_ : 1, half_closed_ : 1;
    bool deadline_fired_ : 1;  ///< closed by expires_after's deadline: operations get timed_out
    bool reads_held_ : 1;      ///< hold_reads(true): the application, not the peer, is silent
    /// Whether the connection lives on a strand (the thread-pool model): only then do send(), close(),
    /// abort() and complete_request() look whether they run inside it (asked once, here). Read from
    /// any thread: a byte of its own, not one of the bit-fields the connection's executor writes.
    const bool on_strand_ = detail::is_strand_executor(stream_.get_executor());
};

} // namespace heartwheel::net

#endif
