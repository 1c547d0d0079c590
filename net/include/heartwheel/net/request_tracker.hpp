// heartwheel/net/request_tracker.hpp — outstanding requests keyed by id, each with its own deadline.
//
// track() starts a request (state queued) with a completion token: void(std::error_code,
// request_state). mark_sent() records that it went out; complete() (a response arrived) cancels its
// timer in O(1) and completes it with no error; expiry completes it with errc::timed_out and says
// whether it was still queued or sent and unanswered; fail_all() (the connection closed) completes
// every outstanding request at once with errc::connection_closed. Completions are posted to the
// handler's associated executor (the tracker's executor by default), so they work with callbacks,
// futures and co_await alike, and never run inside a tracker call.
#ifndef HEARTWHEEL_NET_REQUEST_TRACKER_HPP
#define HEARTWHEEL_NET_REQUEST_TRACKER_HPP

#include <heartwheel/error.hpp>
#include <heartwheel/net/policies.hpp>
#include <heartwheel/timer_service.hpp>

#include <asio/any_io_executor.hpp>
#include <asio/associated_executor.hpp>
#include <asio/async_result.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/post.hpp>

#include <cstdint>
#include <memory>
#include <unordered_map>

namespace heartwheel::net {

enum class request_state { queued, sent };

template <class Id = std::uint64_t>
class request_tracker {
public:
    using id_type = Id;
    using on_timeout_fn = std::function<void(const Id&, request_state)>;

    request_tracker(timer_service& svc, asio::any_io_executor ex, const request_policy& policy)
        : svc_(svc), ex_(std::move(ex)), policy_(policy) {
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
    /// more than max_outstanding with errc::wheel_full.
    template <class Token>
    auto track(Id id, duration timeout, Token&& token) {
        return asio::async_initiate<Token, void(std::error_code, request_state)>(
            [this](auto handler, Id rid, duration t) {
                using entry_t = entry<std::decay_t<decltype(handler)>>;
                auto e = std::make_unique<entry_t>(*this, rid, std::move(handler), ex_);
                if (entries_.size() >= policy_.max_outstanding) return e.release()->finish(errc::wheel_full);
                auto [it, inserted] = entries_.try_emplace(rid, e.get());
                if (!inserted) return e.release()->finish(errc::duplicate_request);
                if (t > duration::zero()) svc_.schedule(*e, svc_.deadline_after(t));
                e.release();
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

    /// Fails every outstanding request at once (the connection closed).
    void fail_all(std::error_code ec = errc::connection_closed) {
        auto all = std::move(entries_);
        entries_.clear();
        for (auto& [id, e] : all) e->finish(ec);
    }

    std::size_t outstanding() const noexcept { return entries_.size(); }
    void on_timeout(on_timeout_fn fn) { on_timeout_ = std::move(fn); }

private:
    struct entry_base : timer_node {
        entry_base(request_tracker& t, Id i) : tracker(&t), id(std::move(i)) {}
        request_tracker* tracker;
        Id id;
        request_state state = request_state::queued;
        virtual void finish(std::error_code ec) = 0; // completes and deletes this entry
        void on_expire() override { tracker->expire(*this); }
    };

    template <class Handler>
    struct entry final : entry_base {
        entry(request_tracker& t, Id i, Handler h, const asio::any_io_executor& fallback)
            : entry_base(t, std::move(i)), handler(std::move(h)),
              work(asio::make_work_guard(asio::get_associated_executor(handler, fallback))) {}
        Handler handler;
        asio::executor_work_guard<asio::associated_executor_t<Handler, asio::any_io_executor>> work;

        void finish(std::error_code ec) override {
            std::unique_ptr<entry> self(this); // unlinks the timer node on destruction
            auto ex = work.get_executor();
            asio::post(ex, [h = std::move(handler), ec, s = this->state]() mutable { std::move(h)(ec, s); });
        }
    };

    bool finish_one(const Id& id, std::error_code ec) {
        auto it = entries_.find(id);
        if (it == entries_.end()) return false;
        entry_base* e = it->second;
        entries_.erase(it);
        e->finish(ec);
        return true;
    }

    void expire(entry_base& e) {
        if (on_timeout_) on_timeout_(e.id, e.state);
        finish_one(e.id, errc::timed_out);
    }

    timer_service& svc_;
    asio::any_io_executor ex_;
    request_policy policy_;
    std::unordered_map<Id, entry_base*> entries_;
    on_timeout_fn on_timeout_;
};

} // namespace heartwheel::net

#endif
