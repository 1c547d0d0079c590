// heartwheel/beast/http_server.hpp — the HTTP request loop, with idle kept-alive connections parked.
//
// http_connection hands an application its requests and lets it choose when to read the next. Most
// servers answer each request as they get it; they can give the loop to http::server instead, and
// get one thing more: a kept-alive connection quiet past the eager read's grace is *parked*. Its
// net::connection, HTTP layer and pending read are freed; what waits for the client's next request
// is one block holding the socket, one wheel node for the rest of the keep-alive time and Asio's
// wait for readiness (beside Asio's own state for the descriptor). nginx keeps an idle keep-alive
// connection the same way: its connection structure and read event, nothing else.
//
//   auto app = [](http::http_connection<tcp::socket>& c, bhttp::request<bhttp::string_body>&& req) {
//       bhttp::response<bhttp::string_body> res{bhttp::status::ok, req.version()};
//       res.body() = "hello\n";
//       c.send(res);                                        // answered before returning: parkable
//   };
//   http::server<tcp::socket, decltype(app)> srv(ctx, policy, app); // per context, outliving its connections
//   srv.serve(std::move(socket));                           // each accepted socket (TLS: handshake first)
//
// A connection made again whose client had paused (woken later than the eager read's grace after
// its answer) parks again at its next answer, as soon as the answer is written: no grace, no eager
// read for a client known to pause; one woken within the grace reads eagerly again.
//
// When the client's next bytes come, a connection is made again around the socket with the requests
// it served and its age (max_requests and max_age go on counting), and the loop goes on. A client
// that stays quiet is closed keepalive-timeout at the deadline its connection had armed (taken over
// as it was, never early); a peer's end of stream or reset is read by the connection made again
// (peer-closed); a drain or close_connections closes a parked connection at once with their reason
// (an idle connection has no request to answer). It stays one of its context's connections
// (net::connections_of, its admission place).
//
// What parks: a plain TCP connection (TLS keeps its session: never), between requests, its output
// written, nothing pipelined, a liveness that judges nothing but the keep-alive deadline
// (connection_liveness::judges_only_phase: no idle kind, max age, read timeout or heartbeat), and
// nobody but the loop holding the connection: an application that keeps it to answer later is
// waited for as with async_read_request. A connection made again from a parked one reads its first
// request before it may park again (its readiness woke it).
//
// Threads: a server per connection_context (a thread's, or a strand's in a pool); the application is
// called on the connection's executor. The server, its context and its wheel outlive its connections.
//
// Invariants: a parked connection is registered in its context's teardown_registry before its
// connection leaves (the count never drops between the two) and until it is closed or handed on; its
// socket is open and waited on, handed to the connection made again, or closed; its close is
// counted once, here (it never reaches a net::connection's close path).
#ifndef HEARTWHEEL_BEAST_HTTP_SERVER_HPP
#define HEARTWHEEL_BEAST_HTTP_SERVER_HPP

#include <heartwheel/beast/http.hpp>
#include <heartwheel/net/detail/slot_allocator.hpp>
#include <heartwheel/net/server/drain.hpp>
#include <heartwheel/timer_node.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>

