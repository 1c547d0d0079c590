// client.cpp — one client_connection per slot: connect (with a connect timeout), then a link on a
// heartwheel::net::connection (TLS handshake under its deadline, the client's own liveness policies:
// reader idle and heartbeats detect a server that stopped answering), request sending, line
// handling, and the reconnect loop driven by heartwheel::net::reconnector.
#include "client.hpp"

#include "protocol.hpp"

#include <heartwheel/net/connection/connect.hpp>
#include <heartwheel/net/connection/connection.hpp>
#include <heartwheel/net/tls/ssl_stream.hpp>
#include <heartwheel/net/policies/reconnector.hpp>
#include <heartwheel/net/policies/request_tracker.hpp>

#include <asio/ssl/error.hpp>

#include <asio/connect.hpp>
#include <asio/post.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read_until.hpp>
#include <asio/ssl/host_name_verification.hpp>
#include <asio/ssl/stream.hpp>
#include <asio/write.hpp>

#include <algorithm>
#include <netinet/in.h>
#include <charconv>
#include <iostream>
#include <sstream>

namespace echo {

void client_stats::add_rtt(std::uint32_t us) {
    constexpr std::size_t cap = 1 << 22;
    ++rtt_seen;
    if (rtt_us.size() < cap) {
        rtt_us.push_back(us);
        return;
    }
    const auto j = std::uniform_int_distribution<std::uint64_t>(0, rtt_seen - 1)(sampler);
    if (j < cap) rtt_us[j] = us;
}

void client_stats::count_bye(std::string_view reason) {
    std::string key(reason.substr(0, 64));
    for (auto& ch : key) // the summary is JSON: no quotes, backslashes or control bytes in a key
        if (ch == '"' || ch == '\\' || static_cast<unsigned char>(ch) < 0x20) ch = '?';
    if (closed_by_server.size() >= max_reasons && closed_by_server.count(key) == 0) key = "(other)";
    ++closed_by_server[key];
}

std::string client_stats::json() const {
    auto pct = [this](double p) -> double {
        if (rtt_us.empty()) return 0.0;
        std::vector<std::uint32_t> v(rtt_us);
        const auto k = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1));
        std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
        return v[k] / 1000.0;
    };
    const double max = rtt_us.empty() ? 0.0 : *std::max_element(rtt_us.begin(), rtt_us.end()) / 1000.0;
    std::ostringstream os;
    os << "{\"connects\":" << connects << ",\"connect_failures\":" << connect_failures << ",\"reconnects\":" << reconnects
       << ",\"disconnects\":" << disconnects << ",\"requests\":" << requests << ",\"responses\":" << responses
       << ",\"timeouts\":" << timeouts << ",\"failed_on_close\":" << failed_on_close << ",\"retried\":" << retried << ",\"unanswered_at_exit\":" << unanswered_at_exit << ",\"protocol_errors\":" << protocol_errors << ",\"pings_received\":" << pings_received << ",\"pongs_sent\":" << pongs_sent
       << ",\"closed_by_server\":{";
    bool first = true;
    for (const auto& [reason, n] : closed_by_server) {
        os << (first ? "" : ",") << '"' << reason << "\":" << n;
        first = false;
    }
    os << "},\"closed_by_liveness\":{";
    first = true;
    for (const auto& [reason, n] : closed_by_liveness) {
        os << (first ? "" : ",") << '"' << reason << "\":" << n;
        first = false;
    }
    os << "},\"rtt_ms\":{\"p50\":" << pct(0.50) << ",\"p99\":" << pct(0.99) << ",\"max\":" << max << '}';
    if (timeline_ms > 0) {
        os << ",\"timeline\":{\"bin_ms\":" << timeline_ms << ",\"established\":[";
        for (std::size_t i = 0; i < established.size(); ++i) os << (i ? "," : "") << established[i];
        os << "]}";
    }
    os << '}';
    return os.str();
}

