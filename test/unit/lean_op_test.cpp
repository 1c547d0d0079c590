// lean_op_test.cpp — net::detail::async_lean_op, the composed operation the framing layers' reads are:
// its step handler is one pointer (so an idle read's wait fits the stream core), it never completes
// inside its initiating call, it frees its state before the application's handler runs, runs that
// handler on the handler's own executor, keeps a foreign executor's context working while pending,
// and, abandoned, destroys the handler without running it.
#include <boost/test/unit_test.hpp>

#include <heartwheel/net/detail/lean_op.hpp>

#include "test_asio.hpp"

#include <memory>
#include <optional>

namespace net = heartwheel::net;

namespace {

// Steps: `posts` times through the executor, then completes with `value`. Sets `*destroyed` when
// its state goes.
struct counted_op {
    asio::io_context::executor_type ex;
    int posts = 0;
    int value = 0;
    std::shared_ptr<bool> destroyed;
    struct on_destroy {
        std::shared_ptr<bool> flag;
        explicit on_destroy(std::shared_ptr<bool> f) : flag(std::move(f)) {}
        on_destroy(on_destroy&& o) noexcept : flag(std::move(o.flag)) {} // a moved-from state is not the state
        ~on_destroy() {
            if (flag) *flag = true;
        }
    } guard;

    auto get_executor() const noexcept { return ex; }
    template <class Self>
    void operator()(Self& self) {
        if (posts-- > 0) return asio::post(ex, std::move(self));
        self.complete(error_code{}, value);
    }
};

template <class Token>
auto async_counted(asio::io_context& io, int posts, int value, std::shared_ptr<bool> destroyed, Token&& token) {
    return net::detail::async_lean_op<void(error_code, int)>(counted_op{io.get_executor(), posts, value, destroyed, counted_op::on_destroy{destroyed}},
                                                            std::forward<Token>(token));
}

} // namespace

BOOST_AUTO_TEST_SUITE(lean_op)

BOOST_AUTO_TEST_CASE(its_step_handler_is_one_pointer) {
    using self = net::detail::lean_self<counted_op, void (*)(error_code, int), error_code, int>;
    static_assert(sizeof(self) == sizeof(void*));
    BOOST_TEST(sizeof(self) == sizeof(void*));
}

BOOST_AUTO_TEST_CASE(an_operation_ending_in_its_initiation_completes_later) {
    asio::io_context io;
    auto destroyed = std::make_shared<bool>(false);
    std::optional<int> got;
    async_counted(io, 0, 7, destroyed, [&](error_code ec, int v) {
        BOOST_TEST(!ec);
        got = v;
    });
    BOOST_TEST(!got.has_value()); // not inside the initiating call
    BOOST_TEST(*destroyed);       // its state is gone already
    io.run();
    BOOST_REQUIRE(got.has_value());
    BOOST_TEST(*got == 7);
}

BOOST_AUTO_TEST_CASE(the_state_is_freed_before_the_handler_runs) {
    asio::io_context io;
    auto destroyed = std::make_shared<bool>(false);
    int calls = 0;
    bool destroyed_when_called = false;
    async_counted(io, 3, 42, destroyed, [&](error_code, int v) {
        ++calls;
        destroyed_when_called = *destroyed;
        BOOST_TEST(v == 42);
    });
    BOOST_TEST(!*destroyed); // pending
    io.run();
    BOOST_TEST(calls == 1);
    BOOST_TEST(destroyed_when_called);
}

BOOST_AUTO_TEST_CASE(the_handler_runs_on_its_own_executor) {
    asio::io_context io;
    auto strand = asio::make_strand(io);
    bool on_strand = false;
    async_counted(io, 2, 1, std::make_shared<bool>(false),
                  asio::bind_executor(strand, [&](error_code, int) { on_strand = strand.running_in_this_thread(); }));
    io.run();
    BOOST_TEST(on_strand);
}

BOOST_AUTO_TEST_CASE(a_foreign_executor_is_kept_working_while_pending) {
    asio::io_context io, other;
    bool ran = false;
    async_counted(io, 2, 1, std::make_shared<bool>(false), asio::bind_executor(other, [&](error_code, int) { ran = true; }));
    other.poll();
    BOOST_TEST(!other.stopped()); // work outstanding: the operation is pending
    io.run();                     // the operation ends and hands its handler to `other`
    BOOST_TEST(!ran);
    other.run();
    BOOST_TEST(ran);
}

BOOST_AUTO_TEST_CASE(an_abandoned_operation_destroys_its_handler_unrun) {
    auto held = std::make_shared<int>(0);
    bool ran = false;
    auto destroyed = std::make_shared<bool>(false);
    {
        asio::io_context io;
        async_counted(io, 1, 1, destroyed, [&ran, held](error_code, int) { ran = true; });
        BOOST_TEST(held.use_count() == 2); // the pending step holds the handler
    } // the io_context goes with the step queued
    BOOST_TEST(!ran);
    BOOST_TEST(*destroyed);
    BOOST_TEST(held.use_count() == 1);
}

BOOST_AUTO_TEST_SUITE_END()
