// client.cpp — one client_connection per slot: connect (with a connect timeout), TLS handshake,
// request sending, line handling, and the reconnect loop driven by heartwheel::net::reconnector.
#include "client.hpp"

#include "protocol.hpp"

#include <heartwheel/net/reconnector.hpp>
#include <heartwheel/net/request_tracker.hpp>
#include <heartwheel/net/write_queue.hpp>

#include <asio/connect.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read_until.hpp>
#include <asio/ssl/host_name_verification.hpp>
#include <asio/ssl/stream.hpp>
#include <asio/write.hpp>

#include <algorithm>
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
       << ",\"timeouts\":" << timeouts << ",\"failed_on_close\":" << failed_on_close << ",\"pings_received\":" << pings_received << ",\"pongs_sent\":" << pongs_sent
       << ",\"closed_by_server\":{";
    bool first = true;
    for (const auto& [reason, n] : closed_by_server) {
        os << (first ? "" : ",") << '"' << reason << "\":" << n;
        first = false;
    }
    os << "},\"rtt_ms\":{\"p50\":" << pct(0.50) << ",\"p99\":" << pct(0.99) << ",\"max\":" << max << "}}";
    return os.str();
}

class client_connection : public std::enable_shared_from_this<client_connection> {
public:
    using tcp = asio::ip::tcp;
    using tls_stream = asio::ssl::stream<tcp::socket>;

    client_connection(load_client& c, std::size_t index)
        : c_(c), index_(index),
          reconnector_(c.wheel(), c.options().live.backoff, [this] { attempt(); }),
          requests_(c.wheel(), c.io().get_executor(), c.options().live.request) {
        if (c.options().verbose)
            reconnector_.on_wait([this](std::chrono::milliseconds delay, unsigned failures) {
                log() << "reconnecting in " << delay.count() << " ms (failure " << failures << ")" << std::endl;
            });
    }

    void start() { reconnector_.start(); }
    void stop() {
        reconnector_.stop();
        sender_.cancel();
        connect_deadline_.cancel();
        close_socket();
    }

private:
    tcp::socket& socket() { return tls_ ? tls_->next_layer() : *plain_; }

    std::ostream& log() { return std::cerr << "client " << index_ << ": "; }

    void attempt() {
        if (c_.stopping()) return;
        ++generation_;
        plain_.reset();
        tls_.reset();
        if (c_.tls()) tls_.emplace(c_.io(), *c_.tls());
        else plain_.emplace(c_.io());
        const auto& ep = c_.options().connect;
        std::error_code ec;
        const auto address = asio::ip::make_address(ep.host == "localhost" ? "127.0.0.1" : ep.host, ec);
        if (ec) return failed_to_connect();
        const auto timeout = c_.options().reconnect ? reconnector_.connect_timeout() : std::chrono::milliseconds(10000);
        connect_deadline_ = c_.wheel().schedule_after(timeout, [weak = weak_from_this(), g = generation_] {
            if (auto self = weak.lock(); self && self->generation_ == g) self->close_socket();
        });
        socket().async_connect(tcp::endpoint(address, ep.port), [self = shared_from_this(), g = generation_](std::error_code e) {
            if (g != self->generation_) return;
            self->connect_deadline_.cancel();
            if (e) return self->failed_to_connect();
            std::error_code ignored;
            self->socket().set_option(tcp::no_delay(true), ignored);
            if (!self->tls_) return self->connected();
            if (!self->c_.options().insecure)
                self->tls_->set_verify_callback(asio::ssl::host_name_verification(self->c_.options().connect.host));
            self->tls_->async_handshake(asio::ssl::stream_base::client, [self, g](std::error_code he) {
                if (g != self->generation_) return;
                if (he) return self->failed_to_connect();
                self->connected();
            });
        });
    }

    void failed_to_connect() {
        ++c_.stats().connect_failures;
        if (c_.options().verbose) log() << "connect failed" << std::endl;
        close_socket();
        if (c_.options().reconnect && !c_.stopping()) reconnector_.failed();
    }

    void connected() {
        auto& s = c_.stats();
        if (ever_connected_) ++s.reconnects;
        ever_connected_ = true;
        ++s.connects;
        if (c_.options().verbose) log() << "connected" << std::endl;
        open_ = true;
        in_.clear();
        reconnector_.connected();
        read();
        if (c_.options().send_interval_ms > 0) {
            sender_ = c_.wheel().schedule_every(std::chrono::milliseconds(c_.options().send_interval_ms),
                                                [this] { send_request(); }, heartwheel::missed_tick::skip);
        }
    }

    void read() {
        auto on_line = [self = shared_from_this(), g = generation_](std::error_code ec, std::size_t n) {
            if (g != self->generation_) return;
            if (ec) return self->disconnected();
            self->handle(std::string_view(self->in_.data(), n - 1));
            self->in_.erase(0, n);
            self->read();
        };
        if (tls_) asio::async_read_until(*tls_, asio::dynamic_buffer(in_, 1 << 24), '\n', std::move(on_line));
        else asio::async_read_until(*plain_, asio::dynamic_buffer(in_, 1 << 24), '\n', std::move(on_line));
    }

