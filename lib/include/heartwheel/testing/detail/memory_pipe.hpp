// heartwheel/testing/detail/memory_pipe.hpp — what the two ends of a testing::memory_stream share: the
// bytes each end holds unread, its flags, its pending operations (type-erased: at most a read or wait
// for readability and a write or wait for writability per end), and the service of each end's
// execution context, which destroys the pending operations when that context shuts down, as Asio does
// a socket's. memory_stream.hpp says what the pipe models.
//
// Invariants: everything in a pipe is touched under its mutex; an operation completes (is posted)
// exactly once, or is destroyed unrun by the context's shutdown; a pipe registered with a service is
// in its list until the pipe goes or the service shuts down, whichever is first.
#ifndef HEARTWHEEL_TESTING_DETAIL_MEMORY_PIPE_HPP
#define HEARTWHEEL_TESTING_DETAIL_MEMORY_PIPE_HPP

#include <heartwheel/asio.hpp>

#include <algorithm>
#include <cstddef>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace heartwheel::testing {

namespace detail {

/// A pending operation, its handler and buffers type-erased: the pipe keeps at most two per end.
struct memory_op {
    virtual ~memory_op() = default;
    /// A read's: moves what its buffers take from the front of `bytes`. A write's: appends at most
    /// `room` of its bytes to `bytes`. A wait moves nothing. Returns the bytes moved.
    virtual std::size_t transfer(std::string& bytes, std::size_t room) = 0;
    /// Posts the handler with the outcome (a wait's handler gets the error alone).
    virtual void complete(error_code ec, std::size_t n) = 0;
};

enum class op_kind { read, write, wait };

/// Appends at most `room` bytes of `buffers` to `to`; returns how many.
template <class ConstBuffers>
std::size_t append_up_to(const ConstBuffers& buffers, std::string& to, std::size_t room) {
    std::size_t n = 0;
    for (auto it = asio::buffer_sequence_begin(buffers); it != asio::buffer_sequence_end(buffers) && n < room; ++it) {
        const asio::const_buffer b(*it);
        const std::size_t k = std::min(b.size(), room - n);
        to.append(static_cast<const char*>(b.data()), k);
        n += k;
    }
    return n;
}

/// The throwing overloads' end: `value`, or the error as a system_error.
template <class T>
T or_throw(const error_code& ec, T value, const char* what) {
    if (ec) throw system_error(ec, what);
    return value;
}

template <op_kind Kind, class Buffers, class Handler, class Executor>
class memory_op_impl final : public memory_op {
public:
    memory_op_impl(const Buffers& b, Handler&& h, const Executor& ex)
        : buffers_(b), work_(asio::make_work_guard(h, ex)), handler_(std::move(h)) {}