// One connected link of a slot: a net::connection (TCP or TLS) with the client's liveness policies,
// its read loop, and the protocol's sending. A slot makes a new link per connection attempt.
class link_base {
public:
    virtual ~link_base() = default;
    virtual void send(std::string_view line) = 0;
    virtual bool full() = 0; ///< the write queue is above its high-water mark
    virtual bool closing() = 0; ///< closing (the server said BYE, or the client leaves): nothing more goes out
    virtual void close() = 0;
    /// Closes for the client's own reason: FIN now, the link ends when the server's FIN comes or
    /// after a second.
    virtual void close_for(heartwheel::net::close_reason why) = 0;
    virtual heartwheel::net::connection_liveness& liveness() = 0;
};

class client_connection : public std::enable_shared_from_this<client_connection> {
public:
    using tcp = asio::ip::tcp;
    using tls_stream = asio::ssl::stream<tcp::socket>;

    client_connection(load_client& c, std::size_t index)
        : c_(c), index_(index),
          reconnector_(c.wheel(), c.options().live.backoff, [this] { attempt(); }, {}, &c.counters()),
          requests_(c.wheel(), c.io().get_executor(), c.options().live.request, &c.counters()) {
        if (c.options().verbose)
            reconnector_.on_wait([this](std::chrono::milliseconds delay, unsigned failures) {
                log() << "reconnecting in " << delay.count() << " ms (failure " << failures << ")" << std::endl;
            });
    }

    void start() { reconnector_.start(); }
    /// Requests sent and not yet answered, failed or timed out (and those waiting to be sent again).
    std::size_t outstanding() const noexcept { return requests_.outstanding() + unsent_retries_; }
    void stop() {
        reconnector_.stop();
        sender_.cancel();
        drop_link();
        if (socket_) { // closed, not destroyed: a pending connect still refers to it until it completes
            std::error_code ignored;
            socket_->close(ignored);
        }
    }

    // --- called by the link --------------------------------------------------------------------------
    void handle(std::string_view line);
    /// The link closed (for any reason; counted by its connection).
    void link_closed(const link_base* which, heartwheel::net::close_reason why) {
        if (which != link_.get()) return;
        using heartwheel::net::close_reason;
        const bool ours = why != close_reason::peer_closed && why != close_reason::io_error && why != close_reason::shutdown &&
                          why != close_reason::handshake_failed; // our policies', or the client's own reasons
        if (ours) {
            ++c_.stats().closed_by_liveness[heartwheel::net::to_string(why)];
            if (c_.options().verbose) log() << "closed: " << heartwheel::net::to_string(why) << std::endl;
        }
        disconnected();
    }
    std::uint64_t next_ping() { return ++ping_seq_; }
    load_client& client() { return c_; }

private:
    std::ostream& log() { return std::cerr << "client " << index_ << ": "; }

    void attempt() {
        if (c_.stopping()) return;
        ++generation_;
        drop_link();
        socket_.emplace(c_.io());
        const auto& ep = c_.options().connect;
        std::error_code ec;
        const auto address = asio::ip::make_address(ep.host == "localhost" ? "127.0.0.1" : ep.host, ec);
        if (ec) return failed_to_connect();
        if (!c_.options().sources.empty() && !bind_source(address)) return failed_to_connect();
        const auto timeout = c_.options().reconnect ? reconnector_.connect_timeout() : std::chrono::milliseconds(10000);
        heartwheel::net::async_connect(*socket_, tcp::endpoint(address, ep.port), c_.wheel(), timeout,
                                       [self = shared_from_this(), g = generation_](std::error_code e) {
            if (g != self->generation_) return;
            if (e) return self->failed_to_connect(); // refused, unreachable, or the deadline (errc::timed_out)
            std::error_code ignored;
            self->socket_->set_option(tcp::no_delay(true), ignored);
            tcp::socket sock = std::move(*self->socket_);
            self->socket_.reset();
            if (self->c_.tls()) self->make_link<tls_stream>(tls_stream(std::move(sock), *self->c_.tls()));
            else self->make_link<tcp::socket>(std::move(sock));
        });
    }

