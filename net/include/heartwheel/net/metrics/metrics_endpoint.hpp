// heartwheel/net/metrics/metrics_endpoint.hpp — a server's /metrics, answered under abuse.
//
// A Prometheus scrape is one HTTP/1.0 exchange: accept, read the request head, answer GET /metrics
// with the text `body()` returns (prometheus_writer's), anything else 404, close. It needs no HTTP
// library, but it is a port every scanner finds, so it carries the listener's defences at its own
// scale: at most 8 scrapes at once (a new one evicts the oldest still waiting for its head, so
// slowloris connections cannot lock the scrapes out), a head of at most 8 KiB within 1 s and 5 s
// per scrape in all; a spare descriptor, given up at the descriptor limit for one scrape at a time,
// keeps /metrics reachable when the server's connections took every other one (otherwise accepting
// rests 100 ms, never spins). Header lines may end in "\r\n" or a bare "\n".
//
// serve_metrics runs until the acceptor is closed (close it on the acceptor's executor; the aborted
// handlers let go of everything). The wheel times the scrapes: it must run on the acceptor's
// executor (the same thread or strand), as a shard's wheel does for that shard's sockets.
#ifndef HEARTWHEEL_NET_METRICS_ENDPOINT_HPP
#define HEARTWHEEL_NET_METRICS_ENDPOINT_HPP

#include <heartwheel/asio.hpp>
#include <heartwheel/asio_wheel.hpp>

#include <functional>
#include <string>

namespace heartwheel::net {

/// Answers GET /metrics on `acceptor` with `body()` (called once per scrape, on the acceptor's
/// executor) until the acceptor is closed.
void serve_metrics(asio::ip::tcp::acceptor& acceptor, asio_wheel& wheel, std::function<std::string()> body);

} // namespace heartwheel::net

#endif
