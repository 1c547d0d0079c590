// heartwheel/net/connection/producer_budget.hpp — backpressure on the producer of a broadcast: a member whose
// messages fill other connections' queues is slowed, not its readers closed.
//
// Idea: a message made through a producer's budget (make_message) is one shared, immutable buffer that
// every recipient's queue holds (no copy per recipient); its cost (its size plus a per-message
// overhead) counts against the producer's budget from when it is made until the last queue holding
// it has written or dropped it. Over the budget, the producer stops reading its peer (async_wait,
// typically from the framing layer's read: heartwheel/beast/websocket.hpp): its TCP window closes and
// the peer slows to what the recipients take, where before its flood filled every reader's queue
// past the slow-consumer bound. The wait ends when the recipients have written the producer's
// messages down to half the budget.
//
// A recipient that does not read at all holds the producer's messages too; waiting for it without
// end would let one frozen peer stop a whole room while its own queue never grows enough to be judged
// slow. So a wait lasts at most max_wait: then the producer goes on with one more budget's worth
// (the frozen peer's queue grows to its slow-consumer bound and it is closed; healthy ones, which
// drain, never see it), and the allowance returns to one budget once the recipients have caught up.
//
// Threads: make_message, over, async_wait and cancel run on the producer's executor; the messages die
// on any recipient's thread: the count is atomic and a wake-up is posted to the waiter's executor.
// Invariants: at most one wait is pending; the waiter is taken (under the mutex) exactly once — by the
// wake-up, the max_wait timer or cancel; the state lives as long as the last of its messages.
// Memory: an unused budget is its limit and an empty pointer; the shared state is made by the first
// message, the timer node by the first wait.
#ifndef HEARTWHEEL_NET_PRODUCER_BUDGET_HPP
#define HEARTWHEEL_NET_PRODUCER_BUDGET_HPP

#include <heartwheel/asio.hpp>
#include <heartwheel/timer_handle.hpp>
#include <heartwheel/timer_scheduler.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

namespace heartwheel::net {

/// One message as every recipient of a broadcast holds it: made once, never copied, freed when the
/// last queue holding it has written it.
using shared_message = std::shared_ptr<const std::string>;

namespace detail {

struct budget_waiter {
    virtual ~budget_waiter() = default;
    virtual void complete(error_code ec) = 0; ///< posts the handler to its executor
};

template <class Handler, class Executor>
struct budget_waiter_for final : budget_waiter {
    budget_waiter_for(Handler&& h, const Executor& fallback) : handler(std::move(h)), io(fallback) {}
    void complete(error_code ec) override {
        const auto ex = asio::get_associated_executor(handler, io);
        asio::post(ex, [h = std::move(handler), ec]() mutable { std::move(h)(ec); });
    }
    Handler handler;
    Executor io;
};

struct budget_state {
    explicit budget_state(std::size_t resume_at) : resume(resume_at) {}
    std::atomic<std::size_t> outstanding{0};
    const std::size_t resume; ///< a wait ends at or below this (half the budget)
    std::atomic<bool> waiting{false};
    std::mutex mutex;
    std::unique_ptr<budget_waiter> waiter; ///< under mutex

    std::unique_ptr<budget_waiter> take() {
        const std::lock_guard<std::mutex> lock(mutex);
        waiting.store(false);
        return std::move(waiter);
    }
    void release(std::size_t cost) {
        // seq_cst on both sides (this decrement then `waiting`; the waiter sets `waiting` then reads
        // the count): one of the two sees the other, so a wake-up is never lost.
        if (outstanding.fetch_sub(cost) - cost <= resume && waiting.load())
            if (auto w = take()) w->complete({});
    }
};

struct counted_message {
    counted_message(std::string t, std::shared_ptr<budget_state> s, std::size_t c)
        : text(std::move(t)), state(std::move(s)), cost(c) {}
    ~counted_message() { state->release(cost); }
    counted_message(const counted_message&) = delete;
    counted_message& operator=(const counted_message&) = delete;
    std::string text;
    std::shared_ptr<budget_state> state;
    std::size_t cost;
};

} // namespace detail

class producer_budget {
public:
    /// No budget: make_message counts nothing and over() is always false.
    producer_budget() = default;
    /// `limit` bytes of messages alive at once (0: no budget); each message costs its size plus
    /// `overhead`; a wait lasts at most `max_wait`.
    producer_budget(std::size_t limit, std::size_t overhead, std::chrono::milliseconds max_wait) noexcept
        : limit_(limit), overhead_(overhead), max_wait_(max_wait) {}
    producer_budget(const producer_budget&) = delete; // its timer's callback points at it
    producer_budget& operator=(const producer_budget&) = delete;
    ~producer_budget() { cancel(); }

