// timeout_policy.cpp — the read and write timeouts on a connection (timeout_policy.hpp).
#include <heartwheel/net/policies/timeout_policy.hpp>

namespace heartwheel::net {

namespace {
// The watches freed on this thread, for its next write burst: a stack of at most watch_cache_size
// blocks. Plain data (no destructor of its own, so usable however late in the thread's end); the
// reaper, registered with the first block kept, gives the blocks back to the heap when the thread
// ends and closes the stack, so that a watch freed after that goes straight to the heap. A watch
// freed on another thread than the one that made it joins that thread's stack (one size for all).
struct watch_cache {
    void* blocks[watch_cache_size];
    std::size_t held;
    bool closed;
};
thread_local watch_cache cache{};
struct watch_cache_reaper {
    ~watch_cache_reaper() {
        cache.closed = true;
        while (cache.held > 0) ::operator delete(cache.blocks[--cache.held]);
    }
};
thread_local watch_cache_reaper reaper;
} // namespace

void* timeout_runtime::watch::operator new(std::size_t size) {
    if (cache.held > 0) return cache.blocks[--cache.held];
    return ::operator new(size);
}

void timeout_runtime::watch::operator delete(void* p) noexcept {
    if (cache.closed || cache.held == watch_cache_size) return ::operator delete(p);
    if (cache.held == 0) static_cast<void>(&reaper); // its first use registers its end with the thread's
    cache.blocks[cache.held++] = p;
}

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
