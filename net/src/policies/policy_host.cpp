// policy_host.cpp — the defaults of the policies' one interface; see policy_runtime.hpp.
#include <heartwheel/net/detail/unit_random.hpp>
#include <heartwheel/net/metrics/counters.hpp>
#include <heartwheel/net/policies/idle_state.hpp>
#include <heartwheel/net/policies/policy_runtime.hpp>

namespace heartwheel::net {

void policy_host::on_idle(idle_event) {}
void policy_host::send_ping() {
    if (!writer_) return;
    if (counters_) counters_->ping_sent();
    writer_->send_ping(); // last: a write may close
}
void policy_host::on_dead() { close_for(close_reason::heartbeat_timeout); }
double policy_host::uniform() { return detail::unit_random(); }

} // namespace heartwheel::net
