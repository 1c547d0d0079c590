// metrics.hpp — a minimal HTTP/1.0 responder for Prometheus scrapes: GET /metrics returns the text
// exposition format, anything else 404. Requests are capped at 8 KiB and 5 s.
#ifndef HEARTWHEEL_ECHO_METRICS_HPP
#define HEARTWHEEL_ECHO_METRICS_HPP

#include "worker.hpp"

#include <asio/ip/tcp.hpp>

#include <functional>
#include <string>

namespace echo {

void serve_metrics(worker& w, asio::ip::tcp::acceptor& acceptor, std::function<std::string()> body);

} // namespace echo

#endif
