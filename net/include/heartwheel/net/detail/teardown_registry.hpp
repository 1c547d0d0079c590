// heartwheel/net/detail/teardown_registry.hpp — the connections of one execution context, told when
// it shuts down.
//
// A session that owns its connection and is that connection's handler is a reference cycle, broken
// by the connection when it closes. An application that leaves with io.stop() never closes them, and
// the cycle would outlive the io_context (a leak LeakSanitizer reports). So each connection enters
// this Asio service of its executor's context; the context's shutdown (its destructor, before any
// pending operation is destroyed: this service is made after the sockets' own) tells every connection
// still registered to let go of its handler, and the cycle is gone with the pending operations.
//
// The registry also sees a context's population: when the last of many connections (trim_after
// since the last time) has gone, the memory they freed goes back to the system (glibc's malloc_trim:
// free() alone returns only the top of an arena, and a server after a load peak would keep it all).
// Once per such episode, on the last connection's executor once it is gone, with nobody left on it
// to delay.
//
// And it carries the admission of the listener that accepts into this context (admission.hpp), so
// that a connection is counted there without a pointer of its own: when it is made, and until its
// socket closes (connection_closed(), or its removal if it never closed).
//
// And it is how a server drains (net/server/drain.hpp): entries not yet asked to leave are in list_, those
// asked in asked_, so that each step of a drain takes the next few without a cursor; and how it
// closes what is left when it stops (close_connections): a server keeps no set of its own.
//
// Invariants: an entry is linked while registered (in list_ or asked_); count_ is the number linked; shutdown() unlinks each entry before calling it
// (so a connection destroyed by the call, or later, finds itself unlinked) and never calls out with
// the mutex held (the context may run on several threads).
#ifndef HEARTWHEEL_NET_DETAIL_TEARDOWN_REGISTRY_HPP
#define HEARTWHEEL_NET_DETAIL_TEARDOWN_REGISTRY_HPP

#include <heartwheel/net/connection/close_reason.hpp>
#include <heartwheel/net/server/admission.hpp>
#include <heartwheel/net/detail/freed_memory.hpp>
#include <heartwheel/net/detail/list_hook.hpp>

#include <heartwheel/asio.hpp>

#include <cstddef>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>


namespace heartwheel::net::detail {

class teardown_registry final : public asio::execution_context::service {
public:
    /// What a registered object does when its context shuts down, or drains.
    class entry : public list_hook {
    public:
        virtual void on_context_shutdown() noexcept = 0;
        /// A reference that keeps the entry's owner alive (null: it is being destroyed).
        virtual std::shared_ptr<void> keep() noexcept = 0;
        /// Asked to leave (a drain), from any thread: the owner's work is posted where it belongs,
        /// with `keep`, so that the owner is never released on the drain's thread.
        virtual void drain(std::shared_ptr<void> keep) = 0;
        /// Closed with `why` (a server's stop), from any thread: posted as drain() is.
        virtual void close_with(std::shared_ptr<void> keep, close_reason why) = 0;

    protected:
        ~entry() = default;
    };

    inline static asio::execution_context::id id;

    explicit teardown_registry(asio::execution_context& ctx) : asio::execution_context::service(ctx) {}

    /// The registry of `ex`'s execution context (made on first use).
    template <class Executor>
    static teardown_registry& of(const Executor& ex) {
        return asio::use_service<teardown_registry>(asio::query(ex, asio::execution::context));
    }

    /// Connections to have come and gone before the last one's leaving returns freed memory.
    static constexpr unsigned trim_after = 256;

    void add(entry& e) {
        const std::lock_guard<std::mutex> lock(mutex_);
        if (admission_) admission_->arrived();
        if (closed_) return;
        list_.push_back(e);
        ++count_;
        ++added_;
        if (since_trim_ < trim_after) ++since_trim_;
    }
    /// A registered connection's socket closed: its admission place is free.
    void connection_closed() noexcept {
        const std::lock_guard<std::mutex> lock(mutex_);
        if (admission_) admission_->left();
    }
    /// `ex`: where the trim runs, after the rest of the leaving session is freed. `still_open`: the
    /// connection never closed its socket (connection_closed() was not called for it).
    template <class Executor>
    void remove(entry& e, const Executor& ex, bool still_open) noexcept {
        bool trim = false;
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            if (still_open && admission_) admission_->left();
            if (e.linked()) {
                e.unlink();
                --count_;
            }
            if (count_ == 0 && since_trim_ >= trim_after && !closed_) {
                since_trim_ = 0;
                trim = true;
            }
        }
        if (trim) asio::post(ex, [] { return_freed_memory(); });
    }

    /// The admission the connections of this context count in from now on (a listener's, set as it
    /// accepts into the context; null: none). The same one again changes nothing.
    void attach(const std::shared_ptr<admission>& a) {
        const std::lock_guard<std::mutex> lock(mutex_);
        if (admission_ != a) admission_ = a;
    }
    std::shared_ptr<admission> admission_of() {
        const std::lock_guard<std::mutex> lock(mutex_);
        return admission_;
    }

    /// Registered entries (asked to leave or not).
    std::size_t size() {
        const std::lock_guard<std::mutex> lock(mutex_);
        return count_;
    }
    /// Entries ever registered (a drain counts those that arrive while it runs).
    std::size_t added() {
        const std::lock_guard<std::mutex> lock(mutex_);
        return added_;
    }
    /// Takes up to `n` entries not yet asked to leave, marks them asked, and returns them kept alive
    /// (a dying one is marked and skipped).
    std::vector<std::pair<std::shared_ptr<void>, entry*>> take_unasked(std::size_t n) {
        std::vector<std::pair<std::shared_ptr<void>, entry*>> out;
        const std::lock_guard<std::mutex> lock(mutex_);
        for (; n > 0 && !list_.empty(); --n) {
            auto* e = static_cast<entry*>(list_.front());
            e->unlink();
            asked_.push_back(*e);
            if (auto k = e->keep()) out.emplace_back(std::move(k), e);
        }
        return out;
    }

    /// Every entry, asked to leave or not, kept alive (a dying one skipped); all stay registered.
    std::vector<std::pair<std::shared_ptr<void>, entry*>> every() {
        std::vector<std::pair<std::shared_ptr<void>, entry*>> out;
        const std::lock_guard<std::mutex> lock(mutex_);
        out.reserve(count_);
        for (const list_head* l : {&list_, &asked_})
            for (list_hook* h = l->next; h != l; h = h->next) {
                auto* e = static_cast<entry*>(h);
                if (auto k = e->keep()) out.emplace_back(std::move(k), e);
            }
        return out;
    }

private:
    void shutdown() override {
        for (;;) {
            entry* e = nullptr;
            {
                const std::lock_guard<std::mutex> lock(mutex_);
                closed_ = true;
                list_.splice_back(asked_);
                if (list_.empty()) return;
                e = static_cast<entry*>(list_.front());
                e->unlink();
                --count_;
            }
            e->on_context_shutdown(); // may destroy the entry's owner
        }
    }

    std::mutex mutex_;
    list_head list_;  ///< not asked to leave
    list_head asked_; ///< asked to leave by a drain
    std::size_t count_ = 0;
    std::size_t added_ = 0;
    std::shared_ptr<admission> admission_;
    unsigned since_trim_ = 0; ///< connections added since the last trim (saturating at trim_after)
    bool closed_ = false;
};

} // namespace heartwheel::net::detail

#endif