    template <class Stream>
    void make_link(Stream stream);

    // --source: this slot's local address (round robin). The port is left to connect()
    // (IP_BIND_ADDRESS_NO_PORT), so each source address has the whole ephemeral range per server.
    bool bind_source(const asio::ip::address& to) {
        const auto& sources = c_.options().sources;
        std::error_code ec;
        const auto from = asio::ip::make_address(sources[index_ % sources.size()], ec);
        if (ec || from.is_v4() != to.is_v4()) return false;
        socket_->open(from.is_v4() ? tcp::v4() : tcp::v6(), ec);
#if defined(IP_BIND_ADDRESS_NO_PORT)
        if (!ec) socket_->set_option(asio::detail::socket_option::boolean<IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT>(true), ec);
#endif
        if (!ec) socket_->bind(tcp::endpoint(from, 0), ec);
        return !ec;
    }

    void failed_to_connect() {
        ++generation_;
        ++c_.stats().connect_failures;
        first_done(false);
        if (c_.options().verbose) log() << "connect failed" << std::endl;
        drop_link();
        if (socket_) {
            std::error_code ignored;
            socket_->close(ignored);
        }
        if (c_.options().reconnect && !c_.stopping()) reconnector_.failed();
    }

    void connected() {
        auto& s = c_.stats();
        if (ever_connected_) ++s.reconnects;
        ever_connected_ = true;
        ++s.connects;
        first_done(true);
        consecutive_timeouts_ = 0; // a new link starts its own count
        if (c_.options().verbose) log() << "connected" << std::endl;
        open_ = true;
        reconnector_.connected();
        if (c_.options().send_interval_ms > 0) {
            sender_ = c_.wheel().schedule_every(std::chrono::milliseconds(c_.options().send_interval_ms),
                                                [this] { send_request(); }, heartwheel::missed_tick::skip);
        }
        // What a draining server left unprocessed goes out again first (not counted twice as requests).
        for (; unsent_retries_ > 0 && send_request(true); --unsent_retries_) {}
    }

    /// The server sent its first bytes: it is alive, not just its kernel (the backoff's stability
    /// is timed from here).
    void proven() { reconnector_.proven(); }

    /// A server that takes requests and answers none (garbage, or nothing) is left after this many
    /// in a row, and connected to again (with --reconnect yes).
    static constexpr unsigned max_consecutive_timeouts = 3;
    void request_timed_out() {
        if (++consecutive_timeouts_ < max_consecutive_timeouts || !link_) return;
        consecutive_timeouts_ = 0;
        if (c_.options().verbose) log() << "closing: " << max_consecutive_timeouts << " requests in a row timed out" << std::endl;
        link_->close_for(heartwheel::net::define_close_reason("request-timeouts"));
    }
    static heartwheel::net::close_reason server_said_bye() { return heartwheel::net::define_close_reason("server-bye"); }
    static heartwheel::net::close_reason protocol_error() { return heartwheel::net::define_close_reason("protocol-error"); }

    /// `retry`: one a draining server left unprocessed, sent again (counted once, as a request already).
    bool send_request(bool retry = false) {
        // Nothing is sent on a link that is closing: a request the sender's timer made between a BYE
        // and the end of the link would never be processed, nor sent again (it failed on the close).
        if (!open_ || !link_ || link_->closing() || link_->full()) return false;
        auto& s = c_.stats();
        const std::uint64_t id = (static_cast<std::uint64_t>(index_) << 32) | ++seq_;
        std::string line = "REQ " + std::to_string(id) + ' ' + std::to_string(heartwheel::clock::now().time_since_epoch().count()) + ' ';
        if (line.size() < c_.options().payload) line.append(c_.options().payload - line.size(), 'x');
        if (!retry) ++s.requests;
        // The completion is posted, so it may run after this connection is gone (the client's
        // destructor drains them): it holds only what the client owns, never `this`.
        requests_.track(id, [&s, verbose = c_.options().verbose, index = index_, weak = weak_from_this()](
                                std::error_code ec, heartwheel::net::request_state) {
            if (ec == heartwheel::net::errc::connection_closed) ++s.failed_on_close;
            if (ec == asio::error::operation_aborted) ++s.retried; // unprocessed: sent again (see handle)
            if (ec != heartwheel::net::errc::timed_out) return;
            ++s.timeouts;
            if (verbose) std::cerr << "client " << index << ": request timed out" << std::endl;
            if (auto self = weak.lock()) self->request_timed_out();
        });
        requests_.mark_sent(id);
        link_->send(line);
        return true;
    }

