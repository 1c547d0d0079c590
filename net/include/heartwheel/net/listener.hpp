// heartwheel/net/listener.hpp — the accept loop every server needs, with the defences it needs.
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
// And it admits (admission.hpp): at `admission.max_connections` open, or `max_handshakes` TLS
// handshakes in progress, it stops accepting until a place frees (the kernel's backlog holds the
// newcomers; a stalled handshake is shed meanwhile), looking again every `admission_poll`.
// Connections are counted on the execution contexts it accepts into. By default handshakes are
// bounded (1,024 at once) and connections are not.
// Constructing a listener raises the process's soft descriptor limit to its hard one (Go's runtime
// does the same at start): a server holding connections wants every descriptor it may have.
//
// One accept pending at a time; use it (and close()) from its acceptor's executor. The counters are
// atomics, read from any thread. Memory: the acceptor, a timer, a spare descriptor, the options.
#ifndef HEARTWHEEL_NET_LISTENER_HPP
#define HEARTWHEEL_NET_LISTENER_HPP

#include <heartwheel/net/admission.hpp>
#include <heartwheel/net/close_reason.hpp>
#include <heartwheel/net/counters.hpp>
#include <heartwheel/net/detail/teardown_registry.hpp>
#include <heartwheel/net/listen.hpp>

#include <heartwheel/asio.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace heartwheel::net {

struct listener_options {
    listen_options listen;                            ///< SO_REUSEPORT, backlog (when the listener binds)
    std::chrono::milliseconds pause{50};              ///< accepting rests this long after a failure it cannot retry at once
    std::string refusal;                              ///< written (best effort) to a connection refused at the descriptor limit
    std::string name = "server";                      ///< the log lines' prefix (the program's name)
    std::function<void(std::string_view)> log;        ///< one line per episode; null: std::cerr
    liveness_counters* counters = nullptr;            ///< counts each refusal as a close "busy"
    std::function<void()> on_refused;                 ///< called once per refused connection (the listener's executor)
    bool raise_descriptor_limit = true;               ///< soft RLIMIT_NOFILE up to the hard one at construction
    admission_limits admission;                       ///< connections and TLS handshakes at once (validated by the constructor)
    std::chrono::milliseconds admission_poll{10};     ///< at a limit, how often accepting looks for a free place
};

/// The close reason a connection refused at the descriptor limit (or by a server at its limit) counts as.
close_reason busy_reason();

/// Raises the soft RLIMIT_NOFILE to the hard limit; returns the soft limit now in force (0: unlimited).
std::size_t raise_descriptor_limit() noexcept;

class listener {
public:
    /// Listens on `endpoint` (throws listen_error naming it and the reason).
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

    /// Stops accepting: the listening socket closes and a pending accept completes operation_aborted.
    void close() noexcept;
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
    /// The admission (null when nothing is limited): its counts, and its limits.
    const admission* admitted() const noexcept { return admission_.get(); }
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
        listener* l;
        Executor ex;

        template <class Self>
        void operator()(Self& self) {
            accept_or_wait(self);
        }
        template <class Self>
        void operator()(Self& self, error_code ec, socket_type socket) {
            switch (l->judge(ec)) {
            case outcome::accepted:
                if (l->admission_) {
                    if (l->at_connection_limit()) { // refuse_at_limit: accepted only to be told
                        l->refuse(socket.native_handle());
                        l->refused_at_limit_.fetch_add(1, std::memory_order_relaxed);
                        return accept_or_wait(self);
                    }
                    l->admission_->reserve();
                    l->last_reserved_ = std::chrono::steady_clock::now();
                    detail::teardown_registry::of(ex).attach(l->admission_);
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
        void operator()(Self& self, error_code) { // the pause is over (or close() cut it short: the
            accept_or_wait(self);                 // closed acceptor then says so at once)
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
    };

    void refuse_waiting();
    /// Whether accepting waits for a place now (counting the episode, asking stalled handshakes to
    /// look at themselves while handshake places are what is missing).
    bool must_wait();
    bool at_connection_limit() const noexcept {
        return admission_->limits().refuse_at_limit && !admission_->room_for_connection();
    }
    /// Writes the refusal (best effort) to a socket about to be closed, and counts it busy (the
    /// descriptor limit's refusals and refuse_at_limit's alike).
    void refuse(int fd);

    listener_options options_;
    asio::ip::tcp::acceptor acceptor_;
    asio::steady_timer pause_;
    int spare_ = -1;          ///< a descriptor kept free to accept-and-refuse at the limit
    bool in_episode_ = false; ///< accepting failed and has not succeeded since
    bool probed_ = false;     ///< the last accept retried a failure that found room
    std::uint64_t episode_refused_ = 0;
    bool waiting_ = false;   ///< accepting is stopped at an admission limit
    std::chrono::steady_clock::time_point last_reserved_{};
    std::shared_ptr<admission> admission_; ///< shared with the contexts it accepted into
    std::atomic<std::uint64_t> accepted_{0}, refused_{0}, pauses_{0}, waits_{0}, refused_at_limit_{0};
};

} // namespace heartwheel::net

#endif
