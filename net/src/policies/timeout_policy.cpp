// timeout_policy.cpp — the read and write timeouts on a connection (timeout_policy.hpp).
#include <heartwheel/net/policies/timeout_policy.hpp>

namespace heartwheel::net {

timeout_runtime::timeout_runtime(policy_host& host, const timeout_policy& p) {
    if (p.read_timeout.count() <= 0 && p.write_timeout.count() <= 0) return;
    on_ = std::make_unique<timeouts_on>();
    on_->write_timeout = p.write_timeout;
    if (p.read_timeout.count() <= 0) return;
    on_->read = std::make_unique<watch>(host, close_reason::read_timeout);
    on_->read->timer.start(p.read_timeout, p.read_timeout_min, host.scale(), host.scheduler().stamp());
}

timeout_runtime::~timeout_runtime() = default;

void timeout_runtime::on_write_started(policy_host& host) {
    if (!on_ || on_->write_timeout.count() <= 0 || (on_->write && on_->write->timer.running())) return;
    if (!on_->write) on_->write = std::make_unique<watch>(host, close_reason::write_timeout);
    on_->write->timer.start(std::chrono::duration_cast<duration>(on_->write_timeout), host.scheduler().stamp());
}

void timeout_runtime::stop() noexcept {
    if (!on_) return;
    if (on_->read) on_->read->timer.stop();
    if (on_->write) on_->write->timer.stop();
}

} // namespace heartwheel::net
