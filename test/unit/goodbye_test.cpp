// goodbye_test.cpp — how a close ends on the wire. A peer judged dead (heartbeat) is told inside the
// judgement itself: on a plain TCP socket its last words are handed to the socket and the connection
// closes before the judgement returns — no turn of the executor between, where a burst of deaths would
// queue behind one another — and the words and the FIN reach the peer in one segment (TCP_INFO on the
// peer's side). A peer that does not read is reset, not sent a FIN behind bytes it never takes.
// A hand-moved wheel over real sockets on 127.0.0.1: "before the judgement returns" is exact.
#include <boost/test/unit_test.hpp>

#include <heartwheel/net/connection/connection.hpp>

#include "manual_service.hpp"
#include "tcp_segments.hpp"

#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>

#include <netinet/tcp.h>
#include <sys/socket.h>

#include <memory>
#include <string>
#include <thread>

using namespace std::chrono_literals;
namespace net = heartwheel::net;
using tcp = asio::ip::tcp;

BOOST_AUTO_TEST_CASE(a_peer_judged_dead_is_told_and_closed_inside_the_judgement) {
    asio::io_context io;
    hwtest::manual_service svc;
    tcp::acceptor acceptor{io, {asio::ip::make_address("127.0.0.1"), 0}};
    tcp::socket peer{io};
    peer.connect(acceptor.local_endpoint());
    net::liveness_config cfg;
    cfg.heartbeat.interval = 100ms;
    cfg.heartbeat.timeout = 50ms;
    cfg.heartbeat.misses = 1;
    cfg.heartbeat.jitter = 0;
    std::shared_ptr<net::connection<tcp::socket>> c;
    net::connection_hooks hooks;
    hooks.send_ping = [&] { c->send("PING\n"); };
    hooks.last_words = [&](net::close_reason r) { c->send({"BYE ", net::to_string(r), "\n"}); };
    c = std::make_shared<net::connection<tcp::socket>>(acceptor.accept(), net::connection_context(svc, cfg));
    c->set_hooks(hooks);
    svc.step_by(100ms); // the ping
    io.poll();          // its write completes
    std::string ping(5, '\0');
    asio::read(peer, asio::buffer(ping));
    BOOST_TEST(ping == "PING\n");
    std::this_thread::sleep_for(20ms); // the acknowledgements settle
    const auto before = tcp_segments_received(peer.native_handle());
    svc.step_by(50ms); // unanswered: judged dead
    BOOST_TEST_REQUIRE(c->closed()); // inside the judgement: no turn of the executor since
    BOOST_TEST((c->reason() == net::close_reason::heartbeat_timeout));
    std::string bye;
    std::error_code ec;
    asio::read(peer, asio::dynamic_buffer(bye), ec);
    BOOST_TEST((ec == asio::error::eof), ec.message());
    BOOST_TEST(bye == "BYE heartbeat-timeout\n");
    BOOST_TEST(tcp_segments_received(peer.native_handle()) - before == 1u); // the words and the FIN together
}

namespace {
/// The TCP state of the connected socket `fd` (TCP_ESTABLISHED, TCP_CLOSE, ...: netinet/tcp.h).
int tcp_state(int fd) {
    tcp_info info{};
    socklen_t len = sizeof info;
    if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return -1;
    return info.tcpi_state;
}
} // namespace

// A peer that does not read, closed slow-consumer or write-timeout, is reset: the kernel lets go at
// once of the send buffer it held for the peer. A FIN instead would wait behind the bytes the peer
// never takes for as long as it keeps its window shut — the peer's side ESTABLISHED, ours in
// FIN-WAIT-1 holding the buffer (megabytes on a real server), long after the descriptor is gone.
BOOST_AUTO_TEST_CASE(a_peer_that_does_not_read_is_reset_not_left_the_send_buffer) {
    for (const auto why : {net::close_reason::slow_consumer, net::close_reason::write_timeout}) {
        asio::io_context io;
        hwtest::manual_service svc;
        tcp::acceptor acceptor{io, {asio::ip::make_address("127.0.0.1"), 0}};
        tcp::socket peer{io};
        peer.open(tcp::v4());
        peer.set_option(asio::socket_base::receive_buffer_size(4096)); // and never reads
        peer.connect(acceptor.local_endpoint());
        net::liveness_config cfg;
        cfg.output.high_water = 64 << 10;
        cfg.output.low_water = 16 << 10;
        cfg.output.soft_limit = 0;
        cfg.output.hard_limit = why == net::close_reason::slow_consumer ? 256u << 10 : 0u;
        cfg.timeouts.write_timeout = 10s;
        tcp::socket ours = acceptor.accept();
        ours.set_option(asio::socket_base::send_buffer_size(16 << 10));
        auto c = std::make_shared<net::connection<tcp::socket>>(std::move(ours), net::connection_context(svc, cfg));
        const auto poll = [&] { // what is ready now (the context stops when it runs out of work)
            io.restart();
            io.poll();
        };
        const std::string chunk(16 << 10, 'x');
        for (int i = 0; i < 64 && !c->closing(); ++i) { // 1 MiB at most: past the hard limit, or stalled
            c->send(chunk);
            poll();
        }
        // slow-consumer: closed as the bound is passed, then flushing for the linger; write-timeout:
        // closed at its time, at once.
        svc.step_by(why == net::close_reason::slow_consumer ? 1s : 10s);
        poll();
        BOOST_TEST_REQUIRE(c->closed());
        BOOST_TEST((c->reason() == why));
        int state = tcp_state(peer.native_handle());
        for (int i = 0; i < 100 && state != TCP_CLOSE; ++i) { // the reset is on its way over loopback
            std::this_thread::sleep_for(10ms);
            state = tcp_state(peer.native_handle());
        }
        BOOST_TEST(state == TCP_CLOSE, net::to_string(why) << ": the peer's TCP state " << state);
    }
}
