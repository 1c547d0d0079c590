// heartwheel/net/connection/byte_output.hpp — a connection's output when the application speaks bytes (a line
// protocol, HTTP/1.1): the write queue, its bound and water marks, the goodbye's cork. It is the
// layer under the session's life (net::connection) that a framing layer replaces with its own
// (framed_output: a WebSocket stream writes its frames itself).
//
// It is a base of net::connection<Stream, Liveness, byte_output> (the default): its public members
// are the connection's — send(), writable(), can_read(), close_after_sent(), queued(). It reaches
// the connection it is a base of by a cast (CRTP: no pointer of its own), and the connection reaches
// it through the output contract, which every output meets:
//   output_closing()            the close began: what is not yet written goes, the bound stops;
//   output_before_last_words()  the goodbye is about to be queued;
//   output_busy()               part of the goodbye is not written yet (the FIN waits for it);
//   output_flush()              write what the last words queued;
//   queued()                    bytes not yet written (whether a completed write was the last).
// Once the goodbye's last byte is written the output calls the connection's half_close() (the FIN);
// a write error closes io-error without last words.
//
// Memory: the queue and its bound exist only while there is output — made at the first send (a block
// from the thread's cache), dropped once it is written and the bound is at rest. An idle connection's
// output is a pointer to the limits it shares with the connections made with equal options
// (detail/output_settings.hpp) and a null one: 16 bytes, not 88.
//
// Invariants: one write in flight at most; nothing is queued once the connection is closed, nor once
// it is closing except by its last words; the bound judges the queue after every append; what a close
// drops is never half a message (write_queue's chunk boundaries); the busy state exists while a write
// is in flight, bytes are queued or the bound is not at rest.
#ifndef HEARTWHEEL_NET_BYTE_OUTPUT_HPP
#define HEARTWHEEL_NET_BYTE_OUTPUT_HPP

#include <heartwheel/asio.hpp>
#include <heartwheel/net/connection/close_reason.hpp>
#include <heartwheel/net/connection/connection_context.hpp>
#include <heartwheel/net/connection/output_bound.hpp>
#include <heartwheel/net/connection/write_queue.hpp>
#include <heartwheel/net/detail/block_cache.hpp>
#include <heartwheel/net/detail/output_settings.hpp>

#include <cstddef>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace heartwheel::net {

template <class Connection>
class byte_output {
public:
    /// Queues one message and writes it as soon as possible, coalesced with whatever else is queued
    /// (never split from itself when a close drops what is not yet written). Ignored once the
    /// connection is closed (and, while closing, after the last words).
    ///
    /// Bounded by options.output, whoever the producer is (in a fan-out server, other connections):
    /// past hard_limit, or above soft_limit for soft_limit_time, the connection closes with
    /// slow-consumer — not inside this call (a broadcast loop stays valid): what was queued is
    /// dropped at once, later sends are ignored, and the close follows on the executor's next turn.
    /// Producers that can wait ask writable() first and resume on on_writable().
    ///
    /// Safe from any thread when the connection lives on a strand (the thread-pool model): called from
    /// outside that strand — a broadcast from another shard, a backend thread — it copies the message
    /// and posts the send to the strand, where sends from one caller keep their order.
    void send(std::string_view message) { send({message}); }
    /// Queues one message made of parts, e.g. send({line, "\n"}).
    void send(std::initializer_list<std::string_view> parts) { send_parts(parts.begin(), parts.size()); }
    /// Queues one message of `count` parts at `parts`, copied once into the queue (an HTTP response:
    /// its serializer's header and body buffers, not first gathered into a string).
    void send_parts(const std::string_view* parts, std::size_t count) {
        auto& c = self();
        if (c.away()) {
            std::string copy;
            for (std::size_t i = 0; i < count; ++i) copy.append(parts[i]);
            return c.post([m = std::move(copy)](Connection& posted) { posted.send(m); });
        }
        if (c.closed_ || ((c.closing_ || slow()) && !c.in_last_words_)) return;
        busy& b = state();
        b.out.append(parts, count);
        if (!c.in_last_words_ && b.bound.grew(b.out.queued(), c.live_.scheduler(), [this] { return soft_time_callback(); })) {
            b.out.drop_pending(); // the memory goes now, not after the close
            return c.post([](Connection& posted) { posted.close_slow_consumer(slow_bound::hard_limit); });
        }
        if (writing_) return;
        if (c.goodbye_now_applies()) return say_now(); // last words to a peer judged dead
        write();
    }
    /// Whether a producer may send now: no more than options.output.high_water queued (Netty's
    /// Channel.isWritable). After false, on_writable() runs once it drains to low_water.
    bool writable() const noexcept { return !busy_ || busy_->bound.writable(busy_->out.queued()); }
    /// Whether the application should read more now: open and the write queue not above its
    /// high-water mark. After a false for a full queue, on_writable runs once it drains below the
    /// low-water mark (backpressure: a peer that does not read stops being read).
    bool can_read() noexcept {
        if (self().closing_) return false;
        if (!writable()) {
            busy_->bound.held();
            return false;
        }
        return true;
    }
    /// Closes with `why` once everything queued so far is written — a response that ends the
    /// connection (HTTP's "Connection: close"), which close() would drop if it were still queued.
    /// Until then the connection is open; its last words, if any, follow that output. Posted from
    /// outside the connection's strand, as close() is.
    void close_after_sent(close_reason why) {
        auto& c = self();
        if (c.away()) return c.post([why](Connection& posted) { posted.close_after_sent(why); });
        if (c.closing_) return;
        if (!output_busy()) return c.close(why);
        close_after_sent_ = why;
    }
    /// Bytes not yet accepted by the kernel.
    std::size_t queued() const noexcept { return busy_ ? busy_->out.queued() : 0; }
    /// Bytes of heap the output holds for what it queued (its chunks' capacities).
    std::size_t output_memory() const noexcept { return busy_ ? busy_->out.memory() : 0; }
    /// Whether the output holds no state: nothing queued or being written, nothing owed to a
    /// producer, no soft-limit timer — an idle connection's output, its queue and bound not made.
    bool output_at_rest() const noexcept { return !busy_; }

protected:
    explicit byte_output(const connection_options& o) : settings_(detail::intern_output(o)) {}
    ~byte_output() = default;