    void disconnected() {
        const bool was_open = open_;
        open_ = false;
        sender_.cancel();
        requests_.fail_all(heartwheel::net::errc::connection_closed);
        drop_link();
        if (!was_open) { // closed during its handshake: a failed attempt
            ++c_.stats().connect_failures;
            first_done(false);
            if (c_.options().reconnect && !c_.stopping()) reconnector_.failed();
            return;
        }
        ++c_.stats().disconnects;
        if (c_.options().reconnect && !c_.stopping()) reconnector_.disconnected();
    }

    void first_done(bool established) {
        if (!std::exchange(first_done_, true)) c_.first_attempt_done(established);
    }

    void drop_link() {
        open_ = false;
        if (auto l = std::move(link_)) l->close();
    }

    template <class Stream>
    friend class link;

    load_client& c_;
    std::size_t index_;
    heartwheel::net::reconnector reconnector_;
    heartwheel::net::request_tracker<std::uint64_t> requests_;
    std::optional<tcp::socket> socket_; ///< while connecting
    std::shared_ptr<link_base> link_;
    heartwheel::timer_handle sender_;
    std::uint64_t seq_ = 0, generation_ = 0, ping_seq_ = 0;
    unsigned consecutive_timeouts_ = 0;
    std::size_t unsent_retries_ = 0; ///< requests a draining server left unprocessed, to send on the next link
    bool open_ = false, ever_connected_ = false, first_done_ = false;
};

template <class Stream>
class link final : public link_base, public std::enable_shared_from_this<link<Stream>> {
public:
    using connection_type = heartwheel::net::connection<Stream>;

    link(std::shared_ptr<client_connection> owner, Stream stream) : owner_(std::move(owner)) {
        load_client& c = owner_->client();
        heartwheel::net::connection_hooks hooks;
        auto* self = this; // the hooks never outlive the connection, which this link owns
        hooks.send_ping = [self] { self->send("PING " + std::to_string(self->owner_->next_ping())); };
        hooks.on_close = [self](heartwheel::net::close_reason r) { self->owner_->link_closed(self, r); };
        hooks.on_writable = [self] { // the server reads again: so do we
            if (std::exchange(self->paused_, false)) self->read();
        };
        conn_ = std::make_shared<connection_type>(std::move(stream), c.context());
        conn_->set_hooks(std::move(hooks)); // keepalive: set from the context when made
    }
    ~link() override { close(); }

    template <class Connected>
    void start(Connected on_connected) {
        if constexpr (connection_type::is_tls) {
            auto& o = owner_->client().options();
            if (!o.insecure)
                conn_->stream().next_layer().set_verify_callback(asio::ssl::host_name_verification(o.connect.host));
            conn_->async_handshake(asio::ssl::stream_base::client,
                                   [weak = this->weak_from_this(), on_connected](std::error_code ec) mutable {
                                       auto self = weak.lock();
                                       if (!self || ec) return; // a failure closed (and counted) it
                                       on_connected();
                                       self->read();
                                   });
        } else {
            on_connected();
            read();
        }
    }

