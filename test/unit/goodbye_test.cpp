// goodbye_test.cpp — a peer judged dead (heartbeat) is told inside the judgement itself: on a plain TCP
// socket its last words are handed to the socket and the connection closes before the judgement
// returns — no turn of the executor between, where a burst of deaths would queue behind one another —
// and the words and the FIN reach the peer in one segment (TCP_INFO on the peer's side). A hand-moved
// wheel over real sockets on 127.0.0.1: "before the judgement returns" is exact.
#include <boost/test/unit_test.hpp>

#include <heartwheel/net/connection/connection.hpp>

#include "manual_service.hpp"
#include "tcp_segments.hpp"

#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>

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
