// timeout_policy.cpp — the read and write timeouts on a connection (timeout_policy.hpp).
#include <heartwheel/net/policies/timeout_policy.hpp>

#include <heartwheel/net/detail/block_cache.hpp>

namespace heartwheel::net {

namespace {
// The watches freed on a thread, kept for its next write burst (at most watch_cache_size).
using watch_cache = detail::block_cache<timeout_runtime, watch_cache_size>;
} // namespace

void* timeout_runtime::watch::operator new(std::size_t size) { return watch_cache::take(size); }

void timeout_runtime::watch::operator delete(void* p) noexcept { watch_cache::give(p); }

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