    void send(std::string_view line) override { conn_->send({line, "\n"}); }
    bool full() override { return !conn_->can_read() && !conn_->closing(); }
    bool closing() override { return conn_->closing(); }
    void close() override {
        if (conn_) conn_->abort(heartwheel::net::close_reason::shutdown);
    }
    void close_for(heartwheel::net::close_reason why) override { conn_->close(why); }
    heartwheel::net::connection_liveness& liveness() override { return conn_->liveness(); }

private:
    // The read holds the link: its buffer (in_) must outlive the operation, which ends when the
    // connection closes.
    void read() {
        // A line longer than any echo of ours (payload + its header) is not the protocol: the read
        // fails and the link closes, instead of buffering a hostile server's endless line.
        const std::size_t longest = std::max<std::size_t>(owner_->client().options().payload * 2, 4096) + 64;
        asio::async_read_until(conn_->stream(), asio::dynamic_buffer(in_, longest), '\n',
                               [self = this->shared_from_this()](std::error_code ec, std::size_t n) {
                                   if (ec) return self->conn_->read_failed(ec);
                                   const std::string line = self->in_.substr(0, n - 1);
                                   self->in_.erase(0, n);
                                   self->owner_->handle(line); // may close this link
                                   if (self->conn_->closing()) return;
                                   // Backpressure, as the server has it: a server that sends (PINGs, say)
                                   // and never reads our answers is not read either, and its write
                                   // timeout closes it (on_writable resumes a server that drains).
                                   if (self->conn_->can_read()) self->read();
                                   else self->paused_ = true;
                               });
    }

    std::shared_ptr<client_connection> owner_;
    std::shared_ptr<connection_type> conn_;
    std::string in_;
    bool paused_ = false; ///< reading stopped for backpressure; on_writable resumes it
};

template <class Stream>
void client_connection::make_link(Stream stream) {
    auto l = std::make_shared<link<Stream>>(shared_from_this(), std::move(stream));
    link_ = l;
    l->start([self = shared_from_this(), g = generation_] {
        if (g == self->generation_) self->connected();
    });
}

void client_connection::handle(std::string_view line) {
    auto& s = c_.stats();
    proven();
    const auto p = parse_line(line);
    if (p.kind == line_kind::ping) {
        ++s.pings_received;
        if (c_.options().answer_pings && link_) {
            ++s.pongs_sent;
            link_->send("PONG " + std::string(p.arg));
        }
    } else if (p.kind == line_kind::pong) {
        if (link_) link_->liveness().on_pong(); // the answer to our own ping
    } else if (p.kind == line_kind::bye) {
        s.count_bye(p.arg.substr(0, p.arg.find(' '))); // the reason, without its argument
        if (c_.options().verbose) log() << "server said BYE " << p.arg << std::endl;
        // "BYE draining <ms>": come back at a random moment within the server's window, not at once
        // and not by the failure backoff (the fleet's clients spread their reconnects over it).
        if (p.arg.rfind("draining ", 0) == 0) {
            std::uint64_t ms = 0;
            const auto digits = p.arg.substr(9);
            if (std::from_chars(digits.data(), digits.data() + digits.size(), ms).ec == std::errc() && ms <= 3'600'000)
                reconnector_.leaving(std::chrono::milliseconds(ms));
            // The server answers in order and reads nothing after its BYE: what is still outstanding
            // was never processed, so it is sent again on the next connection instead of failing.
            unsent_retries_ += requests_.fail_all(asio::error::operation_aborted);
        }
        if (link_) link_->close_for(server_said_bye()); // the server is closing: do not wait for it
    } else if (line.rfind("REQ ", 0) == 0) {
        std::uint64_t id = 0;
        std::int64_t sent_ns = 0;
        const char* b = line.data() + 4;
        const char* e = line.data() + line.size();
        auto r1 = std::from_chars(b, e, id);
        if (r1.ec != std::errc{} || r1.ptr == e) return;
        auto r2 = std::from_chars(r1.ptr + 1, e, sent_ns);
        if (r2.ec != std::errc{}) return;
        if (!requests_.complete(id)) return; // already timed out
        consecutive_timeouts_ = 0;
        ++s.responses;
        const auto rtt = heartwheel::clock::now().time_since_epoch().count() - sent_ns;
        s.add_rtt(static_cast<std::uint32_t>(std::clamp<std::int64_t>(rtt / 1000, 0, 0xffffffff)));
    } else if (link_) { // not this protocol: a confused or hostile server; connect again (if asked to)
        ++s.protocol_errors;
        if (c_.options().verbose) log() << "protocol error: unexpected line from the server" << std::endl;
        link_->close_for(protocol_error());
    }
}