    // --- the output contract (see the top of this file) ----------------------------------------------
    void output_closing() noexcept {
        if (!busy_) return;
        busy_->out.drop_pending(); // what was not yet written is not worth waiting for
        busy_->bound.stop();
    }
    void output_before_last_words() noexcept { self().hold_tail_for_fin(); } // send() writes at once when idle
    bool output_busy() const noexcept { return writing_ || queued() > 0; }
    void output_flush() {
        if (!writing_ && queued() > 0) write(); // else the write in flight finishes, then the rest goes
    }

private:
    Connection& self() noexcept { return static_cast<Connection&>(*this); }

    // The queue and its bound, while there is output (see the top of this file); its memory from a
    // per-thread cache of freed ones, as the write timeout's watch (a burst costs a pointer pop).
    struct busy {
        explicit busy(const detail::output_settings& s) noexcept
            : out(s.queue), bound(s.output, output_bound::validated{}) {}
        write_queue out;
        output_bound bound; ///< the slow-consumer bound and the water marks of out
        struct tag {};
        using cache = detail::block_cache<tag, 64>;
        static void* operator new(std::size_t size) { return cache::take(size); }
        static void operator delete(void* p) noexcept { cache::give(p); }
    };
    busy& state() {
        if (!busy_) busy_ = std::make_unique<busy>(*settings_);
        return *busy_;
    }
    bool slow() const noexcept { return busy_ && busy_->bound.slow(); }
    // Written and at rest: the state goes (the next send makes it again).
    void drop_state_if_idle() noexcept {
        if (busy_ && !writing_ && busy_->out.empty() && busy_->bound.at_rest()) busy_.reset();
    }

    // The output bound's soft limit ran out its time (output_bound::grew arms it).
    std::function<void()> soft_time_callback() {
        return [weak = self().weak_from_this()] {
            auto c = weak.lock();
            if (!c || !c->busy_) return;
            if (c->busy_->bound.soft_time_up(c->busy_->out.queued())) c->close_slow_consumer(slow_bound::soft_limit);
            else c->drop_state_if_idle();
        };
    }

    void write() {
        writing_ = true;
        const std::string_view bytes = busy_->out.next_bytes();
        self().stream().async_write_some(asio::buffer(bytes.data(), bytes.size()),
                                         [c = self().shared_from_this()](error_code ec, std::size_t n) {
                                             c->on_written(ec, n);
                                         });
    }

    // The last words to a peer judged dead (connection::goodbye_now_applies): what the socket takes
    // now, so the close that follows finds the output idle and goes on at once, the FIN with them.
    // What it does not take is dropped, and a stream cut short is not resumed: the FIN goes now, and
    // later last words are ignored (the connection is closed).
    void say_now() {
        bool cut = false;
        while (busy_ && !busy_->out.empty()) {
            const std::string_view bytes = busy_->out.next_bytes();
            cut = cut || !self().write_goodbye_now(asio::buffer(bytes.data(), bytes.size()));
            busy_->out.consumed(bytes.size()); // written, or lost with the peer
        }
        if (cut) self().half_close();
    }

    void on_written(error_code ec, std::size_t n) {
        auto& c = self();
        writing_ = false;
        if (ec) return c.abort(close_reason::io_error); // while closing: ends the close
        busy& b = *busy_;
        b.out.consumed(n);
        if (!b.out.empty()) return write();
        if (close_after_sent_ && !c.closing_) return c.begin_close(*close_after_sent_, true);
        if (c.closing_) return c.half_close(); // the last words are out
        const bool resume = b.bound.drained(0);
        drop_state_if_idle();
        if (!c.handler_) return;
        if (resume) c.handler_->on_writable();
        if (!busy_ && c.handler_) c.handler_->on_output_idle();
    }

    detail::output_settings_ref settings_; ///< the limits, shared
    std::unique_ptr<busy> busy_; ///< the queue and its bound, while there is output
    std::optional<close_reason> close_after_sent_; ///< close_after_sent(): closes once the queue is written
    bool writing_ = false;
};

} // namespace heartwheel::net

#endif
