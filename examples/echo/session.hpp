// session.hpp — one server connection, for any stream (tcp::socket or ssl::stream) and either
// liveness bundle. Reads lines up to --max-line bytes, answers PING, consumes PONG, echoes the rest.
// Bytes are split into lines by line_framer; every read that brings bytes proves liveness to the
// heartbeat (a peer trickling one long line is alive), while only data lines count as reader
// activity (PONG does not). Writes go through net's write_queue: replies are copied into one buffer
// and go out together (a flood of tiny lines is a few large writes, its memory is the bytes queued);
// above the queue's high-water mark the session stops reading until it drains below the low one, so
// memory per connection stays bounded and a peer that does not read is closed by the write timeout.
// close(reason) sends "BYE <reason>" and closes once it is written, or after a grace period,
// whichever comes first.
#ifndef HEARTWHEEL_ECHO_SESSION_HPP
#define HEARTWHEEL_ECHO_SESSION_HPP

#include "line_framer.hpp"
#include "liveness.hpp"
#include "protocol.hpp"

#include <asio/ssl/stream.hpp>

#include <heartwheel/net/write_queue.hpp>

#include <memory>
#include <string>

namespace echo {

template <class Stream>
struct is_tls : std::false_type {};
template <class S>
struct is_tls<asio::ssl::stream<S>> : std::true_type {};

template <class Stream, class Liveness>
class session final : public session_base, public std::enable_shared_from_this<session<Stream, Liveness>> {
public:
    session(worker& w, Stream stream)
        : w_(w), stream_(std::move(stream)),
          live_(w, {[this] { send("PING " + std::to_string(++ping_seq_)); },
                    [this](close_reason r) { close(r); }}),
          linger_(), framer_(w.options.max_line) {
        w_.sessions.insert(this);
        w_.counters.active.fetch_add(1, std::memory_order_relaxed);
    }
    ~session() override {
        w_.sessions.erase(this);
        w_.counters.active.fetch_sub(1, std::memory_order_relaxed);
        w_.session_gone();
    }

    void start() {
        if constexpr (is_tls<Stream>::value) {
            live_.handshake_started();
            stream_.async_handshake(asio::ssl::stream_base::server, [self = this->shared_from_this()](std::error_code ec) {
                if (self->closing_) return;
                if (ec) return self->abort();
                self->live_.handshake_done();
                self->read();
            });
        } else {
            read();
        }
    }

    void shutdown() override { close(close_reason::shutdown); }

private:
    // Handles the lines already buffered, then reads more unless the session closed or its write
    // queue is over the limit (resumed from on_written once the queue drains).
    void read() {
        if (closing_ || reading_ || !handle_lines()) return;
        reading_ = true;
        const std::span<char> space = framer_.prepare();
        stream_.async_read_some(asio::buffer(space.data(), space.size()),
                                [self = this->shared_from_this()](std::error_code ec, std::size_t n) {
                                    self->reading_ = false;
                                    self->on_read(ec, n);
                                });
    }

    void on_read(std::error_code ec, std::size_t n) {
        if (closing_) return;
        if (ec) {
            w_.live_counters.closed(ec == asio::error::eof ? close_reason::peer_closed : close_reason::io_error);
            return abort();
        }
        framer_.commit(n);
        live_.on_read(false); // any byte proves liveness; reader activity is judged per line
        read();
    }

    /// True when every complete line was handled and more bytes are wanted.
    bool handle_lines() {
        std::string_view line;
        while (!out_.above_high_water()) { // backpressure: stop while the peer does not read
            switch (framer_.next(line)) {
            case line_framer::status::need_more: return true;
            case line_framer::status::too_long: close(close_reason::line_too_long); return false;
            case line_framer::status::line: on_line(line); break;
            }
            if (closing_) return false;
        }
        return false;
    }

    void on_line(std::string_view line) {
        const parsed_line p = parse_line(line);
        live_.on_read(p.kind != line_kind::pong);
        w_.counters.lines.fetch_add(1, std::memory_order_relaxed);
        if (p.kind == line_kind::ping) {
            w_.counters.pings_answered.fetch_add(1, std::memory_order_relaxed);
            send("PONG " + std::string(p.arg));
        } else if (p.kind == line_kind::pong) {
            live_.on_pong();
        } else {
            send(line);
        }
    }

    void send(std::string_view line) {
        out_.append(line);
        out_.append('\n');
        if (!writing_) write();
    }

    // One write_some at a time over everything queued, so every partial write is reported as
    // progress: a slow but draining peer is never writer-idle, and the write timeout measures real
    // stalls.
    void write() {
        writing_ = true;
        live_.on_write_started();
        const std::string_view bytes = out_.next_bytes();
        stream_.async_write_some(asio::buffer(bytes.data(), bytes.size()),
                                 [self = this->shared_from_this()](std::error_code ec, std::size_t n) {
                                     self->on_written(ec, n);
                                 });
    }

    void on_written(std::error_code ec, std::size_t n) {
        writing_ = false;
        if (ec) {
            if (!closing_) w_.live_counters.closed(close_reason::io_error);
            return abort();
        }
        const bool write_done = out_.consumed(n);
        if (!closing_) {
            if (!write_done) live_.on_write_progress();
            else live_.on_write_complete(out_.empty());
        }
        if (!out_.empty()) return write();
        if (closing_) return abort(); // the BYE line is out
        if (out_.below_low_water()) read();
    }

    void close(close_reason r) {
        if (closing_) return;
        if (r == close_reason::line_too_long || r == close_reason::shutdown) w_.live_counters.closed(r);
        live_.close();
        if (r == close_reason::handshake_timeout || r == close_reason::write_timeout) {
            closing_ = true;
            return abort(); // nothing can be written
        }
        // Drop what was queued (but the rest of a write in flight); the BYE line goes next.
        out_.drop_pending();
        send("BYE " + std::string(heartwheel::net::to_string(r)));
        closing_ = true;
        linger_ = w_.wheel.schedule_after(std::chrono::seconds(1), [weak = this->weak_from_this()] {
            if (auto self = weak.lock()) self->abort(); // the peer does not take the BYE line
        });
    }

    void abort() {
        closing_ = true;
        live_.close();
        linger_.cancel();
        std::error_code ignored;
        stream_.lowest_layer().shutdown(asio::socket_base::shutdown_both, ignored);
        stream_.lowest_layer().close(ignored);
    }

    worker& w_;
    Stream stream_;
    Liveness live_;
    heartwheel::timer_handle linger_;
    line_framer framer_;
    heartwheel::net::write_queue out_;
    std::uint64_t ping_seq_ = 0;
    bool reading_ = false, writing_ = false, closing_ = false;
};

} // namespace echo

#endif