load_client::load_client(const client_options& options)
    : options_(options), wheel_(io_.get_executor()), context_(wheel_, options_.live, &counters_) {
    if (options_.tls) {
        tls_.emplace(asio::ssl::context::tls_client);
        if (options_.insecure) {
            tls_->set_verify_mode(asio::ssl::verify_none);
        } else {
            std::error_code ec;
            tls_->load_verify_file(options_.ca, ec);
            if (ec) throw std::runtime_error("cannot load --ca " + options_.ca + ": " + ec.message());
            tls_->set_verify_mode(asio::ssl::verify_peer);
        }
    }
}

load_client::~load_client() {
    stopping_ = true;
    for (auto& c : connections_) c->stop();
    connections_.clear();
    staggered_starts_.clear();
    // The aborted operations complete now, releasing the links and connections they hold while the
    // wheel and the counters they report to still exist.
    io_.restart();
    io_.poll();
}

void load_client::first_attempt_done(bool established) {
    if (established && stats_.timeline_ms > 0) {
        const auto bin = static_cast<std::size_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                                      heartwheel::clock::now() - start_).count() / stats_.timeline_ms);
        if (bin >= stats_.established.size()) stats_.established.resize(bin + 1, 0);
        ++stats_.established[bin];
    }
    // A closed loop: each first attempt's end begins the next connection's.
    // Posted: an attempt that fails at once (a bad --source) must not begin the next inside itself.
    if (options_.connect_window > 0 && !stopping_ && next_start_ < connections_.size())
        asio::post(io_, [c = connections_[next_start_++]] { c->start(); });
}

int load_client::run(std::ostream& out, std::ostream& err) {
    stats_.timeline_ms = options_.timeline_ms;
    for (unsigned i = 0; i < options_.connections; ++i)
        connections_.push_back(std::make_shared<client_connection>(*this, i));
    start_ = heartwheel::clock::now(); // the timeline begins with the first connect, not with the making
    // With a window, only its first connections begin now (staggered as asked); the rest follow.
    const std::size_t now = options_.connect_window > 0 ? std::min<std::size_t>(options_.connect_window, connections_.size())
                                                        : connections_.size();
    next_start_ = now;
    for (std::size_t i = 0; i < now; ++i) {
        if (options_.connect_stagger_us > 0) {
            // The handles live as long as the client (a handle captured by its own callback would
            // keep itself alive: a leak LeakSanitizer found in the soak).
            staggered_starts_.push_back(wheel_.schedule_after(
                std::chrono::microseconds(options_.connect_stagger_us * static_cast<std::int64_t>(i)),
                [c = connections_[i]] { c->start(); }));
        } else {
            connections_[i]->start();
        }
    }
    const auto start = start_;
    auto progress = wheel_.schedule_every(std::chrono::seconds(1), [&] {
        if (options_.quiet) return;
        const auto& s = stats_;
        err << "t=" << std::chrono::duration_cast<std::chrono::seconds>(heartwheel::clock::now() - start).count()
            << "s connects=" << s.connects << " failures=" << s.connect_failures << " requests=" << s.requests
            << " responses=" << s.responses << " timeouts=" << s.timeouts << " pings=" << s.pings_received
            << " byes=" << s.closed_by_server.size() << std::endl;
    });
    auto finish = wheel_.schedule_after(std::chrono::milliseconds(options_.duration_ms), [&] {
        for (auto& c : connections_) stats_.unanswered_at_exit += c->outstanding();
        stopping_ = true;
        for (auto& c : connections_) c->stop();
        io_.stop();
    });
    io_.run();
    out << stats_.json() << std::endl;
    return 0;
}

} // namespace echo
