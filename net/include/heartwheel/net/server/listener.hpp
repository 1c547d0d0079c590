// heartwheel/net/server/listener.hpp — the accept loop every server needs, with the defences it needs.
//
// A listener owns a listening socket. Its async_accept completes with a connected socket, or with an
// error only once the listener is closed (operation_aborted): everything else that accept() can say
// is handled here, so that a server's loop `for (;;) { auto [ec, s] = co_await l.async_accept(...);
// if (ec) break; ... }` never stops accepting by mistake and never spins:
//  - out of descriptors or kernel memory (EMFILE, ENFILE, ENOBUFS, ENOMEM): the connections waiting
//    in the backlog are accepted on a spare descriptor kept for this and refused (the `refusal`
//    bytes, best effort, then closed: nginx and libuv users do the same), counted, and accepting
//    rests for `pause` before it tries again — never a busy loop, never the end of accepting. The
//    episode is logged once when it starts and once when accepting succeeds again;
//  - a connection that failed between the kernel's handshake and accept() (ECONNABORTED, EPROTO,
//    the network errors accept(2) lists): retried at once;
//  - anything else: logged once per episode and retried after `pause`.
// And it admits (admission.hpp): at `admission.max_connections` open it stops accepting until a place
// frees (the kernel's backlog holds the newcomers; a handshake whose peer says nothing is shed
// meanwhile), looking again every `admission_poll`. TLS handshakes beyond `max_handshakes` queue for
// a place inside the server (their connections accepted), not in the backlog. Connections are
// counted on the execution contexts it accepts into. By default handshakes are bounded (1,024 at
// once) and connections are not.
// Behind a load balancer (`proxy.enabled`, proxy_protocol.hpp), every connection must come from a
// trusted range and start with a PROXY header; the listener reads the headers of up to
// `proxy.max_pending` connections at once beside its accepting (a slow header never holds up the
// next accept), completes an accept only with a connection whose header is whole and consumed, and
// gives the client's address named in it to async_accept(ex, peer, token). A peer outside the
// trusted ranges, a missing, malformed, oversized or too slow header is closed with its own reason,
// counted. Accepted sockets wait in a queue for the application's next accept (as in the backlog).
// Constructing a listener raises the process's soft descriptor limit to its hard one (Go's runtime
// does the same at start): a server holding connections wants every descriptor it may have.
// Across restarts (handover.hpp): given an endpoint, a listener takes a socket systemd passed for it
// (socket activation) or, with `handover` set, the socket of the process serving that path, before
// it binds one; and it serves the path for its own successor — when one takes the socket over, the
// listener stops accepting, says so once, and calls on_handed_over() (drain_on_signals drains then).
//
// One accept pending at a time; use it (and close()) from its acceptor's executor (one thread, or a
// strand), and let close()'s aborted handlers run before destroying it. The counters are atomics,
// read from any thread. Memory: the acceptor, two timers, a spare descriptor, the options; with the
// PROXY protocol ~1.2 KiB per header being read, and the queue of sockets read and not yet taken.
#ifndef HEARTWHEEL_NET_LISTENER_HPP
#define HEARTWHEEL_NET_LISTENER_HPP

#include <heartwheel/net/server/admission.hpp>
#include <heartwheel/net/connection/close_reason.hpp>
#include <heartwheel/net/metrics/counters.hpp>
#include <heartwheel/net/detail/teardown_registry.hpp>
#include <heartwheel/net/server/listen.hpp>
#include <heartwheel/net/server/proxy_protocol.hpp>

#include <heartwheel/asio.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace heartwheel::net {