    /// A message counted against this budget until its last holder lets it go (one allocation).
    shared_message make_message(std::string text) {
        if (limit_ == 0) return std::make_shared<const std::string>(std::move(text));
        if (!state_) state_ = std::make_shared<detail::budget_state>(limit_ / 2);
        const std::size_t cost = text.size() + overhead_;
        state_->outstanding.fetch_add(cost);
        auto block = std::make_shared<detail::counted_message>(std::move(text), state_, cost);
        return shared_message(block, &block->text);
    }

    /// Whether the producer should wait before it reads (and so produces) more.
    bool over() noexcept {
        if (!state_) return false;
        const std::size_t now = state_->outstanding.load();
        if (now <= limit_ / 2) extra_ = 0; // caught up: the allowance a max_wait granted is spent
        return now > limit_ + extra_;
    }
    /// The bytes of this producer's messages some queue still holds.
    std::size_t outstanding() const noexcept { return state_ ? state_->outstanding.load() : 0; }
    std::size_t limit() const noexcept { return limit_; }

    /// Completes void(error_code) on the handler's executor (else `io`) once the recipients have
    /// written this producer's messages down to half the budget, or after max_wait (another budget's
    /// worth is granted); error::operation_aborted after cancel(). One wait at a time; the wait's timer
    /// goes on `timers`, the producer's wheel.
    template <class Executor, class Token>
    auto async_wait(timer_scheduler& timers, const Executor& io, Token&& token) {
        return asio::async_initiate<Token, void(error_code)>(
            [this, &timers, io](auto handler) {
                using waiter = detail::budget_waiter_for<decltype(handler), Executor>;
                auto w = std::make_unique<waiter>(std::move(handler), io);
                if (!state_) return w->complete({});
                {
                    const std::lock_guard<std::mutex> lock(state_->mutex);
                    state_->waiting.store(true);
                    if (state_->outstanding.load() > state_->resume) {
                        state_->waiter = std::move(w);
                    } else {
                        state_->waiting.store(false);
                    }
                }
                if (w) return w->complete({});
                arm(timers);
            },
            token);
    }

    /// A pending wait completes with error::operation_aborted (the producer is closing).
    void cancel() noexcept {
        timer_.cancel();
        if (!state_) return;
        if (auto w = state_->take()) w->complete(asio::error::operation_aborted);
    }
    /// A pending wait's handler is destroyed uncalled (its io_context is shutting down).
    void drop() noexcept {
        timer_.cancel();
        if (state_) state_->take().reset();
    }

private:
    void arm(timer_scheduler& timers) {
        if (!timer_)
            timer_ = heartwheel::timer_handle([this] {
                if (auto w = state_->take()) {
                    extra_ += limit_; // the recipients holding the rest are judged by their own bound
                    w->complete({});
                }
            });
        timers.schedule(timer_.node(), timers.deadline_after(std::chrono::duration_cast<duration>(max_wait_)));
    }

    std::size_t limit_ = 0, overhead_ = 0, extra_ = 0;
    std::chrono::milliseconds max_wait_{1000};
    std::shared_ptr<detail::budget_state> state_;
    heartwheel::timer_handle timer_;
};

} // namespace heartwheel::net

#endif
