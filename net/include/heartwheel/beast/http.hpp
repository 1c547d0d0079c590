// heartwheel/beast/http.hpp — an HTTP/1.1 keep-alive connection on Boost.Beast's parser, timed by the
// wheel: the request phases of nginx's keepalive_timeout, client_header_timeout and
// client_body_timeout, its keepalive_requests and keepalive_time, under the connection's close path.
//
//   auto h = http::http_connection<tcp::socket>::create(std::move(socket), ctx, nullptr, policy);
//   for (;;) {
//       auto [ec, req] = co_await h->async_read_request(use_tuple); // bhttp::request<string_body>
//       if (ec) break;                                                  // closed, counted
//       h->send(make_response(req));                       // keep-alive decided here; bounded, timed
//   }
//
// The phases, each one deadline of the connection (connection::expires_after: a deadline of its
// liveness's own wheel node, re-armed, never allocated):
//  - waiting for the next request on a kept-alive connection: keepalive_timeout, then a silent close
//    (FIN, no response: there is no request to answer), reason keepalive-timeout. A new connection waits for its first request under
//    header_timeout instead (nginx's client_header_timeout covers it), and closes as silently.
//  - from the request's first byte until its head is complete: header_timeout, then "408 Request
//    Timeout" with Connection: close, reason header-timeout (a slowloris trickling its head);
//  - the body, between two reads: body_timeout, then 408, reason body-timeout; with body_deadline,
//    also the whole body within that of its head (a body trickled a byte at a time is not refreshed
//    by each byte), 408 and body-timeout past it;
//  - a request whose Transfer-Encoding does not end in chunked (RFC 9112 6.3: its length cannot be
//    known; read as bodiless, its body would be taken for the next request — a smuggling shape behind
//    a proxy) is answered 400 and closed bad-request;
//  - while the application prepares its answer: nothing (a tracked request's deadline is the tool).
// A request is reader activity when it is whole (message_received), not per byte: a trickled head
// never looks active to the idle policies. A head or body over its limit, or a request the parser
// rejects, is answered 431 / 413 / 400 and closed bad-request; the peer's end of stream between
// requests closes peer-closed. send() serializes a response straight into the connection's write
// queue (one copy; bounded by the output policy, timed by write_timeout); keep-alive is the request's wish unless
// the connection served max_requests (reason max-requests) or is older than max_age (max-age): that
// response says "Connection: close" and the connection closes once it is written
// (close_after_sent). Reads after a close complete with its error; bytes a peer sends after our
// goodbye are read and dropped until its end of stream or the linger's (nginx's lingering close).
//
// A pipelining client's requests are answered in order, each in its own version and keep-alive; an
// application that reads ahead of its answers waits in async_read_request at max_pipelined
// unanswered requests until send() answers one (what a client sends ahead stays in the kernel).
//
// HTTP/1.1 has no ping: give its connections a context without a heartbeat (one would close a
// client waiting quietly between requests heartbeat-timeout); the idle policies and the read and
// write timeouts apply as configured, with whole requests as reader activity.
//
// Memory: the layer lives in its connection's heap block (net::make_connection_with). The read is a
// net::detail::lean_op (one small block: its step and the application's handler; the socket's wait
// sits in the stream core), and the request is handed over by value: an idle kept-alive connection
// holds no read buffer, no parser and no request. An application that answers each request as it
// reads it can give the loop to http::server (http_server.hpp), which parks an idle kept-alive
// connection as its socket, a deadline and a wait.
//
// CPU: a request's first bytes are parsed where the read left them (the thread's read chunk); one
// that came whole is handed over without a buffer, a composed read or a deadline of its own, and
// only what the parser leaves (the rest of a head or body, a pipelined request) is buffered. A
// response of plain fields with a string body (or none) is queued from its parts, as Beast's
// serializer would write it, without walking the serializer's buffer sequences. Right after an
// answer, a kept-alive TCP connection reads its next request eagerly (a busy client's comes within
// microseconds): for detail::eager_grace, into a small block of the thread's, Asio reads the bytes
// as they arrive instead of waiting for readiness first — whose epoll_ctl per request was the one
// system call nginx does not make. A client quiet past the grace is waited for as a new one is,
// holding nothing (the read cancelled, the block given back); a thread holds at most
// detail::eager_max blocks at a time. Such a client is then found quiet: its next requests are
// waited for without the eager read (its attempt would fail, its grace wake the loop for nothing)
// until one comes within the grace of its answer.
//
// Threads: as net::connection (its socket's executor; send() and close() post themselves when away).
// Invariants: one read at a time; at most one phase deadline armed; the parser exists from a request's
// first byte until the request is handed over; the buffer holds only bytes the parser has not taken
// (the rest of a head or body, a pipelined request's) and goes when a request leaves none; the wait
// for a request's first bytes is liveness_stream::async_receive's, which holds no buffer.
#ifndef HEARTWHEEL_BEAST_HTTP_HPP
#define HEARTWHEEL_BEAST_HTTP_HPP

