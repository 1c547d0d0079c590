// heartwheel/net/server/shards.hpp — a server's threads and what each of them times, in either threading model.
//
// A shard is an executor, the wheel on it, the scale of its timeouts under overload and the
// connection_context its connections share: everything of one shard runs on its executor, so
// nothing of it needs a lock (docs/design.md, "Threading"). `shards` makes N of them:
//  - threading::thread_per_core: each shard has an io_context of its own, run by one thread;
//  - threading::thread_pool: one io_context run by N threads, each shard a strand of it (Beast's
//    multi-threaded servers' shape).
// An acceptor hands each socket to next() (round-robin) by accepting it onto that shard's executor;
// the connection is then made inside that executor (a connection made elsewhere throws). run() runs
// the N threads (the caller is one of them) until stop(), which any thread may call.
//
// An application that already has its io_context (a Beast server, a service with its own threads)
// gives it instead: `shards(io, n, config)` makes N strands of it, the thread-pool model on an
// io_context the shards do not own — the application runs it as it did (or calls run()), and
// destroys the shards before it. The N strands then replace a strand per connection, as Beast's
// multi-threaded servers make: connections on one shard take turns (a long handler delays its
// shard's other connections), and the wheel, its timers and every connection of a shard share one
// strand, which is what keeps them free of locks.
//
//   net::shards pool(4, net::threading::thread_pool, config, &counters);
//   auto& s = pool.next();                                          // on the acceptor's executor
//   auto [ec, socket] = co_await acceptor.async_accept(s.get_executor(), use_tuple);
//   asio::co_spawn(s.get_executor(), session(std::move(socket), s.context()), asio::detached);
//   pool.run();                                                     // until pool.stop()
//
// Teardown: the shards go before their io_contexts (a wheel before the io_context it runs on);
// connections still held by handlers queued in an io_context go with it, after their wheel let go
// of their timers. An application whose sessions point into objects of its own that it destroys
// before the shards (a registry of sessions per shard) calls shutdown() first: the wheels let go,
// then every queued handler — and whatever session it holds — is destroyed while those objects live.
#ifndef HEARTWHEEL_NET_SHARDS_HPP
#define HEARTWHEEL_NET_SHARDS_HPP

#include <heartwheel/asio.hpp>
#include <heartwheel/asio_wheel.hpp>
#include <heartwheel/net/connection/connection_context.hpp>
#include <heartwheel/net/detail/home_executor.hpp> // asio::strand, asio::io_context (either flavour)
#include <heartwheel/net/policies/timeout_scale.hpp>

#include <cstddef>
#include <memory>
#include <vector>

namespace heartwheel::net {

enum class threading { thread_per_core, thread_pool };

/// One shard: its executor, its wheel, its timeout scale, its connections' context.
class shard {
public:
    shard(asio::io_context& io, asio::any_io_executor ex, const liveness_config& config, liveness_counters* counters,
          const wheel_config& wheel);
    shard(const shard&) = delete;
    shard& operator=(const shard&) = delete;

    /// Where this shard's connections live: its thread's io_context's executor, or its strand.
    asio::any_io_executor get_executor() const noexcept { return ex_; }
    /// The thread-pool model's strand as its own type, for sockets that name their executor
    /// (asio::basic_stream_socket<tcp, io_strand>: 24 bytes of executor in the socket and in each
    /// pending operation, where any_io_executor takes 56, and no polymorphic call per completion);
    /// null with a thread per core, whose sockets name io_context().get_executor()'s type instead.
    /// docs/design.md, "Naming the executor type".
    using io_strand = asio::strand<asio::io_context::executor_type>;
    const io_strand* strand() const noexcept;
    /// The io_context that runs it (its own, or the pool's).
    asio::io_context& io_context() noexcept { return io_; }
    asio_wheel& wheel() noexcept { return wheel_; }
    timeout_scale& scale() noexcept { return scale_; }
    const connection_context& context() const noexcept { return context_; }

private:
    asio::io_context& io_;
    asio::any_io_executor ex_;
    asio_wheel wheel_;
    timeout_scale scale_;
    connection_context context_;
};

/// N shards in one threading model; see the top of this file.
class shards {
public:
    /// `n` shards (1..1024; config_error otherwise), their connections made with `config` (validated
    /// here, by each shard's context: config_error naming table.field) and counted in `counters`
    /// (may be null); `wheel` each wheel's.
    shards(std::size_t n, threading model, const liveness_config& config, liveness_counters* counters = nullptr,
           const wheel_config& wheel = {});
    /// `n` shards as strands of the application's `io` (the thread-pool model; see the top of this
    /// file): `io` must outlive the shards; run() runs N threads on it, stop() stops it, shutdown()
    /// only lets the wheels go (the io_context's queued handlers go with it, the application's).
    shards(asio::io_context& io, std::size_t n, const liveness_config& config, liveness_counters* counters = nullptr,
           const wheel_config& wheel = {});
    ~shards();
    shards(const shards&) = delete;
    shards& operator=(const shards&) = delete;

    std::size_t size() const noexcept { return shards_.size(); }
    shard& operator[](std::size_t i) noexcept { return *shards_[i]; }
    threading model() const noexcept { return model_; }
    /// The next shard round-robin, for the next accepted socket (from one thread: the acceptor's).
    shard& next() noexcept;
    /// Runs every shard on N threads, the caller's one of them, until stop(); then joins them. An
    /// exception out of a handler stops them all and is rethrown here after the join.
    void run();
    /// Stops every io_context (run() returns); from any thread.
    void stop() noexcept;
    /// After run() (or instead of it): every wheel lets go of its timers, then every io_context shuts
    /// down, destroying the handlers still queued (and what they hold) now rather than with the
    /// shards. Nothing runs on the shards afterwards; idempotent.
    void shutdown();

private:
    struct owned_io; ///< an io_context whose shutdown (the first half of its destructor) shutdown() calls
    shards(asio::io_context* borrowed, std::size_t n, threading model, const liveness_config& config,
           liveness_counters* counters, const wheel_config& wheel);
    threading model_;
    asio::io_context* borrowed_ = nullptr;                   ///< thread_pool on the application's io_context
    std::unique_ptr<owned_io> pool_;                         ///< thread_pool: the one io_context, when owned
    std::vector<std::unique_ptr<owned_io>> own_;             ///< thread_per_core: one per shard
    std::vector<std::unique_ptr<shard>> shards_;             ///< destroyed before the io_contexts
    std::size_t next_ = 0;
};

} // namespace heartwheel::net

#endif
