// timeout_policy.cpp — the read and write timeouts on a connection (timeout_policy.hpp).
#include <heartwheel/net/policies/timeout_policy.hpp>

namespace heartwheel::net {

timeout_runtime::timeout_runtime(policy_host& host, const timeout_policy& p) {
    if (p.read_timeout.count() <= 0) return;
    read_ = std::make_unique<watch>(host, close_reason::read_timeout);
    read_->timer.start(p.read_timeout, p.read_timeout_min, host.scale(), host.scheduler().stamp());
}

timeout_runtime::~timeout_runtime() = default;

void timeout_runtime::on_write_started(policy_host& host, const timeout_policy& p) {
    if (p.write_timeout.count() <= 0 || write_) return; // off, or already timing the queued output
    write_ = std::make_unique<watch>(host, close_reason::write_timeout);
    write_->timer.start(std::chrono::duration_cast<duration>(p.write_timeout), host.scheduler().stamp());
}

void timeout_runtime::stop() noexcept {
    if (read_) read_->timer.stop();
    write_.reset();
}

} // namespace heartwheel::net
