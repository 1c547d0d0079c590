// heartwheel/net/policies/request_tracker.hpp — outstanding requests keyed by id, each with its own deadline.
//
// track() starts a request (state queued) with a completion token: void(error_code,
// request_state). mark_sent() records that it went out; complete() (a response arrived) cancels its
// timer in O(1) and completes it with no error; expiry completes it with errc::timed_out and says
// whether it was still queued or sent and unanswered; fail_all() completes every outstanding request
// at once (errc::connection_closed by default); close() does that for good: a request tracked after
// it completes at once with the same error, and no timer is filed for it. Completions are posted to
// the handler's associated executor (the tracker's executor by default), so they work with
// callbacks, futures and co_await alike, and never run inside a tracker call.
// No pending handler outlives its tracker or its wheel: destroying the tracker completes every
// request with errc::connection_closed, and a wheel that stops or is destroyed completes them with
// errc::wheel_stopped (each entry is a completion_node filed in the wheel; a request without
// a deadline is filed at the wheel's horizon, where it never fires). So a coroutine suspended in
// `co_await track(...)` is resumed or destroyed at teardown, never leaked. With counters, every
// request started, timed out or failed on close is counted.
#ifndef HEARTWHEEL_NET_REQUEST_TRACKER_HPP
#define HEARTWHEEL_NET_REQUEST_TRACKER_HPP

#include <heartwheel/completion_node.hpp>
#include <heartwheel/error.hpp>
#include <heartwheel/net/connection/errc.hpp>
#include <heartwheel/net/metrics/counters.hpp>
#include <heartwheel/net/policies/policies.hpp>
#include <heartwheel/timer_scheduler.hpp>

#include <heartwheel/asio.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>
#include <utility>

namespace heartwheel::net {

enum class request_state { queued, sent };

template <class Id = std::uint64_t>
class request_tracker {
public:
    using id_type = Id;

    request_tracker(timer_scheduler& svc, asio::any_io_executor ex, const request_policy& policy,
                    liveness_counters* counters = nullptr)
        : svc_(svc), ex_(std::move(ex)), policy_(policy), counters_(counters) {
        policy_.validate();
    }
    ~request_tracker() { fail_all(errc::connection_closed); }
    request_tracker(const request_tracker&) = delete;
    request_tracker& operator=(const request_tracker&) = delete;

    /// Tracks request `id` with the policy's timeout (0: no deadline).
    template <class Token>
    auto track(Id id, Token&& token) {
        return track(std::move(id), std::chrono::duration_cast<duration>(policy_.timeout), std::forward<Token>(token));
    }
    /// Tracks request `id` with its own timeout. A duplicate id completes with errc::duplicate_request,
    /// more than max_outstanding with heartwheel::errc::wheel_full.
    template <class Token>
    auto track(Id id, duration timeout, Token&& token) {
        return asio::async_initiate<Token, void(error_code, request_state)>(
            [this](auto handler, Id rid, duration t) {
                using entry_t = entry<std::decay_t<decltype(handler)>>;
                auto e = std::make_unique<entry_t>(*this, rid, std::move(handler), ex_);
                if (closed_) return e.release()->finish(closed_);
                if (entries_.size() >= policy_.max_outstanding) return e.release()->finish(heartwheel::errc::wheel_full);
                auto [it, inserted] = entries_.try_emplace(rid, e.get());
                if (!inserted) return e.release()->finish(errc::duplicate_request);
                // No deadline: filed at the horizon (never fires), so a stopping wheel still finds it.
                svc_.schedule(*e, t > duration::zero() ? svc_.deadline_after(t) : time_point::max());
                e.release();
                if (counters_) counters_->request_started();
            },
            token, std::move(id), timeout);
    }

    /// The request went out on the wire. Returns false for an unknown id.
    bool mark_sent(const Id& id) {
        auto it = entries_.find(id);
        if (it == entries_.end()) return false;
        it->second->state = request_state::sent;
        return true;
    }

    /// Its response arrived: O(1). Returns false for an unknown (or already timed out) id.
    bool complete(const Id& id) { return finish_one(id, {}); }

    /// Fails every outstanding request at once (the connection closed); returns how many.
    std::size_t fail_all(error_code ec = errc::connection_closed) {
        auto all = std::move(entries_);
        entries_.clear();
        if (counters_ && !all.empty() && ec == errc::connection_closed) counters_->requests_failed_on_close(all.size());
        for (auto& [id, e] : all) e->finish(ec);
        if (!all.empty() && on_idle_) std::exchange(on_idle_, nullptr)();
        return all.size();
    }

    /// Fails every outstanding request with `ec` and every later one at once (the connection
    /// closed); returns how many were outstanding.
    std::size_t close(error_code ec = errc::connection_closed) {
        closed_ = ec;
        return fail_all(ec);
    }

    std::size_t outstanding() const noexcept { return entries_.size(); }

    /// Calls `f` once, when the last outstanding request is done (answered, timed out or failed),
    /// just after its completion was posted: a connection asked to leave waits for this.
    void when_idle(std::function<void()> f) { on_idle_ = std::move(f); }

private:
    struct entry_base : heartwheel::completion_node {
        entry_base(request_tracker& t, Id i) : tracker(&t), id(std::move(i)) {}
        request_tracker* tracker;
        Id id;
        request_state state = request_state::queued;
        virtual void finish(error_code ec) = 0; // completes and deletes this entry
        void on_expire() override { tracker->expire(*this); }
        /// The wheel stopped: leave the tracker, then complete.
        void complete(error_code ec) override { tracker->finish_one(id, ec); }
    };

    template <class Handler>
    struct entry final : entry_base {
        entry(request_tracker& t, Id i, Handler h, const asio::any_io_executor& fallback)
            : entry_base(t, std::move(i)), handler(std::move(h)),
              work(asio::make_work_guard(asio::get_associated_executor(handler, fallback))) {}
        Handler handler;
        asio::executor_work_guard<asio::associated_executor_t<Handler, asio::any_io_executor>> work;

        void finish(error_code ec) override {
            std::unique_ptr<entry> self(this); // unlinks the timer node on destruction
            auto ex = work.get_executor();
            asio::post(ex, [h = std::move(handler), ec, s = this->state]() mutable { std::move(h)(ec, s); });
        }
    };

    bool finish_one(const Id& id, error_code ec) {
        auto it = entries_.find(id);
        if (it == entries_.end()) return false;
        entry_base* e = it->second;
        entries_.erase(it);
        e->finish(ec);
        if (entries_.empty() && on_idle_) std::exchange(on_idle_, nullptr)();
        return true;
    }

    void expire(entry_base& e) {
        if (counters_) counters_->request_timed_out();
        finish_one(e.id, errc::timed_out);
    }

    timer_scheduler& svc_;
    asio::any_io_executor ex_;
    request_policy policy_;
    liveness_counters* counters_;
    std::unordered_map<Id, entry_base*> entries_;
    error_code closed_; ///< set by close(): what a later track() completes with
    std::function<void()> on_idle_; ///< when_idle()'s, called once
};

} // namespace heartwheel::net

#endif