struct listener_options {
    listen_options listen;                            ///< SO_REUSEPORT, backlog (when the listener binds)
    std::chrono::milliseconds pause{50};              ///< accepting rests this long after a failure it cannot retry at once
    std::string refusal;                              ///< written (best effort) to a connection refused at the descriptor limit
    std::string name = "server";                      ///< the log lines' prefix (the program's name)
    std::function<void(std::string_view)> log;        ///< one line per episode; null: std::cerr
    liveness_counters* counters = nullptr;            ///< counts each connection the listener closes itself, by its reason
    std::function<void(close_reason)> on_refused;     ///< called once per connection the listener closes itself (busy, proxy-*), on its executor
    bool raise_descriptor_limit = true;               ///< soft RLIMIT_NOFILE up to the hard one at construction
    admission_limits admission;                       ///< connections and TLS handshakes at once (validated by the constructor)
    std::chrono::milliseconds admission_poll{10};     ///< at a limit, how often accepting looks for a free place
    proxy_protocol_options proxy;                     ///< PROXY headers from trusted balancers (off by default)
    std::string handover;                             ///< a Unix socket path: the listening socket is taken from the process serving it and served to the next (off when empty)
    bool inherit = true;                              ///< a socket systemd passed for the endpoint (LISTEN_FDS) is used instead of binding
};

class handover_server;

/// The close reason a connection refused at the descriptor limit (or by a server at its limit) counts as.
close_reason busy_reason();

/// Raises the soft RLIMIT_NOFILE to the hard limit; returns the soft limit now in force (0: unlimited).
std::size_t raise_descriptor_limit() noexcept;

class listener {
public:
    /// Listens on `endpoint`: on a socket inherited for it (systemd's, or with options.handover a
    /// predecessor's), else bound (throws listen_error naming it and the reason; a predecessor with
    /// no socket for `endpoint` is an error too, and it serves on).
    listener(const asio::any_io_executor& ex, const asio::ip::tcp::endpoint& endpoint, listener_options options = {});
    /// Takes a socket already listening.
    explicit listener(asio::ip::tcp::acceptor acceptor, listener_options options = {});
    listener(const listener&) = delete;
    listener& operator=(const listener&) = delete;
    ~listener();

    /// Completes void(error_code, socket) with a socket whose I/O runs on the acceptor's executor, or
    /// with operation_aborted once the listener is closed.
    template <class Token>
    auto async_accept(Token&& token) {
        return async_accept(acceptor_.get_executor(), std::forward<Token>(token));
    }
    /// The same, the socket's I/O on `ex` (a thread's io_context, a strand of a pool).
    template <class Executor, class Token>
    auto async_accept(const Executor& ex, Token&& token) {
        using socket_type = typename asio::ip::tcp::socket::template rebind_executor<Executor>::other;
        return asio::async_compose<Token, void(error_code, socket_type)>(accept_op<Executor>{this, ex}, token, acceptor_);
    }
    /// The same, and `peer` (which must outlive the operation) set to the client's address: the one a
    /// PROXY header named, else the socket's remote endpoint.
    template <class Executor, class Token>
    auto async_accept(const Executor& ex, asio::ip::tcp::endpoint& peer, Token&& token) {
        using socket_type = typename asio::ip::tcp::socket::template rebind_executor<Executor>::other;
        return asio::async_compose<Token, void(error_code, socket_type)>(accept_op<Executor>{this, ex, &peer}, token, acceptor_);
    }

    /// Stops accepting: the listening socket closes and a pending accept completes operation_aborted
    /// (and a handover path stops being served).
    void close() noexcept;
    /// Called (on the acceptor's executor) after a successor took the listening socket over and this
    /// listener closed: the application drains. Replaces the previous one.
    void on_handed_over(std::function<void()> f) { on_handed_over_ = std::move(f); }
    bool is_open() const noexcept { return acceptor_.is_open(); }

    asio::ip::tcp::acceptor& acceptor() noexcept { return acceptor_; }
    asio::ip::tcp::endpoint local_endpoint() const;
    /// "HOST:PORT" (IPv6 in brackets), what a server prints after "listening on ".
    std::string local_address() const;