    std::size_t transfer(std::string& bytes, std::size_t room) override {
        if constexpr (Kind == op_kind::read) {
            const std::size_t n = asio::buffer_copy(buffers_, asio::buffer(bytes));
            bytes.erase(0, n);
            return n;
        } else if constexpr (Kind == op_kind::write) {
            return append_up_to(buffers_, bytes, room);
        } else {
            return 0;
        }
    }
    void complete(error_code ec, std::size_t n) override {
        auto ex = work_.get_executor();
        if constexpr (Kind == op_kind::wait)
            asio::post(ex, [h = std::move(handler_), ec]() mutable { std::move(h)(ec); });
        else
            asio::post(ex, [h = std::move(handler_), ec, n]() mutable { std::move(h)(ec, n); });
        work_.reset();
    }

private:
    Buffers buffers_;
    decltype(asio::make_work_guard(std::declval<Handler&>(), std::declval<const Executor&>())) work_;
    Handler handler_;
};

struct memory_pipe;

/// What a socket's pending operations get from its io_context's shutdown: they are destroyed, not
/// run, so that a handler holding its own stream's owner (a session's shared_ptr) is let go. The
/// pipes are registered with the service of each end's execution context.
class memory_pipe_service final : public asio::execution_context::service {
public:
    inline static asio::execution_context::id id;
    explicit memory_pipe_service(asio::execution_context& ctx) : asio::execution_context::service(ctx) {}
    template <class Executor>
    static memory_pipe_service& of(const Executor& ex) {
        return asio::use_service<memory_pipe_service>(asio::query(ex, asio::execution::context));
    }
    /// False once the context is shut down (the pipe is then on its own).
    bool add(memory_pipe* p) {
        const std::lock_guard<std::mutex> lock(mutex_);
        if (closed_) return false;
        pipes_.push_back(p);
        return true;
    }
    void remove(memory_pipe* p) noexcept {
        const std::lock_guard<std::mutex> lock(mutex_);
        pipes_.erase(std::remove(pipes_.begin(), pipes_.end(), p), pipes_.end());
    }

private:
    void shutdown() override;
    std::mutex mutex_;
    std::vector<memory_pipe*> pipes_;
    bool closed_ = false;
};

/// The pipe both ends share. side[i] is what end i holds: the bytes written to it, its flags, its
/// pending operations.
struct memory_pipe {
    struct side {
        std::string inbound;                                    ///< written by the peer, not yet read
        std::size_t capacity = std::numeric_limits<std::size_t>::max();
        bool open = true;          ///< this end is not closed
        bool end_of_input = false; ///< the peer shut its sending side (or closed): eof after `inbound`
        bool send_shut = false;    ///< this end shut its sending side
        bool peer_gone = false;    ///< the peer closed: writes fail connection_reset
        std::unique_ptr<memory_op> reader; ///< a read, or a wait for readability
        bool reader_waits = false;
        std::unique_ptr<memory_op> writer; ///< a write, or a wait for writability
        bool writer_waits = false;
        std::size_t room() const noexcept { return inbound.size() >= capacity ? 0 : capacity - inbound.size(); }
    };
    std::mutex mutex;
    side sides[2];
    memory_pipe_service* services[2] = {nullptr, nullptr}; ///< each end's context's (null: none, or shut down)

    memory_pipe() = default;
    memory_pipe(const memory_pipe&) = delete;
    memory_pipe& operator=(const memory_pipe&) = delete;
    ~memory_pipe() {
        for (auto* s : services)
            if (s) s->remove(this);
    }
    void register_with(memory_pipe_service& a, memory_pipe_service& b) {
        if (a.add(this)) services[0] = &a;
        if (&b != &a && b.add(this)) services[1] = &b;
    }

    static void finish(std::unique_ptr<memory_op>& op, error_code ec, std::size_t n = 0) {
        if (!op) return;
        auto o = std::move(op);
        o->complete(ec, n);
    }
    /// End `i`'s pending read or wait, if it can complete now.
    void wake_reader(int i) {
        side& s = sides[i];
        if (!s.reader) return;
        if (!s.inbound.empty()) {
            const std::size_t n = s.reader_waits ? 0 : s.reader->transfer(s.inbound, 0);
            finish(s.reader, {}, n);
            if (n > 0) wake_writer(1 - i); // room made for the peer's waiting write
        } else if (s.end_of_input) {
            finish(s.reader, s.reader_waits ? error_code() : error_code(asio::error::eof));
        }
    }
    /// End `i`'s pending write or wait, if it can complete now.
    void wake_writer(int i) {
        side& s = sides[i];
        if (!s.writer) return;
        side& peer = sides[1 - i];
        if (s.peer_gone) return finish(s.writer, asio::error::connection_reset);
        const std::size_t room = peer.room();
        if (room == 0) return;
        const std::size_t n = s.writer_waits ? 0 : s.writer->transfer(peer.inbound, room);
        finish(s.writer, {}, n);
        if (n > 0) wake_reader(1 - i);
    }
};

inline void memory_pipe_service::shutdown() {
    std::vector<std::unique_ptr<memory_op>> dropped;
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        closed_ = true;
        for (memory_pipe* p : pipes_) {
            const std::lock_guard<std::mutex> pipe_lock(p->mutex);
            for (auto*& s : p->services)
                if (s == this) s = nullptr;
            for (auto& side : p->sides) {
                if (side.reader) dropped.push_back(std::move(side.reader));
                if (side.writer) dropped.push_back(std::move(side.writer));
            }
        }
        pipes_.clear();
    }
    dropped.clear(); // outside the locks: a handler may own its stream, and so the pipe
}

} // namespace detail

} // namespace heartwheel::testing

#endif
