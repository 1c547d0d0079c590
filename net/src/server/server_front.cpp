// server_front.cpp — see heartwheel/net/server/server_front.hpp for the order and why.
#include <heartwheel/net/server/listen.hpp>
#include <heartwheel/net/metrics/metrics_endpoint.hpp>
#include <heartwheel/net/server/server_front.hpp>

#include <iostream>

namespace heartwheel::net {

server_front::server_front(const asio::any_io_executor& ex, const server_settings& settings, listener_options options)
    : ex_(ex), drain_window_(settings.drain_window), counters_(options.counters) {
    listener_.emplace(ex, settings.endpoint(), std::move(options));
    // With --handover, a successor binds the metrics port beside this one while it drains.
    if (settings.metrics) metrics_.emplace(listen(ex, *settings.metrics, {!settings.handover.empty()}));
}

std::unique_ptr<server_front> server_front::open(const asio::any_io_executor& ex, const server_settings& settings,
                                                 std::string name, std::string refusal, liveness_counters* counters) {
    listener_options options = settings.listener();
    options.name = std::move(name);
    options.refusal = std::move(refusal);
    options.counters = counters;
    const std::string who = options.name;
    try {
        return std::unique_ptr<server_front>(new server_front(ex, settings, std::move(options)));
    } catch (const listen_error& e) {
        std::cerr << who << ": " << e.what() << '\n';
        return nullptr;
    }
}

void server_front::on_signals(std::function<void()> stop) {
    signals_.emplace(ex_, SIGINT, SIGTERM);
    drain_ = drain_on_signals(*signals_, *listener_, ex_, drain_window_, std::move(stop));
}

std::string server_front::ready_lines() const {
    std::string out = "listening on " + listener_->local_address() + "\n";
    if (metrics_) out += "metrics on " + endpoint_text(metrics_->local_endpoint()) + "\n";
    return out;
}

void server_front::serve_metrics(asio_wheel& wheel, std::function<void(prometheus_writer&)> families, bool report_wheel) {
    if (!metrics_) return;
    net::serve_metrics(*metrics_, wheel, [this, &wheel, families = std::move(families), report_wheel] {
        prometheus_writer out;
        if (families) families(out);
        out.serving(*listener_, drain_.draining(), counters_ ? counters_->snapshot() : counters_snapshot{});
        if (report_wheel) out.wheels(wheel.size(), wheel.stats());
        return out.text();
    });
}

} // namespace heartwheel::net