    std::uint64_t accepted() const noexcept { return accepted_.load(std::memory_order_relaxed); }
    /// Connections refused at the descriptor limit.
    std::uint64_t refused() const noexcept { return refused_.load(std::memory_order_relaxed); }
    /// Times accepting rested (each `pause`).
    std::uint64_t pauses() const noexcept { return pauses_.load(std::memory_order_relaxed); }
    /// Times accepting stopped at an admission limit (each episode once).
    std::uint64_t waits() const noexcept { return waits_.load(std::memory_order_relaxed); }
    /// Refused at max_connections (refuse_at_limit).
    std::uint64_t refused_at_limit() const noexcept { return refused_at_limit_.load(std::memory_order_relaxed); }
    /// Connections whose PROXY header was read (LOCAL ones included), and those closed for theirs.
    std::uint64_t proxied() const noexcept { return proxied_.load(std::memory_order_relaxed); }
    std::uint64_t proxy_refused() const noexcept { return proxy_refused_.load(std::memory_order_relaxed); }
    /// The admission (null when nothing is limited): its counts, and its limits.
    const admission* admitted() const noexcept { return admission_.get(); }
    /// The application is at a connection limit it keeps itself (or the listener is, out of
    /// descriptors): TLS handshakes whose peers have said nothing for admission.handshake_stall are
    /// shed, so that a flood of silent peers cannot hold every place until its handshake timeout.
    /// Thread-safe.
    void at_capacity() noexcept;
    /// A socket this listener accepted was dropped without becoming a net::connection: its place is free.
    void dropped() noexcept {
        if (admission_) admission_->unreserve();
    }

private:
    enum class outcome { accepted, closed, retry_now, exhausted, failed };
    outcome judge(const error_code& ec);
    void say(const std::string& line);

    template <class Executor>
    struct accept_op {
        using socket_type = typename asio::ip::tcp::socket::template rebind_executor<Executor>::other;
        accept_op(listener* owner, const Executor& e, asio::ip::tcp::endpoint* p = nullptr, bool a = true)
            : l(owner), ex(e), peer(p), admit(a) {}
        listener* l;
        Executor ex;
        asio::ip::tcp::endpoint* peer;
        bool admit; ///< false: the PROXY intake's own accepts (admitted when handed out)
        std::optional<socket_type> handed; ///< a socket from the PROXY queue, delivered after a post
        error_code result;

        bool proxied() const noexcept { return admit && l->options_.proxy.enabled; }

        template <class Self>
        void operator()(Self& self) {
            if (handed) return self.complete(result, std::move(*handed));
            if (proxied()) return take_proxied(self);
            accept_or_wait(self);
        }
        template <class Self>
        void operator()(Self& self, error_code ec, socket_type socket) {
            switch (l->judge(ec)) {
            case outcome::accepted:
                if (admit && l->admission_) {
                    if (l->at_connection_limit()) { // refuse_at_limit: accepted only to be told
                        l->refuse_at_limit(socket.native_handle());
                        return accept_or_wait(self);
                    }
                    l->admit(ex);
                }
                if (peer) {
                    error_code gone;
                    *peer = socket.remote_endpoint(gone);
                }
                return self.complete(ec, std::move(socket));
            case outcome::closed: return self.complete(asio::error::operation_aborted, std::move(socket));
            case outcome::retry_now: return l->acceptor_.async_accept(ex, std::move(self));
            case outcome::exhausted:
            case outcome::failed:
                l->pauses_.fetch_add(1, std::memory_order_relaxed);
                l->pause_.expires_after(l->options_.pause);
                return l->pause_.async_wait(std::move(self));
            }
        }
        template <class Self>
        void operator()(Self& self, error_code) { // a pause is over (or close() cut it short: the
            if (proxied()) return take_proxied(self); // closed acceptor then says so at once), or
            accept_or_wait(self);                     // a PROXY header was read
        }
        // At an admission limit (and open): rest admission_poll and look again; else accept.
        template <class Self>
        void accept_or_wait(Self& self) {
            if (l->must_wait()) {
                l->pause_.expires_after(l->options_.admission_poll);
                return l->pause_.async_wait(std::move(self));
            }
            l->acceptor_.async_accept(ex, std::move(self));
        }
        // The next socket whose header is read (its I/O moved to `ex`), or wait for one; the
        // completion is posted, never made inside the initiating call.
        template <class Self>
        void take_proxied(Self& self) {
            // At max_connections (waiting, not refusing), a socket read waits in the queue too.
            const bool full = l->admission_ && !l->admission_->limits().refuse_at_limit &&
                              !l->admission_->room_for_connection() && l->acceptor_.is_open();
            if (full) {
                l->ready_signal_.expires_after(l->options_.admission_poll);
                return l->ready_signal_.async_wait(asio::bind_executor(l->acceptor_.get_executor(), std::move(self)));
            }
            while (!l->ready_.empty()) {
                auto r = std::move(l->ready_.front());
                l->ready_.pop_front();
                l->intake();
                if (l->admission_ && l->at_connection_limit()) {
                    l->refuse_at_limit(r.socket.native_handle());
                    continue;
                }
                error_code ec;
                const auto protocol = r.socket.local_endpoint(ec).protocol();
                const auto fd = ec ? -1 : r.socket.release(ec);
                if (!ec) {
                    handed.emplace(ex);
                    handed->assign(protocol, fd, ec);
                    if (ec) {
                        close_fd(fd);
                        handed.reset();
                    }
                }
                if (ec) { // the peer is gone meanwhile: nothing to hand out, counted once
                    l->closed_here(close_reason::peer_closed);
                    continue;
                }
                if (l->admission_) l->admit(ex);
                if (peer) *peer = r.source;
                return asio::post(std::move(self));
            }
            if (!l->acceptor_.is_open()) {
                handed.emplace(ex);
                result = asio::error::operation_aborted;
                return asio::post(std::move(self));
            }
            l->intake();
            l->ready_signal_.expires_at(asio::steady_timer::time_point::max());
            l->ready_signal_.async_wait(asio::bind_executor(l->acceptor_.get_executor(), std::move(self)));
        }
    };