#if !defined(HEARTWHEEL_BOOST_ASIO)
#error "heartwheel/beast/http.hpp needs heartwheel's Boost.Asio flavour (link heartwheel::beast)"
#endif

#include <heartwheel/net/config/liveness_config.hpp>
#include <heartwheel/net/connection/connection.hpp>
#include <heartwheel/net/connection/connection_with.hpp>
#include <heartwheel/net/detail/block_cache.hpp>
#include <heartwheel/net/detail/home_executor.hpp>
#include <heartwheel/net/detail/lean_op.hpp>
#include <heartwheel/net/policies/policies.hpp>

#include <boost/container/small_vector.hpp>
#include <boost/beast/core/buffers_range.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace heartwheel::http {

namespace bhttp = boost::beast::http;
using std::chrono::milliseconds;

/// This layer's closes (max age is the library's close_reason::max_age).
inline const net::close_reason keepalive_timeout = net::define_close_reason("keepalive-timeout");
inline const net::close_reason header_timeout = net::define_close_reason("header-timeout");
inline const net::close_reason body_timeout = net::define_close_reason("body-timeout");
inline const net::close_reason max_requests = net::define_close_reason("max-requests");
inline const net::close_reason bad_request = net::define_close_reason("bad-request");
/// The client's own "Connection: close" (or HTTP/1.0 without keep-alive) ended it, after the answer.
inline const net::close_reason client_close = net::define_close_reason("client-close");

