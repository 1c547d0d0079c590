// timeout_policy.cpp — the read and write timeouts on a connection (timeout_policy.hpp).
#include <heartwheel/net/timeout_policy.hpp>

namespace heartwheel::net {

timeout_runtime::timeout_runtime(policy_host& host, const timeout_policy& p) : write_timeout_(p.write_timeout) {
    if (p.read_timeout.count() <= 0) return;
    read_ = std::make_unique<watch>(host, close_reason::read_timeout);
    read_->timer.start(p.read_timeout, p.read_timeout_min, host.scale(), host.scheduler().stamp());
}

timeout_runtime::~timeout_runtime() = default;

void timeout_runtime::on_write_started(policy_host& host) {
    if (write_timeout_.count() <= 0 || (write_ && write_->timer.running())) return;
    if (!write_) write_ = std::make_unique<watch>(host, close_reason::write_timeout);
    write_->timer.start(std::chrono::duration_cast<duration>(write_timeout_), host.scheduler().stamp());
}

void timeout_runtime::stop() noexcept {
    if (read_) read_->timer.stop();
    if (write_) write_->timer.stop();
}

} // namespace heartwheel::net