    /// A socket accepted and its PROXY header read, waiting for the application's accept.
    struct proxied_socket {
        asio::ip::tcp::socket socket;
        asio::ip::tcp::endpoint source;
    };
    struct header_read; ///< one socket whose header is being read (proxy_intake.cpp)
    /// Accepts while fewer than proxy.max_pending headers are being read or waiting to be taken.
    void intake();
    void read_header(const std::shared_ptr<header_read>& h);
    void header_done(const std::shared_ptr<header_read>& h, std::optional<close_reason> failed);
    void close_intake() noexcept;
    /// A socket the intake will not hand out (untrusted, a bad header, gone): counted, closed.
    void refuse_proxied(asio::ip::tcp::socket& s, close_reason r);
    /// The accepted socket takes an admission place, on the context its connection will live on.
    template <class Executor>
    void admit(const Executor& ex) {
        admission_->reserve();
        last_reserved_ = std::chrono::steady_clock::now();
        detail::teardown_registry::of(ex).attach(admission_);
    }
    void refuse_at_limit(int fd);
    /// A connection the listener closes itself, never handed out: counted with its reason, told.
    void closed_here(close_reason r);
    static void close_fd(int fd) noexcept;

    void refuse_waiting();
    /// Whether accepting waits for a connection place now (counting the episode, asking handshakes
    /// whose peers say nothing to look at themselves meanwhile).
    bool must_wait();
    bool at_connection_limit() const noexcept {
        return admission_->limits().refuse_at_limit && !admission_->room_for_connection();
    }
    /// Writes the refusal (best effort) to a socket about to be closed, and counts it busy (the
    /// descriptor limit's refusals and refuse_at_limit's alike).
    void refuse(int fd);

    void handed_over();

    listener_options options_;
    asio::ip::tcp::acceptor acceptor_;
    std::unique_ptr<handover_server> handover_; ///< with options.handover
    std::function<void()> on_handed_over_;
    asio::steady_timer pause_;
    int spare_ = -1;          ///< a descriptor kept free to accept-and-refuse at the limit
    bool in_episode_ = false; ///< accepting failed and has not succeeded since
    bool probed_ = false;     ///< the last accept retried a failure that found room
    std::uint64_t episode_refused_ = 0;
    bool waiting_ = false;   ///< accepting is stopped at an admission limit
    std::chrono::steady_clock::time_point last_reserved_{};
    std::shared_ptr<admission> admission_; ///< shared with the contexts it accepted into
    asio::steady_timer ready_signal_;      ///< an accept waiting for a PROXY header: cancelled when one is read
    std::deque<proxied_socket> ready_;
    std::list<std::shared_ptr<header_read>> reading_;
    bool intake_accepting_ = false;
    std::atomic<std::uint64_t> accepted_{0}, refused_{0}, pauses_{0}, waits_{0}, refused_at_limit_{0};
    std::atomic<std::uint64_t> proxied_{0}, proxy_refused_{0};
};

} // namespace heartwheel::net

#endif
