// shards.cpp — N shards in either threading model, and the threads that run them; see shards.hpp.
#include <heartwheel/net/server/shards.hpp>

#include <heartwheel/net/detail/home_executor.hpp>
#include <heartwheel/net/policies/policies.hpp>

#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <typeinfo>

namespace heartwheel::net {

struct shards::owned_io : asio::io_context {
    using asio::io_context::io_context;
    using asio::io_context::shutdown;
};

shard::shard(asio::io_context& io, asio::any_io_executor ex, const liveness_config& config, liveness_counters* counters,
             const wheel_config& wheel)
    : io_(io), ex_(std::move(ex)), wheel_(ex_, wheel), scale_(wheel_, config.overload.threshold),
      context_(wheel_, config, counters, &scale_) {}

const shard::io_strand* shard::strand() const noexcept {
    // target_type() first: Asio 1.22's target<T>() returns its target as a T without checking.
    return ex_.target_type() == typeid(io_strand) ? ex_.target<io_strand>() : nullptr;
}

shards::shards(std::size_t n, threading model, const liveness_config& config, liveness_counters* counters,
               const wheel_config& wheel)
    : shards(nullptr, n, model, config, counters, wheel) {}

shards::shards(asio::io_context& io, std::size_t n, const liveness_config& config, liveness_counters* counters,
               const wheel_config& wheel)
    : shards(&io, n, threading::thread_pool, config, counters, wheel) {}

shards::shards(asio::io_context* borrowed, std::size_t n, threading model, const liveness_config& config,
               liveness_counters* counters, const wheel_config& wheel)
    : model_(model), borrowed_(borrowed) {
    if (n < 1 || n > 1024) throw config_error("shards", std::to_string(n), "1..1024");
    if (model == threading::thread_pool && !borrowed_) pool_ = std::make_unique<owned_io>(static_cast<int>(n));
    asio::io_context* pool = borrowed_ ? borrowed_ : pool_.get();
    for (std::size_t i = 0; i < n; ++i) {
        asio::io_context* io = pool;
        asio::any_io_executor ex;
        if (pool) {
            ex = asio::make_strand(*pool);
        } else {
            own_.push_back(std::make_unique<owned_io>(1));
            io = own_.back().get();
            ex = io->get_executor();
        }
        shards_.push_back(std::make_unique<shard>(*io, std::move(ex), config, counters, wheel));
    }
}

shards::~shards() {
    shards_.clear(); // the wheels before the io_contexts they run on
}

shard& shards::next() noexcept {
    shard& s = *shards_[next_];
    if (++next_ == shards_.size()) next_ = 0;
    return s;
}

void shards::run() {
    std::vector<asio::io_context*> loops; // one per thread
    asio::io_context* pool = borrowed_ ? borrowed_ : pool_.get();
    for (std::size_t i = 0; i < shards_.size(); ++i) loops.push_back(pool ? pool : own_[i].get());
    std::mutex m;
    std::exception_ptr failure;
    const auto run_one = [&](asio::io_context& io) {
        try {
            auto guard = asio::make_work_guard(io); // a shard with nothing to do yet waits for work
            io.run();
        } catch (...) {
            {
                std::lock_guard<std::mutex> l(m);
                if (!failure) failure = std::current_exception();
            }
            stop();
        }
    };
    std::vector<std::thread> threads;
    threads.reserve(loops.size() - 1);
    for (std::size_t i = 1; i < loops.size(); ++i) threads.emplace_back([&, io = loops[i]] { run_one(*io); });
    run_one(*loops[0]);
    for (auto& t : threads) t.join();
    if (failure) std::rethrow_exception(failure);
}

void shards::shutdown() {
    for (auto& s : shards_) (void)s->wheel().shutdown(); // its pending waits complete wheel_stopped
    if (pool_) pool_->shutdown();
    for (auto& io : own_) io->shutdown();
}

void shards::stop() noexcept {
    if (borrowed_) borrowed_->stop();
    if (pool_) pool_->stop();
    for (auto& io : own_) io->stop();
}

} // namespace heartwheel::net
