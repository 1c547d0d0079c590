// idle_listener.hpp — an idle_state::listener made of a lambda, for tests:
//   auto on = hwtest::idle_listener([&](idle_event e) { ... });
//   idle_state idle(svc, policy, on);
#ifndef HWTEST_IDLE_LISTENER_HPP
#define HWTEST_IDLE_LISTENER_HPP

#include <heartwheel/net/idle_state.hpp>

#include <utility>

namespace hwtest {

template <class F>
class idle_listener final : public heartwheel::net::idle_state::listener {
public:
    explicit idle_listener(F f) : f_(std::move(f)) {}
    void on_idle(heartwheel::net::idle_event e) override { f_(e); }

private:
    F f_;
};

} // namespace hwtest

#endif