/// The keep-alive policy; defaults are nginx's. validate() throws net::config_error naming the field
/// and its accepted range.
struct http_policy {
    milliseconds keepalive_timeout{75'000}; ///< a kept-alive connection waits this long for a request (0: no keep-alive)
    milliseconds header_timeout{60'000};    ///< a request head must be complete within this of its first byte
    milliseconds body_timeout{60'000};      ///< at most this between two reads of a body
    milliseconds body_deadline{0};          ///< a whole body within this of its head (0: none; 408 past it)
    std::uint32_t max_requests = 1000;      ///< requests per connection; the last is answered "Connection: close"
    milliseconds max_age{3'600'000};        ///< the first answer after this age says "Connection: close" (0: no limit)
    std::uint32_t header_limit = 8 * 1024;  ///< bytes of a request head (431 past it)
    std::size_t body_limit = 1 << 20;       ///< bytes of a request body (413 past it)
    /// Requests read and not yet answered: an application that reads ahead (a pipelining client's
    /// requests handed to a backend) waits in async_read_request at this many until send() answers one.
    std::uint32_t max_pipelined = 16;

    /// Each field's range (its description): config_error naming http.<field>.
    void validate(const std::string& prefix = "http") const { net::validate_policy(description(), this, prefix); }
    /// The `[http]` table: each field's range and help, once (TOML, flags, the docs' knob table).
    static const net::policy_description& description() {
        using net::field;
        using net::off_at_zero;
        constexpr double day = 86'400'000;
        static const net::field_description fields[] = {
            off_at_zero(field<&http_policy::keepalive_timeout>(
                "keepalive_timeout", 0, day, "a kept-alive connection waits this long for its next request (0: no keep-alive)")),
            field<&http_policy::header_timeout>("header_timeout", 1, day,
                                                "a request head must be whole within this of its first byte (408)"),
            field<&http_policy::body_timeout>("body_timeout", 1, day, "at most this between two reads of a body (408)"),
            off_at_zero(field<&http_policy::body_deadline>("body_deadline", 0, day, "a whole body within this of its head (408)")),
            field<&http_policy::max_requests>("max_requests", 1, 1'000'000'000,
                                              "requests per connection; the last is answered `Connection: close`"),
            off_at_zero(field<&http_policy::max_age>("max_age", 0, day,
                                                     "the first answer after this age says `Connection: close`")),
            field<&http_policy::header_limit>("header_limit", 256, 1 << 20, "bytes of a request head (431 past it)"),
            field<&http_policy::body_limit>("body_limit", 0, 4294967295.0, "bytes of a request body (413 past it)"),
            field<&http_policy::max_pipelined>("max_pipelined", 1, 1024,
                                               "requests read and not yet answered (an application that reads ahead waits)")};
        static const net::policy_description d{"http", fields};
        return d;
    }
};

/// The `[http]` table's place in a configuration: `net::configuration<http::http_slot>` has `.http`.
struct http_slot {
    http_policy http;
    http_policy& policy() noexcept { return http; }
};

namespace detail {
/// How long a kept-alive connection reads its next request eagerly after an answer (see the top of
/// this file), into a block of eager_bytes (most request heads fit; the rest of a longer one is read
/// on through the parser's buffer); a thread holds at most eager_max blocks at a time and keeps
/// eager_kept of them for reuse (64 KiB a thread, whatever its connections).
inline constexpr std::chrono::milliseconds eager_grace{2};
inline constexpr std::size_t eager_bytes = 1024;
inline constexpr int eager_max = 256;
inline constexpr std::size_t eager_kept = 64;
struct eager_tag {};
using eager_blocks = net::detail::block_cache<eager_tag, eager_kept>;
/// Blocks this thread's connections hold (one given back on another thread counts there: a bound,
/// not an account).
inline thread_local int eager_held = 0;

/// A response whose bytes are its fields as they are and its body as it is: a string or nothing,
/// not chunked (Beast's serializer would add only the chunk framing).
template <bool isRequest, class Body, class Fields>
constexpr bool plain_response = !isRequest && std::is_same_v<Fields, bhttp::fields> &&
                                (std::is_same_v<Body, bhttp::string_body> || std::is_same_v<Body, bhttp::empty_body>);

/// The status line, each field and the body as parts of one message: what Beast's serializer writes
/// for such a response, without walking its buffer sequences (a fifth of the server's user time per
/// small response went to their iterators).
template <class Connection, class Body>
void queue_plain_response(Connection& conn, const bhttp::response<Body, bhttp::fields>& m) {
    const unsigned v = m.version(), code = m.result_int();
    const char start[13] = {'H', 'T', 'T', 'P', '/', static_cast<char>('0' + v / 10 % 10), '.', static_cast<char>('0' + v % 10),
                            ' ', static_cast<char>('0' + code / 100 % 10), static_cast<char>('0' + code / 10 % 10),
                            static_cast<char>('0' + code % 10), ' '};
    boost::container::small_vector<std::string_view, 24> parts;
    parts.emplace_back(start, sizeof start);
    parts.emplace_back(m.reason());
    parts.emplace_back("\r\n");
    for (const auto& f : m) {
        parts.emplace_back(f.name_string());
        parts.emplace_back(": ");
        parts.emplace_back(f.value());
        parts.emplace_back("\r\n");
    }
    parts.emplace_back("\r\n");
    if constexpr (std::is_same_v<Body, bhttp::string_body>)
        if (!m.body().empty()) parts.emplace_back(m.body());
    conn.send_parts(parts.data(), parts.size());
}
} // namespace detail

/// Queues a message on a connection as it goes on the wire: Beast's serializer's buffers (the header
/// and, for a body held in memory, the whole body) are copied once, straight into the write queue, as
/// one message. A body that streams in several pieces queues one message per piece. A response of
/// plain fields and a string body (or none) is written from its parts directly, as the serializer
/// would write it.
template <class Connection, bool isRequest, class Body, class Fields>
void queue_message(Connection& conn, bhttp::message<isRequest, Body, Fields>& m) {
    if constexpr (detail::plain_response<isRequest, Body, Fields>) {
        if (!m.chunked()) return detail::queue_plain_response(conn, m);
    }
    bhttp::serializer<isRequest, Body, Fields> sr{m};
    boost::container::small_vector<std::string_view, 8> parts;
    error_code ec;
    while (!sr.is_done()) {
        std::size_t n = 0;
        parts.clear();
        sr.next(ec, [&](error_code&, const auto& buffers) {
            for (const auto b : boost::beast::buffers_range_ref(buffers)) {
                parts.emplace_back(static_cast<const char*>(b.data()), b.size());
                n += b.size();
            }
        });
        if (ec) return;
        conn.send_parts(parts.data(), parts.size()); // the buffers stay valid until consume()
        sr.consume(n);
    }
}

template <class Stream, class App, class Body>
class server;

template <class NextLayer>
class http_connection final : public net::connection_handler {
    struct make_tag {}; // create() only
    template <class Stream, class App, class Body>
    friend class server; // parks and resumes its connections (http_server.hpp)

public:
    using connection_type = net::connection<NextLayer>;

    /// An HTTP connection over `next_layer` (TLS: handshake with connection() first), timed as `ctx`
    /// and `policy` say, whole requests as reader activity. `handler` (may be null) is told on_close,
    /// on_writable and on_idle. The layer lives in its connection's heap block
    /// (net::make_connection_with): the pointer returned shares that block.
    static std::shared_ptr<http_connection> create(NextLayer next_layer, const net::connection_context& ctx,
                                                   std::shared_ptr<net::connection_handler> handler = nullptr,
                                                   http_policy policy = {}) {
        policy.validate();
        return create_validated(std::move(next_layer), ctx, std::move(handler), policy);
    }
    http_connection(make_tag, connection_type& c, std::shared_ptr<net::connection_handler> handler, const http_policy& policy)
        : conn_(c), app_(std::move(handler)), policy_(policy), born_(std::chrono::steady_clock::now()),
          in_request_(false), done_(false), draining_(false), eager_grace_(false), eager_cut_(false),
          may_park_(false), resumed_(false), quiet_(false), on_strand_(net::detail::is_strand_executor(c.get_executor())) {}
    http_connection(const http_connection&) = delete;
    http_connection& operator=(const http_connection&) = delete;
    ~http_connection() override { release_eager(); }

    /// Reads the next request under the phase deadlines above and hands it over: the request exists
    /// only from its first byte on (an idle kept-alive connection holds none). An error means the
    /// connection closed itself (peer-closed, a timeout, bad-request, ...; counted) or was closed, and
    /// the request is empty. Completion: void(error_code, bhttp::request<Body>).
    template <class Body = bhttp::string_body, class Token>
    auto async_read_request(Token&& token) {
        return net::detail::async_lean_op<void(error_code, bhttp::request<Body>)>(read_op<Body>{self()},
                                                                                  token);
    }

    /// Sends the response to the oldest request not yet answered (a pipelining client's requests are
    /// answered in order): its version, and keep-alive as that request asked unless a limit
    /// (max_requests, max_age, keep-alive off) ends the connection, which then closes once the
    /// response is written. Bounded as the connection's output.
    template <class Body, class Fields>
    void send(bhttp::response<Body, Fields>& res) {
        if (on_strand_ && !net::detail::running_in_home(conn_.get_executor()))
            return conn_.post([self = self(), r = res](connection_type&) mutable { self->send(r); });
        const request_info to = answering();
        resume_parked();
        std::optional<net::close_reason> last;
        if (!to.keep_alive) last = client_close;
        else if (served_ + 1 >= policy_.max_requests) last = max_requests;
        else if (policy_.max_age > 0 && age() >= milliseconds(policy_.max_age)) last = net::close_reason::max_age;
        else if (policy_.keepalive_timeout == 0) last = keepalive_timeout;
        else if (draining_) last = net::draining_reason(); // asked to leave: this answer is the last
        ++served_;
        res.version(to.version);
        res.keep_alive(!last);
        res.prepare_payload();
        queue_message(conn_, res);
        if (last) {
            done_ = true;
            conn_.close_after_sent(*last);
        }
    }

    /// The connection's close path (an idle or waiting connection closes silently); from any thread.
    void close(net::close_reason why) { conn_.close(why); }

    connection_type& connection() noexcept { return conn_; }
    std::uint32_t requests_served() const noexcept { return served_; }
    auto get_executor() noexcept { return conn_.get_executor(); }

private:
    std::shared_ptr<http_connection> self() { return {conn_.shared_from_this(), this}; }
    // create() with `policy` validated already (a server's, once for all its connections).
    static std::shared_ptr<http_connection> create_validated(NextLayer next_layer, const net::connection_context& ctx,
                                                             std::shared_ptr<net::connection_handler> handler,
                                                             const http_policy& policy) {
        net::connection_options o = ctx.options;
        o.activity = net::reader_activity::messages; // requests are activity (message_received), not bytes
        return net::make_connection_with<connection_type>(
            [&](connection_type& c) { return http_connection(make_tag{}, c, std::move(handler), policy); },
            std::move(next_layer), ctx, nullptr, o);
    }
    milliseconds age() const {
        return std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - born_);
    }

    // --- net::connection_handler ------------------------------------------------------------------
    void last_words(net::close_reason why) override {
        // An error answer chosen by the read, or a 408 for a request cut short by its deadline; any
        // other close (idle, limits, shutdown, a new connection that never sent a byte: a browser's
        // preconnect) says nothing: there is no request to answer.
        if ((why == header_timeout || why == body_timeout) && in_request_) {
            bhttp::response<bhttp::empty_body> res(bhttp::status::request_timeout, version_);
            res.keep_alive(false);
            res.prepare_payload();
            queue_message(conn_, res);
        } else if (why == bad_request && error_status_ != 0) {
            const auto status = static_cast<bhttp::status>(error_status_);
            bhttp::response<bhttp::string_body> res(status, version_);
            res.keep_alive(false);
            res.body() = std::string(bhttp::obsolete_reason(status)) + "\n";
            res.prepare_payload();
            queue_message(conn_, res);
        }
    }
    // A drain: an idle kept-alive connection closes at once (silently: no request to answer); one
    // with a request in progress or unanswered says `Connection: close` on its next response.
    bool on_drain() override {
        if (!in_request_ && unanswered_count() == 0) return false;
        draining_ = true;
        return true;
    }
    void on_close(net::close_reason why) override {
        resume_parked(); // a read waiting for answers completes with the close's error
        if (auto app = std::exchange(app_, nullptr)) app->on_close(why);
    }
    void on_writable() override {
        if (app_) app_->on_writable();
    }
    void on_output_idle() override {
        if (app_) app_->on_output_idle();
        if (parked_ && unanswered_count() < policy_.max_pipelined) resume_parked(); // parks_once_written's
    }
    void on_idle(net::idle_event e) override {
        if (app_) app_->on_idle(e);
    }
    // The eager read's grace ended (read_eagerly): the client is quiet, so its wait goes on holding
    // nothing — the read is cancelled and read_op waits again for the rest of the keep-alive time,
    // counted from the grace's due time (not from this call, up to a tick later: the keep-alive
    // close is as late as one deadline's, not two). A write still in flight (a cancel would cut it)
    // keeps the eager read for that rest instead.
    bool on_deadline(time_point due) override {
        if (!eager_grace_) return false; // the phase's own deadline: close
        eager_grace_ = false;
        quiet_ = true;
        conn_.expires_at(saturating_add(due, std::chrono::duration_cast<duration>(milliseconds(policy_.keepalive_timeout) -
                                                                                    detail::eager_grace)),
                         keepalive_timeout);
        if (conn_.queued() > 0) return true;
        if constexpr (net::detail::is_stream_socket<NextLayer>::value) { // the only layer read eagerly
            eager_cut_ = true;
            error_code ignored;
            conn_.stream().next_layer().cancel(ignored);
        }
        return true;
    }
    void on_detached() noexcept override {
        parked_ = nullptr;
        if (auto app = std::exchange(app_, nullptr)) app->on_detached();
    }

    // --- reading a request ------------------------------------------------------------------------
    template <class Body>
    struct read_op {
        using parser_type = bhttp::request_parser<Body>;
        using request_type = bhttp::request<Body>;
        enum class step : std::uint8_t { start, first_byte, head, body, drain, parked, eager };
        std::shared_ptr<http_connection> c; ///< empty while parked: the connection holds the parked op
        std::unique_ptr<parser_type> parser = nullptr; ///< from the request's first byte on
        std::uint32_t head_done = 0; ///< when the head was whole, in ms of the connection's age (body_deadline)
        step at = step::start;

        auto get_executor() const noexcept { return c->conn_.get_executor(); }

        // Resumed by an answer, the answer's write ending, or the close (parked above), with the
        // connection alive.
        template <class Self>
        void operator()(Self& self, std::shared_ptr<http_connection>&& resumed) {
            c = std::move(resumed);
            at = step::start;
            (*this)(self);
        }

        template <class Self>
        void operator()(Self& self, error_code ec = {}, std::size_t n = 0) {
            auto& conn = c->conn_;
            switch (at) {
            case step::start:
                if (conn.closing() || c->done_) return self.complete(error_code(net::errc::connection_closed), request_type{});
                if (c->unanswered_count() >= c->policy_.max_pipelined) {
                    // Parked in the connection, which must not be kept alive by it (no cycle).
                    at = step::parked;
                    http_connection* const home = c.get();
                    c.reset();
                    return home->park(std::move(self));
                }
                if (c->buffered() > 0) return parse_buffered(self); // pipelined: the next request is here
                if (c->resumed_ && c->may_take_eager_block()) { // woken by its bytes: read them at once
                    at = step::eager;
                    return c->read_woken(std::move(self));
                }
                if (c->may_read_eagerly()) {
                    at = step::eager;
                    return c->read_eagerly(std::move(self));
                }
                c->wait_for_request();
                if (c->served_ > 0 && c->park_ready()) return self.complete(error_code(net::errc::parked), request_type{});
                if (c->parks_once_written()) {
                    // A quiet client's connection parks at its answer, with no grace: once the
                    // answer's write has ended (on_output_idle), which holds the connection.
                    at = step::parked;
                    http_connection* const home = c.get();
                    c.reset();
                    return home->park(std::move(self));
                }
                at = step::first_byte;
                // No buffer while it waits (a chunk of the thread's pool once bytes are there).
                return conn.stream().async_receive(std::move(self));
            case step::eager: { // the next request's first bytes, read as they arrived (read_eagerly)
                if (!ec && !conn.closing()) return first_bytes(self, asio::const_buffer(c->eager_, n));
                c->release_eager();
                const bool cut = c->eager_cut_;
                c->eager_cut_ = false;
                if (ec == asio::error::operation_aborted && cut && !conn.closing()) {
                    // Quiet past the grace: wait holding nothing, under the keep-alive deadline
                    // on_deadline armed.
                    if (c->park_ready()) return self.complete(error_code(net::errc::parked), request_type{});
                    at = step::first_byte;
                    return conn.stream().async_receive(std::move(self));
                }
                return failed(self, ec);
            }
            case step::first_byte:
            case step::parked: // resumed through the overload above
                break; // first_byte completes with a read_chunk: the overload below
            case step::head:
            case step::body:
                if (ec || conn.closing()) return failed(self, ec);
                if (at == step::head) head_parsed(ec);
                return go_on(self, ec);
            case step::drain: { // after our goodbye: read and drop until the peer's end or the linger's
                auto& buf = c->buffer();
                buf.consume(buf.size());
                if (ec) {
                    conn.read_failed(ec);
                    return self.complete(error_code(net::errc::connection_closed), request_type{});
                }
                return conn.stream().async_read_some(buf.prepare(1024), std::move(self));
            }
            }
        }

        // The first bytes of a request (async_receive), parsed where they lie: a request that came
        // whole in one read is handed over without a buffer, a composed read or a deadline of its
        // own. What the parser leaves (the rest of a head or body, a pipelined request) is buffered.
        template <class Self>
        void operator()(Self& self, error_code ec, net::read_chunk chunk) {
            if (ec || c->conn_.closing()) {
                chunk.reset();
                return failed(self, ec);
            }
            const net::read_chunk bytes = std::move(chunk); // given back as this step ends
            c->note_arrival();
            const auto b = bytes.bytes();
            first_bytes(self, asio::const_buffer(b.data(), b.size()));
        }

        // A request's first bytes, parsed where they lie; what the parser leaves is buffered, and an
        // eager read's block is given back before the request goes on.
        template <class Self>
        void first_bytes(Self& self, asio::const_buffer in) {
            begin_request();
            error_code ec;
            const std::size_t used = parse(in, ec);
            if (used < in.size()) {
                auto& buf = c->buffer();
                buf.commit(asio::buffer_copy(buf.prepare(in.size() - used), in + used));
            }
            c->release_eager();
            go_on(self, ec);
        }

        // A pipelined request, whole or begun in the buffer.
        template <class Self>
        void parse_buffered(Self& self) {
            begin_request();
            auto& buf = c->buffer();
            error_code ec;
            buf.consume(parse(buf.data(), ec));
            go_on(self, ec);
        }

        void begin_request() {
            c->in_request_ = true;
            parser = std::make_unique<parser_type>();
            parser->header_limit(c->policy_.header_limit);
            parser->body_limit(c->policy_.body_limit);
        }

        // Feeds the parser what `in` holds, as far as it goes; returns the bytes it used. Stops at a
        // whole request, an error, or where more bytes are needed (not an error here).
        std::size_t parse(asio::const_buffer in, error_code& ec) {
            std::size_t used = 0;
            while (!parser->is_done() && used < in.size()) {
                const bool had_head = parser->is_header_done();
                const std::size_t n = parser->put(in + used, ec);
                used += n;
                if (ec == bhttp::error::need_more) {
                    ec = {};
                    break;
                }
                if (!ec && !had_head && parser->is_header_done()) head_parsed(ec);
                if (ec || n == 0) break;
            }
            return used;
        }

        // The head is whole: a Transfer-Encoding that does not end in chunked leaves the body's
        // length unknown (bad request); the body's deadline counts from now.
        void head_parsed(error_code& ec) {
            const auto& fields = parser->get();
            if (fields.find(bhttp::field::transfer_encoding) != fields.end() && !parser->chunked())
                ec = bhttp::error::bad_transfer_encoding;
            head_done = static_cast<std::uint32_t>(std::min<std::int64_t>(c->age().count(), UINT32_MAX));
        }

        // After parsing: the request handed over, or its head or body read on under its phase's deadline.
        template <class Self>
        void go_on(Self& self, error_code ec) {
            if (ec) return failed(self, ec);
            auto& conn = c->conn_;
            if (!parser->is_header_done()) {
                if (at != step::head) conn.expires_after(milliseconds(c->policy_.header_timeout), header_timeout);
                at = step::head;
                return bhttp::async_read_header(conn.stream(), c->buffer(), *parser, std::move(self));
            }
            if (parser->is_done()) return finish(self);
            at = step::body;
            milliseconds wait(c->policy_.body_timeout);
            if (c->policy_.body_deadline > 0) {
                const auto left = milliseconds(c->policy_.body_deadline) - (c->age() - milliseconds(head_done));
                wait = std::max(milliseconds(1), std::min(wait, left));
            }
            conn.expires_after(wait, body_timeout);
            return bhttp::async_read_some(conn.stream(), c->buffer(), *parser, std::move(self));
        }

        template <class Self>
        void finish(Self& self) {
            auto& conn = c->conn_;
            conn.expires_never();
            conn.message_received();
            c->in_request_ = false;
            c->resumed_ = false;
            request_type req = parser->release();
            parser.reset();
            c->version_ = static_cast<std::uint8_t>(req.version());
            c->unanswered({static_cast<std::uint8_t>(req.version()), req.keep_alive()});
            if (c->buffered() == 0) c->buffer_.reset(); // an idle connection holds no buffer
            self.complete(error_code{}, std::move(req));
        }

        template <class Self>
        void failed(Self& self, error_code ec) {
            auto& conn = c->conn_;
            if (conn.closing()) {
                if (ec) conn.read_failed(ec); // the peer's end ends our goodbye's linger
                if (conn.closed() || ec)
                    return self.complete(ec ? ec : error_code(net::errc::connection_closed), request_type{});
                at = step::drain;
                auto& buf = c->buffer();
                buf.consume(buf.size());
                return conn.stream().async_read_some(buf.prepare(1024), std::move(self));
            }
            // The peer's end between requests, or cutting one short; a reset between requests too (a
            // balancer's health check ends so: HAProxy's close without lingering) — inside a request
            // a reset is an I/O error.
            const bool between_requests = !c->in_request_ && c->buffered() == 0;
            if (ec == bhttp::error::end_of_stream || ec == bhttp::error::partial_message ||
                (between_requests && ec == asio::error::connection_reset))
                conn.abort(net::close_reason::peer_closed);
            else if (ec.category() == bhttp::make_error_code(bhttp::error::bad_method).category()) {
                c->error_status_ = static_cast<std::uint16_t>(
                    ec == bhttp::error::header_limit ? bhttp::status::request_header_fields_too_large
                    : ec == bhttp::error::body_limit ? bhttp::status::payload_too_large
                                                     : bhttp::status::bad_request);
                conn.close(bad_request);
            } else
                conn.read_failed(ec);
            self.complete(ec, request_type{});
        }
    };

    // A read that found max_pipelined requests unanswered waits here (no deadline: the application,
    // not the peer, is the one to act) until send() answers one or the connection closes; so does a
    // quiet connection's read until its answer's write ends (parks_once_written, under the keep-alive
    // deadline). The parked operation does not own this connection (it goes with it, never run, if
    // the connection goes; an application's handler inside it may hold it until one of those).
    struct parked_read {
        virtual ~parked_read() = default;
        virtual void resume(std::shared_ptr<http_connection>&& home) = 0;
    };
    template <class Self>
    struct parked_as final : parked_read {
        explicit parked_as(Self&& s) : self(std::move(s)) {}
        void resume(std::shared_ptr<http_connection>&& home) override { self(std::move(home)); }
        Self self;
    };
    template <class Self>
    void park(Self&& self) {
        parked_ = std::make_unique<parked_as<std::decay_t<Self>>>(std::move(self));
    }
    void resume_parked() {
        if (!parked_) return;
        // The reference goes into the operation (no holder more than its own: park_ready counts them).
        asio::post(conn_.get_executor(), [keep = self(), p = std::move(parked_)]() mutable { p->resume(std::move(keep)); });
    }

    // Between requests: the keep-alive wait (or, before the first, the head's). Not cut short by the
    // age: an idle close races the client's next request (which it may not retry), so the age ends
    // a connection only with an answer saying so, as nginx's keepalive_time does.
    void wait_for_request() {
        if (served_ == 0) return conn_.expires_after(milliseconds(policy_.header_timeout), header_timeout);
        conn_.expires_after(milliseconds(policy_.keepalive_timeout), keepalive_timeout);
    }

    // The eager read (see the top of this file): a kept-alive TCP connection right after an answer,
    // nothing pipelined, a keep-alive time well past the grace, and a block to spare on this thread.
    // A client found quiet past the grace (quiet_) is waited for instead, holding nothing, until one
    // of its requests comes within the grace of its answer again (note_arrival): a client that pauses
    // between requests would only pay the eager read's failed attempt and its grace's wake-up.
    bool may_read_eagerly() const noexcept { return !quiet_ && may_take_eager_block(); }
    bool may_take_eager_block() const noexcept {
        if constexpr (!net::detail::is_stream_socket<NextLayer>::value) return false;
        else
            return served_ > 0 && unanswered_count() == 0 &&
                   milliseconds(policy_.keepalive_timeout) > 4 * detail::eager_grace &&
                   detail::eager_held < detail::eager_max;
    }
    // A request's first bytes came to a wait (async_receive): within the grace of the keep-alive wait's
    // start, the client is busy again and the next request is read eagerly.
    void note_arrival() noexcept {
        if (!quiet_ || served_ == 0) return;
        const auto grace = std::chrono::duration_cast<duration>(detail::eager_grace);
        if (conn_.liveness().scheduler().fresh_now() < saturating_add(wait_began(), grace)) quiet_ = false;
    }
    // When the keep-alive wait began (its deadline, counted from there, is armed).
    time_point wait_began() const noexcept {
        return conn_.liveness().phase_due() - std::chrono::duration_cast<duration>(milliseconds(policy_.keepalive_timeout));
    }
    // A connection made again from a parked one, whose bytes are there: read at once into an eager
    // block (no readiness wait: its epoll_ctl), under the keep-alive deadline, with no grace to end
    // it (the read completes now; a wake without bytes waits as a quiet connection does, holding
    // the block — one of the thread's eager_max).
    template <class Op>
    void read_woken(Op&& op) {
        eager_ = static_cast<char*>(detail::eager_blocks::take(detail::eager_bytes));
        ++detail::eager_held;
        eager_cut_ = false;
        wait_for_request();
        conn_.stream().async_read_some_eagerly(asio::buffer(eager_, detail::eager_bytes), std::forward<Op>(op));
    }
    template <class Op>
    void read_eagerly(Op&& op) {
        eager_ = static_cast<char*>(detail::eager_blocks::take(detail::eager_bytes));
        ++detail::eager_held;
        eager_grace_ = true;
        eager_cut_ = false; // a cancel that found the last eager read completed already is not this one's
        conn_.expires_after(detail::eager_grace, keepalive_timeout);
        conn_.stream().async_read_some_eagerly(asio::buffer(eager_, detail::eager_bytes), std::forward<Op>(op));
    }
    // A server's loop may park the connection now (http_server.hpp): a plain TCP connection between
    // requests, kept alive, nothing buffered, queued or unanswered, judged by its phase deadline alone,
    // and held by nobody but its server's loop. One made again from a parked one
    // first reads the request whose bytes woke it.
    bool park_ready() const noexcept {
        if constexpr (!net::detail::is_stream_socket<NextLayer>::value) return false;
        else
            return may_park_ && !resumed_ && served_ > 0 && !in_request_ && !done_ && !draining_ && parked_ == nullptr &&
                   unanswered_count() == 0 && buffered() == 0 && !conn_.closing() && conn_.queued() == 0 &&
                   conn_.output_at_rest() && conn_.liveness().judges_only_phase() &&
                   conn_.weak_from_this().use_count() == holders_when_only_the_loops;
    }
    // Parkable but for the answer's write, whose completion is queued (an answer is written at once,
    // its completion runs a turn later).
    bool parks_once_written() const noexcept {
        if constexpr (!net::detail::is_stream_socket<NextLayer>::value) return false;
        else return may_park_ && !resumed_ && served_ > 0 && !conn_.output_at_rest();
    }
    // The references to an idle connection that only its server's loop holds: the pending read's, the
    // loop's handler's, and the connection's own (its handler is this layer, in its block).
    static constexpr long holders_when_only_the_loops = 3;
    void release_eager() noexcept {
        if (!eager_) return;
        detail::eager_blocks::give(eager_);
        eager_ = nullptr;
        --detail::eager_held;
        eager_grace_ = false;
    }

    connection_type& conn_; ///< the block's: this layer lives in its connection's heap block
    std::shared_ptr<net::connection_handler> app_;
    // The policy as each connection keeps it: every field's range fits 32 bits (36 bytes where
    // http_policy's durations and sizes take 72).
    struct kept_policy {
        explicit kept_policy(const http_policy& p)
            : keepalive_timeout(ms(p.keepalive_timeout)), header_timeout(ms(p.header_timeout)),
              body_timeout(ms(p.body_timeout)), body_deadline(ms(p.body_deadline)), max_requests(p.max_requests),
              max_age(ms(p.max_age)), header_limit(p.header_limit), body_limit(static_cast<std::uint32_t>(p.body_limit)),
              max_pipelined(static_cast<std::uint16_t>(p.max_pipelined)) {}
        static std::uint32_t ms(milliseconds d) noexcept { return static_cast<std::uint32_t>(d.count()); }
        std::uint32_t keepalive_timeout, header_timeout, body_timeout, body_deadline, max_requests, max_age,
            header_limit, body_limit;
        std::uint16_t max_pipelined; // at most 1024
    };
    kept_policy policy_;
    std::uint32_t served_ = 0; // beside the policy's 36 bytes: the fields are ordered to pack
    // The bytes read and not yet parsed: made at a request's first byte, gone once a request leaves
    // nothing behind (a pipelined one's bytes stay for the next).
    std::unique_ptr<boost::beast::flat_buffer> buffer_;
    boost::beast::flat_buffer& buffer() {
        if (!buffer_) buffer_ = std::make_unique<boost::beast::flat_buffer>();
        return *buffer_;
    }
    std::size_t buffered() const noexcept { return buffer_ ? buffer_->size() : 0; }
    std::chrono::steady_clock::time_point born_;
    std::unique_ptr<parked_read> parked_; ///< a read waiting for an answer (max_pipelined), or null
    // The requests read and not yet answered, oldest first: the first inline, pipelined ones behind it
    // in a vector that a client which waits for each answer never allocates.
    struct request_info {
        std::uint8_t version = 11; ///< HTTP/1.x: 10 or 11
        bool keep_alive = true;
    };
    std::unique_ptr<std::vector<request_info>> later_;
    std::uint16_t error_status_ = 0; ///< the answer a bad request gets (a bhttp::status), or 0
    std::optional<request_info> first_;
    std::uint8_t version_ = 11; ///< the last request's (a 408 or 400 answers in it)
    std::uint32_t unanswered_count() const noexcept {
        return (first_ ? 1u : 0u) + (later_ ? static_cast<std::uint32_t>(later_->size()) : 0u);
    }
    void unanswered(request_info r) {
        if (!first_) return void(first_ = r);
        if (!later_) later_ = std::make_unique<std::vector<request_info>>();
        later_->push_back(r);
    }
    request_info answering() {
        const request_info r = first_.value_or(request_info{version_, true});
        first_.reset();
        if (later_) {
            first_ = later_->front();
            later_->erase(later_->begin());
            if (later_->empty()) later_.reset();
        }
        return r;
    }
    // Flags in one byte (set false by the constructor): an idle connection's layer fits its 120 bytes.
    bool in_request_ : 1; ///< a request's first byte is here and it is not yet whole (a timeout: 408)
    bool done_ : 1;       ///< the last response is queued: no more requests are read
    bool draining_ : 1;   ///< asked to leave mid-request: the next response is the last
    bool eager_grace_ : 1; ///< the phase deadline is the eager read's grace (on_deadline)
    bool eager_cut_ : 1;   ///< on_deadline cancelled the eager read: it waits on, holding nothing
    bool may_park_ : 1;    ///< its server parks it when idle (http_server.hpp)
    bool resumed_ : 1;     ///< made again from a parked connection, its first request not yet read
    bool quiet_ : 1;       ///< its client paused past the eager read's grace: waited for, not read eagerly
    const bool on_strand_; ///< the connection lives on a strand: send() looks whether it runs inside it
    char* eager_ = nullptr;    ///< the eager read's block, while it reads
};

} // namespace heartwheel::http

#endif
