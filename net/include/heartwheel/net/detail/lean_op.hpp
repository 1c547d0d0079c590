// heartwheel/net/detail/lean_op.hpp — a composed operation whose pending step is one pointer.
//
// The idea: a framing layer's read (an HTTP request, a WebSocket message) is a state machine over
// several reads of the stream, the shape asio::async_compose is for. But async_compose carries, in
// every intermediate handler it hands the stream, two work guards of the I/O executor (an
// any_io_executor's is 120 bytes) and the application's handler: a kept-alive HTTP connection or an
// idle WebSocket waiting for its peer's next bytes held a 328-byte wait operation for it, the largest
// block of an idle connection after the connection itself. Here the state (the step's Impl and the
// application's handler) is one heap block of its own size, and the handler handed to each step is a
// pointer to it: small enough for the stream core's receive memory (stream_core.hpp), so that the
// idle wait adds nothing to the stream's own block.
//
//   return detail::async_lean_op<void(error_code, std::size_t)>(my_op{...}, token);
//   // my_op: template <class Self> void operator()(Self& self, args...) — as async_compose's, with
//   // self.complete(args...) and std::move(self) as the next step's handler — and get_executor():
//   // the I/O executor its steps run on (a connection's).
//
// Steps run where the stream completes them (the connection's executor: its strand in a pool); the
// application's handler runs on its own associated executor, dispatched there at the end — posted
// when the operation ends inside its initiating call (Asio's rule: never inside the initiation).
// Outstanding work is tracked on the handler's executor only when it is not the I/O executor (whose
// pending operations keep its io_context running anyway).
//
// Invariants: exactly one of complete() or the state's destruction ends the operation (a pending step
// abandoned by a stream torn down destroys it with the handler, never run, as Asio does with its own
// operations); complete() frees the state before the handler runs, so a handler that starts the next
// operation reuses memory, not adds to it.
#ifndef HEARTWHEEL_NET_DETAIL_LEAN_OP_HPP
#define HEARTWHEEL_NET_DETAIL_LEAN_OP_HPP

#include <heartwheel/asio.hpp>

#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

namespace heartwheel::net::detail {

/// Work held on a handler's executor that is not the operation's I/O executor.
struct held_work {
    virtual ~held_work() = default;
};
template <class Executor>
struct held_work_on final : held_work {
    explicit held_work_on(const Executor& e) : guard(asio::prefer(e, asio::execution::outstanding_work.tracked)) {}
    std::decay_t<decltype(asio::prefer(std::declval<const Executor&>(), asio::execution::outstanding_work.tracked))> guard;
};

template <class Impl, class Handler>
struct lean_state {
    Impl impl;
    Handler handler;
    std::unique_ptr<held_work> work = nullptr;
    bool* ended_in_initiation = nullptr; ///< set while the initiating call runs
};

template <class Impl, class Handler, class... Args>
class lean_self {
public:
    using state_type = lean_state<Impl, Handler>;
    explicit lean_self(std::unique_ptr<state_type> s) noexcept : s_(std::move(s)) {}
    lean_self(lean_self&&) noexcept = default;
    lean_self& operator=(lean_self&&) noexcept = default;

    /// The next step: the stream's completion, handed to the Impl with this handle.
    template <class... A>
    void operator()(A&&... a) {
        auto& impl = s_->impl;
        impl(*this, std::forward<A>(a)...);
    }

    /// Ends the operation: frees its state, then runs the application's handler with `args` on its
    /// executor (posted when still inside the initiating call).
    template <class... A>
    void complete(A&&... a) {
        std::unique_ptr<state_type> s = std::move(s_);
        const auto io = s->impl.get_executor();
        auto ex = asio::get_associated_executor(s->handler, io);
        bool* const inside = s->ended_in_initiation;
        auto work = std::move(s->work); // released once the handler has been handed on
        // The arguments are taken before the state goes (they may be the Impl's members).
        auto run = [h = std::move(s->handler), args = std::tuple<Args...>(std::forward<A>(a)...)]() mutable {
            std::apply(std::move(h), std::move(args));
        };
        s.reset();
        if (inside) {
            *inside = true;
            asio::post(ex, std::move(run));
        } else
            asio::dispatch(ex, std::move(run));
    }

private:
    std::unique_ptr<state_type> s_;
};

template <class Signature>
struct lean_initiation;
template <class... Args>
struct lean_initiation<void(Args...)> {
    template <class Handler, class Impl>
    void operator()(Handler&& h, Impl&& impl) const {
        using handler_type = std::decay_t<Handler>;
        using self_type = lean_self<std::decay_t<Impl>, handler_type, Args...>;
        auto s = std::make_unique<typename self_type::state_type>(
            typename self_type::state_type{std::forward<Impl>(impl), std::forward<Handler>(h)});
        const auto io = s->impl.get_executor();
        auto ex = asio::get_associated_executor(s->handler, io);
        if constexpr (std::is_same_v<decltype(ex), std::decay_t<decltype(io)>>) {
            if (!(ex == io)) s->work = std::make_unique<held_work_on<decltype(ex)>>(ex);
        } else
            s->work = std::make_unique<held_work_on<decltype(ex)>>(ex);
        bool ended = false;
        s->ended_in_initiation = &ended;
        auto* state = s.get();
        self_type self(std::move(s));
        self();
        if (!ended) state->ended_in_initiation = nullptr; // still pending: the state lives
    }
};

/// Starts `impl` as an operation completing with `Signature` through `token`.
template <class Signature, class Impl, class Token>
auto async_lean_op(Impl&& impl, Token&& token) {
    return asio::async_initiate<Token, Signature>(lean_initiation<Signature>{}, token, std::forward<Impl>(impl));
}

} // namespace heartwheel::net::detail

#endif
