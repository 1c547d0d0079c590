// thread_pool_test — heartwheel in the thread-pool model: one io_context run by 4 threads, 4 shards
// (a strand, its wheel and the connections it times), each connection's socket on its shard's strand.
// Thousands of connections are churned through it while the server does what fan-out servers do
// across strands: each MSG is broadcast to connections of other shards (cross-strand send), each REQ
// is a tracked request answered by a backend thread that is no Asio thread at all
// (complete_request), and each QUIT is closed from another shard's strand (cross-strand close). The
// library must post those calls to the connection's strand: run under ThreadSanitizer (CI's
// sanitize.sh) this suite reports any call that raced instead; here it checks that nothing is lost —
// every request answered, every QUIT said goodbye to, every close counted exactly once.
#include "test_asio.hpp"

#include <heartwheel/asio_wheel.hpp>
#include <heartwheel/net/connection/connection.hpp>
#include <heartwheel/net/server/shards.hpp>

#define BOOST_TEST_MODULE thread_pool
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <random>
#include <set>
#include <thread>

namespace net = heartwheel::net;
using namespace std::chrono_literals;
using tcp = asio::ip::tcp;
using connection = net::connection<tcp::socket>;

namespace {

const net::close_reason quit = net::define_close_reason("quit");

net::liveness_config policy() {
    net::liveness_config cfg;
    cfg.heartbeat.interval = 100ms; // pings (from each shard's wheel, on its strand) keep flowing
    cfg.heartbeat.timeout = 2s;
    cfg.idle.reader_idle = 20s;
    return cfg;
}

// Every open server connection, for broadcasts from any shard (guarded: shards run in parallel).
struct registry {
    std::mutex m;
    std::vector<std::weak_ptr<connection>> all;
    void add(const std::shared_ptr<connection>& c) {
        std::lock_guard l(m);
        all.push_back(c);
    }
    std::vector<std::shared_ptr<connection>> pick(std::size_t n, std::minstd_rand& rng) {
        std::lock_guard l(m);
        std::vector<std::shared_ptr<connection>> out;
        for (std::size_t i = 0; i < n && !all.empty(); ++i) {
            const std::size_t k = rng() % all.size();
            if (auto c = all[k].lock()) out.push_back(std::move(c));
            else { // gone: forget it
                all[k] = std::move(all.back());
                all.pop_back();
            }
        }
        return out;
    }
};

// A thread that is not an Asio thread: it answers requests by completing them on their connection.
struct backend {
    std::mutex m;
    std::condition_variable cv;
    std::deque<std::function<void()>> jobs;
    bool stop = false;
    std::thread t{[this] {
        for (;;) {
            std::unique_lock l(m);
            cv.wait(l, [this] { return stop || !jobs.empty(); });
            if (jobs.empty()) return;
            auto job = std::move(jobs.front());
            jobs.pop_front();
            l.unlock();
            job();
        }
    }};
    void submit(std::function<void()> f) {
        {
            std::lock_guard l(m);
            jobs.push_back(std::move(f));
        }
        cv.notify_one();
    }
    ~backend() {
        {
            std::lock_guard l(m);
            stop = true;
        }
        cv.notify_one();
        t.join();
    }
};

struct server_state {
    net::shards* shards;
    registry reg;
    backend answers;
    std::atomic<std::uint64_t> accepted{0};
};

asio::awaitable<void> serve(std::shared_ptr<connection> c, server_state& st, std::size_t home) {
    st.reg.add(c);
    std::minstd_rand rng(static_cast<unsigned>(home * 7919 + st.accepted.load()));
    std::string buf;
    for (;;) {
        auto [ec, n] = co_await asio::async_read_until(c->stream(), asio::dynamic_buffer(buf), '\n',
                                                       tuple_awaitable);
        if (ec) {
            c->read_failed(ec);
            co_return;
        }
        const std::string line = buf.substr(0, n - 1);
        buf.erase(0, n);
        if (line == "PONG") {
            c->pong_received();
        } else if (line.rfind("MSG ", 0) == 0) {
            for (auto& to : st.reg.pick(3, rng)) to->send({line, "\n"}); // mostly other shards' strands
        } else if (line.rfind("REQ ", 0) == 0) {
            const std::uint64_t id = std::stoull(line.substr(4));
            c->requests().track(id, 5s, [c, id](heartwheel::error_code rec, net::request_state) {
                c->send((rec ? "FAIL " : "DONE ") + std::to_string(id) + "\n");
            });
            st.answers.submit([c, id] { c->complete_request(id); }); // from a non-Asio thread
        } else if (line == "QUIT") {
            // Closed from the next shard's strand: the close is posted back to this one.
            auto& other = (*st.shards)[(home + 1) % st.shards->size()];
            asio::post(other.get_executor(), [c] { c->close(quit); });
        }
    }
}

struct client_tally {
    std::atomic<int> finished{0}, answered{0}, failed{0}, goodbyes{0}, broadcasts{0}, errors{0};
};

// One client: a broadcast, a request it waits for, then QUIT (expects BYE quit) or just leaves.
asio::awaitable<void> client(tcp::endpoint ep, int id, client_tally& t) {
    tcp::socket s(co_await asio::this_coro::executor);
    auto [cec] = co_await s.async_connect(ep, tuple_awaitable);
    if (cec) {
        ++t.errors;
        ++t.finished;
        co_return;
    }
    const bool quits = id % 2 == 0;
    std::string out = "MSG from " + std::to_string(id) + "\nREQ " + std::to_string(id) + "\n";
    co_await asio::async_write(s, asio::buffer(out), tuple_awaitable);
    std::string buf;
    bool done = false;
    for (;;) {
        auto [ec, n] = co_await asio::async_read_until(s, asio::dynamic_buffer(buf), '\n', tuple_awaitable);
        if (ec) break;
        const std::string line = buf.substr(0, n - 1);
        buf.erase(0, n);
        std::string reply;
        if (line == "PING") reply = "PONG\n";
        else if (line.rfind("MSG ", 0) == 0) ++t.broadcasts;
        else if (line == "DONE " + std::to_string(id)) {
            ++t.answered;
            done = true;
            if (!quits) break; // leave: the server sees our end of stream
            reply = "QUIT\n";
        } else if (line.rfind("FAIL", 0) == 0) ++t.failed;
        else if (line == "BYE quit") {
            ++t.goodbyes;
            break;
        }
        if (!reply.empty()) co_await asio::async_write(s, asio::buffer(reply), tuple_awaitable);
    }
    if (!done) ++t.errors;
    heartwheel::error_code ignored;
    s.close(ignored);
    ++t.finished;
}

} // namespace