namespace heartwheel::http {

namespace detail {

/// A parked connection (see the top of this file): its socket, the rest of its keep-alive time as a
/// wheel node, its readiness wait (in its own memory), and what the connection made again goes on
/// from. Owned by its pending wait; closed here, or handed back to its server.
template <class Server>
class parked_connection final : public timer_node,
                                private net::detail::teardown_registry::entry,
                                public std::enable_shared_from_this<parked_connection<Server>> {
public:
    using socket_type = typename Server::stream_type;

    parked_connection(Server& s, socket_type socket, std::uint32_t served, std::chrono::steady_clock::time_point born,
                      time_point quiet_since)
        : socket_(std::move(socket)), server_(&s), born_(born), quiet_since_(quiet_since), served_(served) {}
    ~parked_connection() override {
        // Handed on: the connection made again holds the admission place now; never closed
        // (the context shut down): its place is free.
        net::detail::teardown_registry::of(socket_.get_executor()).remove(*this, socket_.get_executor(), state_ != state::closed);
    }
    parked_connection(const parked_connection&) = delete;
    parked_connection& operator=(const parked_connection&) = delete;

    /// Registers it, files its node at `due` and waits for the client's next bytes.
    void start(time_point due) {
        net::detail::teardown_registry::of(socket_.get_executor()).add(*this);
        server_->context().timers.schedule(*this, due);
        socket_.async_wait(socket_type::wait_read, waiter{this->shared_from_this()});
    }

    /// The wait's handler; its operation is placed in the parked connection's own memory.
    struct waiter {
        std::shared_ptr<parked_connection> self;
        using allocator_type = net::detail::slot_allocator<void, parked_connection>;
        allocator_type get_allocator() const noexcept { return allocator_type(self.get()); }
        void operator()(error_code ec) { self->waited(ec); }
    };
    // The wait's memory (net::detail::slot_allocator): Asio's wait operation with that handler, where Asio has a reactor.
    static constexpr std::size_t slot_size =
#if defined(HEARTWHEEL_ASIO_REACTIVE_WAIT)
        sizeof(asio::detail::reactive_wait_op<waiter, typename socket_type::executor_type>);
#else
        0;
#endif
    void* slot() noexcept { return slot_; }
    bool slot_taken = false;

private:
    enum class state : std::uint8_t { waiting, handed_on, closed };

    // The keep-alive time ran out: a silent close, unless the client's bytes wait unread (a process
    // stall: its wait is about to complete), as a connection's phase deadline does.
    void on_expire() override {
        if (state_ != state::waiting) return;
        error_code ec;
        if (socket_.available(ec) > 0 && !ec) {
            timer_scheduler& svc = server_->context().timers;
            return svc.schedule(*this, saturating_add(svc.now(), net::unread_input_recheck));
        }
        close(keepalive_timeout);
    }
    void waited(error_code ec) {
        if (state_ != state::waiting) return; // closed meanwhile: the wait ended with it
        if (ec) return close(net::close_reason::io_error);
        state_ = state::handed_on;
        cancel();
        // Its client spoke again within the eager read's grace of its answer (a connection parked at
        // its answer, its client found quiet before): busy again, read eagerly from its next answer.
        const bool quick = server_->context().timers.fresh_now() < saturating_add(quiet_since_, std::chrono::duration_cast<duration>(eager_grace));
        server_->resume(std::move(socket_), served_, born_, quick);
    }
    void close(net::close_reason why) {
        if (state_ != state::waiting) return;
        state_ = state::closed;
        cancel();
        server_->unparked();
        error_code ignored;
        socket_.shutdown(asio::socket_base::shutdown_both, ignored); // a silent close: FIN, nothing said
        socket_.close(ignored);                                      // the wait completes, aborted
        if (net::liveness_counters* n = server_->context().counters) n->closed(why);
        net::detail::teardown_registry::of(socket_.get_executor()).connection_closed();
    }

    // --- teardown_registry::entry: a drain or a server's stop closes it (an idle connection has no
    // request to answer); the context's shutdown destroys its wait, and it goes with it.
    void on_context_shutdown() noexcept override {}
    std::shared_ptr<void> keep() noexcept override { return this->weak_from_this().lock(); }
    void drain(std::shared_ptr<void> keep) override {
        asio::post(socket_.get_executor(), [k = std::move(keep), this] { close(net::draining_reason()); });
    }
    void close_with(std::shared_ptr<void> keep, net::close_reason why) override {
        asio::post(socket_.get_executor(), [k = std::move(keep), this, why] { close(why); });
    }

    socket_type socket_;
    Server* server_;
    std::chrono::steady_clock::time_point born_;
    time_point quiet_since_; ///< when its wait for the client began (its answer), on the wheel's clock
    std::uint32_t served_;
    state state_ = state::waiting;
    alignas(void*) unsigned char slot_[slot_size > 0 ? slot_size : 1];
};

} // namespace detail

/// The request loop of a server that answers each request as it reads it (see the top of this file).
/// `App`: void(http_connection<Stream>&, bhttp::request<Body>&&), answering with send() — before it
/// returns, or later from a reference it keeps (the connection then does not park until it lets go).
template <class Stream, class App, class Body = bhttp::string_body>
class server {
public:
    using stream_type = Stream;
    using connection_type = http_connection<Stream>;

