// idle_listener.hpp — an idle_state::listener made of a scheduler and a lambda, for tests:
//   hwtest::idle_listener on(svc, [&](idle_event e) { ... });
//   idle_state idle(policy, on);
#ifndef HWTEST_IDLE_LISTENER_HPP
#define HWTEST_IDLE_LISTENER_HPP

#include <heartwheel/net/idle_state.hpp>

#include <utility>

namespace hwtest {

template <class F>
class idle_listener final : public heartwheel::net::idle_state::listener {
public:
    idle_listener(heartwheel::timer_scheduler& svc, F f) : svc_(&svc), f_(std::move(f)) {}
    heartwheel::timer_scheduler& scheduler() const noexcept override { return *svc_; }
    void on_idle(heartwheel::net::idle_event e) override { f_(e); }

private:
    heartwheel::timer_scheduler* svc_;
    F f_;
};

} // namespace hwtest

#endif