BOOST_AUTO_TEST_CASE(thousands_of_connections_across_four_threads_with_cross_strand_calls) {
    constexpr int total = 2000, concurrent = 200, threads = 4;
    net::liveness_counters counters;
    net::shards shards(threads, net::threading::thread_pool, policy(), &counters);
    server_state st;
    st.shards = &shards;

    tcp::acceptor acceptor(shards[0].get_executor(), {asio::ip::make_address("127.0.0.1"), 0});
    std::function<void()> accept = [&] {
        auto& home = shards.next();
        acceptor.async_accept(home.get_executor(), [&, &home = home](heartwheel::error_code ec, tcp::socket socket) {
            if (ec) return;
            ++st.accepted;
            // Made on its own shard's strand: its timers go into that shard's wheel.
            asio::post(home.get_executor(), [&, &home = home, s = std::move(socket)]() mutable {
                auto c = std::make_shared<connection>(std::move(s), home.context());
                net::connection_hooks hooks;
                hooks.send_ping = [raw = c.get()] { raw->send("PING\n"); };
                hooks.last_words = [raw = c.get()](net::close_reason r) {
                    raw->send(std::string("BYE ") + net::to_string(r) + "\n");
                };
                c->set_hooks(std::move(hooks));
                std::size_t index = 0;
                while (&shards[index] != &home) ++index;
                asio::co_spawn(home.get_executor(), serve(std::move(c), st, index), asio::detached);
            });
            accept();
        });
    };
    accept();
    std::thread pool([&] { shards.run(); });

    // The clients, on an io_context of their own, `concurrent` at a time.
    client_tally tally;
    asio::io_context clients;
    const auto ep = acceptor.local_endpoint();
    std::atomic<int> started{0};
    std::function<void()> launch = [&] {
        const int id = started++;
        if (id >= total) return;
        asio::co_spawn(clients, client(ep, id, tally), [&](std::exception_ptr) { launch(); });
    };
    for (int i = 0; i < concurrent; ++i) launch();
    clients.run_for(120s);

    // Every server connection closes (the client left, or QUIT): wait for the counts to settle.
    const auto until = std::chrono::steady_clock::now() + 30s;
    while (counters.snapshot().closes_total() < static_cast<std::uint64_t>(total) && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(10ms);
    shards.stop();
    pool.join();

    const auto snap = counters.snapshot();
    BOOST_TEST_MESSAGE("accepted " << st.accepted << ", answered " << tally.answered << ", goodbyes " << tally.goodbyes
                                   << ", broadcasts received " << tally.broadcasts << ", closes " << snap.closes_text());
    BOOST_TEST(tally.finished == total);
    BOOST_TEST(tally.errors == 0);
    BOOST_TEST(tally.failed == 0);
    BOOST_TEST(tally.answered == total);     // every request completed from the backend thread
    BOOST_TEST(tally.goodbyes == total / 2); // every cross-strand close said its goodbye
    BOOST_TEST(tally.broadcasts > 0);
    BOOST_TEST(st.accepted == static_cast<std::uint64_t>(total));
    BOOST_TEST(snap.closes_total() == static_cast<std::uint64_t>(total)); // each close counted once
    BOOST_TEST(snap.closes[static_cast<std::size_t>(quit)] == static_cast<std::uint64_t>(total / 2));
    BOOST_TEST(snap.requests == static_cast<std::uint64_t>(total));
    BOOST_TEST(snap.request_timeouts == 0u);
}

// A connection's policies arm its strand's wheel as it is made: made from another thread (a Beast-style
// accept handler on the acceptor's strand) they would race that wheel. It is refused, clearly, and the
// same socket can then be made into a connection inside its strand.
BOOST_AUTO_TEST_CASE(a_connection_made_outside_its_strand_is_refused) {
    net::liveness_counters counters;
    net::shards one(1, net::threading::thread_pool, policy(), &counters);
    auto& home = one[0];
    auto& io = home.io_context();
    tcp::acceptor acceptor(home.get_executor(), {asio::ip::make_address("127.0.0.1"), 0});
    tcp::socket peer(io);
    peer.connect(acceptor.local_endpoint());
    tcp::socket s = acceptor.accept(home.get_executor());

    BOOST_CHECK_THROW(std::make_shared<connection>(std::move(s), home.context()), std::logic_error);
    BOOST_TEST(home.wheel().size() == 0u); // nothing armed from the wrong thread

    std::shared_ptr<connection> made;
    asio::post(home.get_executor(), [&] { made = std::make_shared<connection>(acceptor.accept(home.get_executor()), home.context()); });
    tcp::socket peer2(io);
    peer2.connect(acceptor.local_endpoint());
    io.run_one(); // the post: made inside the strand
    BOOST_REQUIRE(made);
    BOOST_TEST(home.wheel().size() > 0u); // its heartbeat and reader idle are armed
    asio::post(home.get_executor(), [&] { made->abort(net::close_reason::shutdown); });
    io.run_for(200ms);
    BOOST_TEST(counters.snapshot().closes_total() == 1u);
}

// A pool shard hands out its strand as its own type (null with a thread per core), and a connection
// over a socket typed with it (24 bytes of executor, not any_io_executor's 56) keeps the strand's
// rules: refused when made outside the strand, armed and closed once when made inside it.
BOOST_AUTO_TEST_CASE(a_pool_shard_names_its_strand_and_connections_typed_with_it_keep_its_rules) {
    using io_strand = net::shard::io_strand;
    using strand_socket = asio::basic_stream_socket<tcp, io_strand>;
    using strand_connection = net::connection<strand_socket>;
    net::shards per_core(1, net::threading::thread_per_core, policy());
    BOOST_TEST(per_core[0].strand() == nullptr);

    net::liveness_counters counters;
    net::shards one(1, net::threading::thread_pool, policy(), &counters);
    auto& home = one[0];
    auto& io = home.io_context();
    BOOST_REQUIRE(home.strand() != nullptr);
    BOOST_TEST((*home.strand() == *home.get_executor().target<io_strand>())); // the same strand, typed
    BOOST_TEST(!home.strand()->running_in_this_thread());

    tcp::acceptor acceptor(home.get_executor(), {asio::ip::make_address("127.0.0.1"), 0});
    tcp::socket peer(io);
    peer.connect(acceptor.local_endpoint());
    strand_socket s = acceptor.accept(*home.strand());
    BOOST_CHECK_THROW(std::make_shared<strand_connection>(std::move(s), home.context()), std::logic_error);
    BOOST_TEST(home.wheel().size() == 0u);

    std::shared_ptr<strand_connection> made;
    asio::post(*home.strand(), [&] {
        made = std::make_shared<strand_connection>(acceptor.accept(*home.strand()), home.context());
    });
    tcp::socket peer2(io);
    peer2.connect(acceptor.local_endpoint());
    io.run_one();
    BOOST_REQUIRE(made);
    BOOST_TEST(home.wheel().size() > 0u);
    asio::post(*home.strand(), [&] { made->abort(net::close_reason::shutdown); });
    io.run_for(200ms);
    BOOST_TEST(counters.snapshot().closes_total() == 1u);
}

// Thread per core: each shard on an io_context of its own and a thread of its own (the caller's one of
// them), every shard's wheel firing on its own thread; stop() from another thread ends run(); a
// handler's exception stops every shard and comes out of run().
BOOST_AUTO_TEST_CASE(shards_run_either_model_until_stopped) {
    for (const auto model : {net::threading::thread_per_core, net::threading::thread_pool}) {
        net::shards group(3, model, policy());
        std::mutex m;
        std::set<std::thread::id> fired_on;
        std::atomic<int> fired{0};
        std::vector<heartwheel::timer_handle> timers(group.size());
        for (std::size_t i = 0; i < group.size(); ++i)
            asio::post(group[i].get_executor(), [&, i] {
                auto& sh = group[i];
                timers[i] = sh.wheel().schedule_after(20ms, [&] {
                    std::lock_guard l(m);
                    fired_on.insert(std::this_thread::get_id());
                    ++fired;
                });
            });
        std::thread stopper([&] {
            while (fired < 3) std::this_thread::sleep_for(1ms);
            group.stop();
        });
        group.run();
        stopper.join();
        BOOST_TEST(fired == 3);
        if (model == net::threading::thread_per_core) BOOST_TEST(fired_on.size() == 3u); // each on its own thread
        timers.clear();
    }
    net::shards failing(2, net::threading::thread_per_core, policy());
    asio::post(failing[1].get_executor(), [] { throw std::runtime_error("a handler failed"); });
    BOOST_CHECK_EXCEPTION(failing.run(), std::runtime_error,
                          [](const std::runtime_error& e) { return std::string(e.what()) == "a handler failed"; });
    BOOST_CHECK_THROW(net::shards(0, net::threading::thread_pool, policy()), net::config_error);
}

// Shards on an io_context the application owns and runs on threads of its own (a service that already
// has one): each shard is a strand of it, its wheel fires on the application's threads, a connection
// made on a shard is judged there; shutdown() lets the wheels go and leaves the io_context to its
// owner, which keeps running what it runs.
BOOST_AUTO_TEST_CASE(shards_run_on_an_io_context_the_application_owns) {
    asio::io_context io;
    auto work = asio::make_work_guard(io);
    std::vector<std::thread> app_threads;
    for (int i = 0; i < 2; ++i) app_threads.emplace_back([&] { io.run(); });
    std::set<std::thread::id> app_ids;
    for (auto& t : app_threads) app_ids.insert(t.get_id());
    net::liveness_counters counters;
    net::liveness_config cfg;
    cfg.idle.reader_idle = 50ms;
    auto group = std::make_unique<net::shards>(io, 2, cfg, &counters);
    BOOST_TEST((group->model() == net::threading::thread_pool));
    BOOST_TEST(&(*group)[0].io_context() == &io);
    BOOST_TEST((*group)[0].strand() != nullptr);
    BOOST_TEST(((*group)[0].get_executor() != (*group)[1].get_executor())); // a strand each

    tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
    tcp::socket peer(io);
    peer.connect(acceptor.local_endpoint());
    auto& home = group->next();
    tcp::socket s = acceptor.accept(home.get_executor());
    std::promise<std::pair<std::thread::id, net::close_reason>> closed_on; // checked here: Boost.Test is one thread's
    std::shared_ptr<connection> c;
    asio::post(home.get_executor(), [&] {
        c = std::make_shared<connection>(std::move(s), home.context());
        net::connection_hooks hooks;
        hooks.on_close = [&](net::close_reason r) { closed_on.set_value({std::this_thread::get_id(), r}); };
        c->set_hooks(std::move(hooks));
    });
    auto f = closed_on.get_future();
    BOOST_TEST_REQUIRE((f.wait_for(5s) == std::future_status::ready)); // judged by the shard's wheel
    const auto [thread, reason] = f.get();
    BOOST_TEST((reason == net::close_reason::reader_idle));
    BOOST_TEST(app_ids.count(thread) == 1u); // on the application's threads
    BOOST_TEST(counters.snapshot().closes_total() == 1u);

    // The owner stops its threads; then the shards go (before the io_context they run on), and the
    // io_context is still the owner's to run.
    work.reset();
    io.stop();
    for (auto& t : app_threads) t.join();
    group->shutdown();
    c.reset();
    group.reset();
    bool ran = false;
    io.restart();
    asio::post(io, [&] { ran = true; });
    io.run();
    BOOST_TEST(ran);
}

// shutdown(): before the shards go, every handler still queued on a shard is destroyed (not run) and
// what it holds with it — the moment an application with registries of its own needs (echo_server's
// workers); the wheels let go first, so a timer destroyed afterwards touches nothing.
BOOST_AUTO_TEST_CASE(shards_shutdown_destroys_queued_handlers_while_the_application_lives) {
    for (const auto model : {net::threading::thread_per_core, net::threading::thread_pool}) {
        net::shards group(2, model, policy());
        std::atomic<int> destroyed{0};
        bool ran = false;
        struct held {
            explicit held(std::atomic<int>& c) : count(&c) {}
            held(const held&) = delete;
            held& operator=(const held&) = delete;
            ~held() { ++*count; }
            std::atomic<int>* count;
        };
        std::vector<heartwheel::timer_handle> timers;
        for (std::size_t i = 0; i < group.size(); ++i) {
            auto h = std::make_shared<held>(destroyed);
            asio::post(group[i].get_executor(), [h, &ran] { ran = true; });
            timers.push_back(group[i].wheel().schedule_after(1h, [] {}));
        }
        group.shutdown();
        BOOST_TEST(destroyed == 2); // now, not when `group` goes
        BOOST_TEST(!ran);
        timers.clear(); // after the wheels let go: nothing to touch
        group.shutdown(); // idempotent
    }
}
