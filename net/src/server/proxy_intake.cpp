// proxy_intake.cpp — the listener's PROXY protocol intake (listener.hpp, proxy_protocol.hpp).
//
// The intake accepts on its own (the listener's accept operation, admission limits included), and
// reads each socket's header beside the others: peek what has arrived, parse, consume only bytes
// that belong to the header (all of them while it is incomplete, exactly its length once whole), so
// that a peek never sees the same bytes twice and the protocol's first bytes stay in the kernel. A
// socket whose header is whole joins `ready_` and wakes the application's pending accept; one that
// fails is closed with its reason. Each header read holds a deadline timer and a buffer of
// max_proxy_header bytes, only while it lasts.
//
// Invariants: reading_.size() + ready_.size() <= proxy.max_pending, except for the one accept in
// flight when the bound was reached; a header read is in reading_ iff !finished; every socket the
// intake accepted is counted once: proxied (then handed out, or closed `shutdown` by close()) or
// refused with its reason.
#include <heartwheel/net/server/listener.hpp>

#include <sys/socket.h>

#include <algorithm>
#include <array>

namespace heartwheel::net {

struct listener::header_read {
    header_read(const asio::any_io_executor& ex, asio::ip::tcp::socket s) : socket(std::move(s)), deadline(ex) {}
    asio::ip::tcp::socket socket;
    asio::steady_timer deadline;
    std::list<std::shared_ptr<header_read>>::iterator at;
    asio::ip::tcp::endpoint source;
    std::size_t have = 0; ///< header bytes consumed so far (at the front of `bytes`)
    bool finished = false;
    std::array<unsigned char, max_proxy_header> bytes;
};

void listener::intake() {
    if (!options_.proxy.enabled || intake_accepting_ || !acceptor_.is_open()) return;
    if (reading_.size() + ready_.size() >= options_.proxy.max_pending) return; // again when one leaves
    intake_accepting_ = true;
    const asio::any_io_executor ex = acceptor_.get_executor();
    auto accepted = asio::bind_executor(ex, [this, ex](error_code ec, asio::ip::tcp::socket s) {
        intake_accepting_ = false;
        if (ec) return; // closed
        error_code gone;
        const auto from = s.remote_endpoint(gone);
        const auto& ranges = options_.proxy.trusted;
        const bool trusted = !gone && std::any_of(ranges.begin(), ranges.end(),
                                                  [&](const cidr& range) { return range.contains(from.address()); });
        if (!trusted) {
            refuse_proxied(s, gone ? close_reason::peer_closed : proxy_untrusted_reason());
        } else {
            auto h = std::make_shared<header_read>(ex, std::move(s));
            h->source = from;
            reading_.push_front(h);
            h->at = reading_.begin();
            h->deadline.expires_after(options_.proxy.timeout);
            h->deadline.async_wait(asio::bind_executor(ex, [this, h](error_code e) {
                if (!e && !h->finished) header_done(h, proxy_timeout_reason());
            }));
            read_header(h);
        }
        intake();
    });
    asio::async_compose<decltype(accepted), void(error_code, asio::ip::tcp::socket)>(
        accept_op<asio::any_io_executor>(this, ex, nullptr, false), accepted, acceptor_);
}

void listener::read_header(const std::shared_ptr<header_read>& h) {
    auto room = asio::buffer(h->bytes.data() + h->have, h->bytes.size() - h->have);
    h->socket.async_receive(room, asio::socket_base::message_peek,
                            asio::bind_executor(acceptor_.get_executor(), [this, h](error_code ec, std::size_t n) {
        if (h->finished) return;
        // Left before its header was whole (a balancer's health check resets once connected): not a bad header.
        if (ec || n == 0) return header_done(h, close_reason::peer_closed);
        const auto r = parse_proxy_header(h->bytes.data(), h->have + n);
        switch (r.status) {
        case proxy_parse::missing: return header_done(h, proxy_missing_reason());
        case proxy_parse::malformed: return header_done(h, proxy_malformed_reason());
        case proxy_parse::oversized: return header_done(h, proxy_oversized_reason());
        case proxy_parse::incomplete: case proxy_parse::done: break;
        }
        // Every byte of an incomplete header belongs to it; of a whole one, its length.
        const std::size_t take = r.status == proxy_parse::done ? r.header.length - h->have : n;
        const auto got = ::recv(h->socket.native_handle(), h->bytes.data() + h->have, take, MSG_DONTWAIT);
        if (got < 0 || static_cast<std::size_t>(got) != take) return header_done(h, close_reason::peer_closed);
        h->have += take;
        if (r.status == proxy_parse::incomplete) return read_header(h);
        if (!r.header.local) h->source = r.header.source;
        header_done(h, std::nullopt);
    }));
}

void listener::header_done(const std::shared_ptr<header_read>& h, std::optional<close_reason> failed) {
    h->finished = true;
    h->deadline.cancel();
    reading_.erase(h->at);
    if (failed) {
        refuse_proxied(h->socket, *failed);
    } else {
        proxied_.fetch_add(1, std::memory_order_relaxed);
        ready_.push_back(proxied_socket{std::move(h->socket), h->source});
        ready_signal_.cancel();
    }
    intake();
}

void listener::refuse_proxied(asio::ip::tcp::socket& s, close_reason r) {
    proxy_refused_.fetch_add(1, std::memory_order_relaxed);
    closed_here(r);
    error_code ignored;
    s.close(ignored);
}

void listener::close_intake() noexcept {
    const std::size_t dropped = reading_.size() + ready_.size();
    for (auto& h : reading_) {
        h->finished = true;
        h->deadline.cancel();
        error_code ignored;
        h->socket.close(ignored);
    }
    reading_.clear();
    ready_.clear(); // closes them
    for (std::size_t i = 0; i < dropped; ++i) closed_here(close_reason::shutdown);
    ready_signal_.cancel();
}

} // namespace heartwheel::net