    void handle(std::string_view line) {
        auto& s = c_.stats();
        const auto p = parse_line(line);
        if (p.kind == line_kind::ping) {
            ++s.pings_received;
            if (c_.options().answer_pings) {
                ++s.pongs_sent;
                send("PONG " + std::string(p.arg));
            }
        } else if (p.kind == line_kind::bye) {
            ++s.closed_by_server[std::string(p.arg)];
            if (c_.options().verbose) log() << "server said BYE " << p.arg << std::endl;
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
            ++s.responses;
            const auto rtt = heartwheel::clock::now().time_since_epoch().count() - sent_ns;
            s.add_rtt(static_cast<std::uint32_t>(std::clamp<std::int64_t>(rtt / 1000, 0, 0xffffffff)));
        }
    }

    void send_request() {
        if (!open_ || out_->above_high_water()) return;
        auto& s = c_.stats();
        const std::uint64_t id = (static_cast<std::uint64_t>(index_) << 32) | ++seq_;
        std::string line = "REQ " + std::to_string(id) + ' ' + std::to_string(heartwheel::clock::now().time_since_epoch().count()) + ' ';
        if (line.size() < c_.options().payload) line.append(c_.options().payload - line.size(), 'x');
        ++s.requests;
        requests_.track(id, [this, &s](std::error_code ec, heartwheel::net::request_state) {
            if (ec == heartwheel::net::errc::connection_closed) ++s.failed_on_close;
            if (ec != heartwheel::net::errc::timed_out) return;
            ++s.timeouts;
            if (c_.options().verbose) log() << "request timed out" << std::endl;
        });
        requests_.mark_sent(id);
        send(std::move(line));
    }

    void send(std::string_view line) {
        out_->append(line);
        out_->append('\n');
        if (!writing_) write();
    }

    // Everything queued goes out in one write_some (net's write_queue coalesces the lines).
    void write() {
        writing_ = true;
        // The handler holds the queue: its buffer stays valid even if the connection moved on.
        auto done = [self = shared_from_this(), q = out_, g = generation_](std::error_code ec, std::size_t n) {
            if (g != self->generation_) return;
            self->writing_ = false;
            if (ec) return self->disconnected();
            q->consumed(n);
            if (!q->empty()) self->write();
        };
        const std::string_view bytes = out_->next_bytes();
        if (tls_) tls_->async_write_some(asio::buffer(bytes.data(), bytes.size()), std::move(done));
        else plain_->async_write_some(asio::buffer(bytes.data(), bytes.size()), std::move(done));
    }

    void disconnected() {
        if (!open_) return;
        ++c_.stats().disconnects;
        close_socket();
        if (c_.options().reconnect && !c_.stopping()) reconnector_.disconnected();
    }

    void close_socket() {
        open_ = false;
        ++generation_;
        sender_.cancel();
        requests_.fail_all(heartwheel::net::errc::connection_closed);
        // A write still in flight keeps its queue (its handler holds it) until it completes with an
        // error after the close below; the next connection starts with a fresh one.
        out_ = std::make_shared<heartwheel::net::write_queue>();
        writing_ = false;
        std::error_code ignored;
        if (plain_) plain_->close(ignored);
        if (tls_) tls_->next_layer().close(ignored);
    }

    load_client& c_;
    std::size_t index_;
    heartwheel::net::reconnector reconnector_;
    heartwheel::net::request_tracker<std::uint64_t> requests_;
    std::optional<tcp::socket> plain_;
    std::optional<tls_stream> tls_;
    heartwheel::timer_handle sender_, connect_deadline_;
    std::string in_;
    std::shared_ptr<heartwheel::net::write_queue> out_ = std::make_shared<heartwheel::net::write_queue>();
    std::uint64_t seq_ = 0, generation_ = 0;
    bool open_ = false, writing_ = false, ever_connected_ = false;
};

load_client::load_client(const client_options& options) : options_(options), wheel_(io_.get_executor()) {
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
    for (auto& c : connections_) c->stop();
}

int load_client::run(std::ostream& out, std::ostream& err) {
    for (unsigned i = 0; i < options_.connections; ++i) {
        connections_.push_back(std::make_shared<client_connection>(*this, i));
        if (options_.connect_stagger_us > 0) {
            // The handles live as long as the client (a handle captured by its own callback would
            // keep itself alive: a leak LeakSanitizer found in the soak).
            staggered_starts_.push_back(wheel_.schedule_after(std::chrono::microseconds(options_.connect_stagger_us * i),
                                                              [c = connections_.back()] { c->start(); }));
        } else {
            connections_.back()->start();
        }
    }
    const auto start = heartwheel::clock::now();
    auto progress = wheel_.schedule_every(std::chrono::seconds(1), [&] {
        if (options_.quiet) return;
        const auto& s = stats_;
        err << "t=" << std::chrono::duration_cast<std::chrono::seconds>(heartwheel::clock::now() - start).count()
            << "s connects=" << s.connects << " failures=" << s.connect_failures << " requests=" << s.requests
            << " responses=" << s.responses << " timeouts=" << s.timeouts << " pings=" << s.pings_received
            << " byes=" << s.closed_by_server.size() << std::endl;
    });
    auto finish = wheel_.schedule_after(std::chrono::milliseconds(options_.duration_ms), [&] {
        stopping_ = true;
        for (auto& c : connections_) c->stop();
        io_.stop();
    });
    io_.run();
    out << stats_.json() << std::endl;
    return 0;
}

} // namespace echo
