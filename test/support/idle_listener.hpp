// idle_listener.hpp — a liveness_handler that hands a connection_liveness's idle events to a lambda
// and closes on none of them (events repeat while idleness lasts), for tests of the idle kinds as a
// connection runs them:
//   hwtest::idle_listener on(svc, [&](idle_event e) { ... });
//   connection_liveness idle(svc, hwtest::idle_only(policy), on);
#ifndef HWTEST_IDLE_LISTENER_HPP
#define HWTEST_IDLE_LISTENER_HPP

#include <asio/io_context.hpp>
#include <heartwheel/net/policies/connection_liveness.hpp>

#include <utility>

namespace hwtest {

/// A config with only `p` on (no handshake deadline either).
inline heartwheel::net::liveness_config idle_only(const heartwheel::net::idle_policy& p) {
    heartwheel::net::liveness_config c;
    c.idle = p;
    c.limits.handshake_timeout = heartwheel::net::milliseconds(0);
    return c;
}

template <class F>
class idle_listener final : public heartwheel::net::liveness_handler {
public:
    idle_listener(heartwheel::timer_scheduler&, F f) : f_(std::move(f)) {}
    void on_idle(heartwheel::net::idle_event e) override { f_(e); }
    bool close_on_idle() const noexcept override { return false; }
    void on_policy_close(heartwheel::net::close_reason) override { ++closes; }
    asio::any_io_executor completion_executor() override { return io_.get_executor(); }
    bool input_waiting() override { return input; }

    int closes = 0;
    bool input = false; ///< what input_waiting() answers

private:
    F f_;
    asio::io_context io_;
};

} // namespace hwtest

#endif