    /// `ctx`, and `policy` (validated here: net::config_error naming http.<field>), for every
    /// connection served; the application is called with each request.
    server(const net::connection_context& ctx, http_policy policy, App app)
        : ctx_(ctx), policy_(policy), app_(std::move(app)) {
        policy_.validate();
    }
    server(const server&) = delete;
    server& operator=(const server&) = delete;

    /// Serves an accepted stream until it closes (a TLS stream after its handshake, under the
    /// context's handshake timeout; a failed one is closed and counted).
    void serve(Stream stream) {
        auto c = connection_type::create_validated(std::move(stream), ctx_, nullptr, policy_);
        if constexpr (connection_type::connection_type::is_tls) {
            auto& conn = c->connection();
            conn.async_handshake(asio::ssl::stream_base::server, [this, c = std::move(c)](error_code ec) mutable {
                if (!ec) read_next(std::move(c));
            });
        } else {
            c->may_park_ = parks;
            read_next(std::move(c));
        }
    }

    /// Connections parked now (on this server's context: read there).
    std::size_t parked() const noexcept { return parked_; }
    const net::connection_context& context() const noexcept { return ctx_; }
    const http_policy& policy() const noexcept { return policy_; }
    App& app() noexcept { return app_; }

private:
    friend class detail::parked_connection<server>;
    /// Only a plain TCP socket parks (see the top of this file).
    static constexpr bool parks = net::detail::is_stream_socket<Stream>::value;

    void read_next(std::shared_ptr<connection_type> c) {
        auto& h = *c;
        h.template async_read_request<Body>([this, c = std::move(c)](error_code ec, bhttp::request<Body> req) mutable {
            if (ec) {
                if constexpr (parks) {
                    if (ec == error_code(net::errc::parked)) park(std::move(c));
                }
                return; // closed, counted
            }
            app_(*c, std::move(req));
            read_next(std::move(c));
        });
    }

    // The layer found the connection idle and only ours, and armed its keep-alive deadline: the
    // parked connection takes the socket and that deadline, and the connection goes (unregistered
    // after the parked one registered: still one of the context's).
    void park(std::shared_ptr<connection_type> c) {
        auto& conn = c->connection();
        const time_point due = conn.liveness().phase_due();
        auto p = std::make_shared<detail::parked_connection<server>>(*this, std::move(conn.stream().next_layer()),
                                                                     c->served_, c->born_, c->wait_began());
        p->start(due);
        ++parked_;
        conn.set_handler(nullptr); // its hold on its own layer (one block): the connection goes with `c`
    }
    // The parked connection's client sent its next bytes: a connection again, going on from where it was.
    void resume(Stream socket, std::uint32_t served, std::chrono::steady_clock::time_point born, bool quick) {
        unparked();
        auto c = connection_type::create_validated(std::move(socket), ctx_, nullptr, policy_);
        c->served_ = served;
        c->born_ = born;
        c->may_park_ = true;
        c->resumed_ = true;
        c->quiet_ = !quick; // paused past the grace: its next requests are waited for (parked) at once
        read_next(std::move(c));
    }
    void unparked() noexcept { --parked_; }

    const net::connection_context& ctx_;
    http_policy policy_;
    App app_;
    std::size_t parked_ = 0;
};

} // namespace heartwheel::http

#endif
