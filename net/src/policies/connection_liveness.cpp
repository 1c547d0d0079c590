// connection_liveness.cpp — one stamp per I/O event fanned out to the enabled policies; one timer
// node for the idle kinds and the max age; one close decision.
#include <heartwheel/net/policies/connection_liveness.hpp>

#include <algorithm>
#include <utility>

namespace heartwheel::net {

namespace {
detail::settings_ref interned(const liveness_config& config, bool scaled) {
    config.overload.validate(); // not the liveness's: the overload's policy is read by timeout_scale
    return detail::intern(config, scaled);
}
} // namespace

connection_liveness::connection_liveness(timer_scheduler& svc, const liveness_config& config, liveness_handler& handler,
                                         liveness_counters* counters, timeout_scale* scale)
    : connection_liveness(svc, interned(config, scale != nullptr), handler, counters, scale) {}

connection_liveness::connection_liveness(timer_scheduler& svc, detail::settings_ref settings, liveness_handler& handler,
                                         liveness_counters* counters, timeout_scale* scale)
    : policy_host(svc, scale, counters), handler_(&handler), settings_(std::move(settings)),
      idle_(settings_->config.idle, *this, scale),
      limits_(settings_->config.limits, static_cast<activity_timer::listener&>(*this), scale),
      runtimes_(*this, settings_->config) {
    const heartbeat_policy& hb = settings_->config.heartbeat;
    if (hb.enabled()) heartbeat_ = std::make_unique<heartbeat>(hb, static_cast<heartbeat::listener&>(*this));
    arm(idle_due());
}

connection_liveness::~connection_liveness() { close(); }

request_tracker<std::uint64_t>& connection_liveness::requests() {
    if (!requests_) {
        requests_ = std::make_unique<request_tracker<std::uint64_t>>(*svc_, handler_->completion_executor(),
                                                                     settings_->config.request,
                                                                     counters_);
        if (closed()) requests_->close(errc::connection_closed); // first used after the close
    }
    return *requests_;
}

void connection_liveness::on_read(bool counts_as_idle_activity, time_point arrived) {
    const time_point s = svc_->stamp();
    if (heartbeat_) heartbeat_->on_read(s, arrived);
    runtimes_.on_read(*this, settings_->config, s);
    if (counts_as_idle_activity) idle_.on_read(s);
}

void connection_liveness::on_message() { idle_.on_read(svc_->stamp()); }

void connection_liveness::on_write_started() {
    if (!closed()) runtimes_.on_write_started(*this, settings_->config);
}

void connection_liveness::on_write_progress() {
    const time_point s = svc_->stamp();
    runtimes_.on_write_progress(*this, settings_->config, s);
    idle_.on_write_progress(s);
}

void connection_liveness::on_write_complete(bool drained) {
    const time_point s = svc_->stamp();
    runtimes_.on_write_complete(*this, settings_->config, s, drained);
    idle_.on_write_complete(s);
    if (heartbeat_) heartbeat_->on_write(s);
}

void connection_liveness::handshake_started() {
    limits_.handshake_started(settings_->config.limits, *this, scale_);
    if (heartbeat_) heartbeat_->stop();
}

void connection_liveness::handshake_done() {
    limits_.handshake_done();
    if (heartbeat_ && !closed()) heartbeat_->restart();
}

void connection_liveness::on_pong() {
    // Exact: one clock read per ping round.
    const auto rtt = heartbeat_ ? heartbeat_->on_pong(svc_->fresh_now()) : std::nullopt;
    if (!counters_) return;
    counters_->pong_received();
    if (rtt) counters_->rtt(*rtt);
}

void connection_liveness::arm(time_point idle_at) {
    const time_point due = std::min({idle_at, limits_.age_due(), phase_due_});
    if (due != time_point::max()) svc_->schedule(*this, due);
}

void connection_liveness::expire_phase_at(time_point due) {
    if (closed()) return;
    phase_due_ = due;
    arm(idle_due());
}

bool connection_liveness::judges_only_phase() const noexcept {
    const liveness_config& c = settings_->config;
    return !closed() && c.idle.reader_idle.count() == 0 && c.idle.writer_idle.count() == 0 &&
           c.idle.all_idle.count() == 0 && c.limits.max_age.count() == 0 && c.timeouts.read_timeout.count() == 0 &&
           heartbeat_ == nullptr && outstanding_requests() == 0;
}

void connection_liveness::on_expire() {
    const time_point now = svc_->now();
    if (limits_.age_due() <= now) return close_for(close_reason::max_age); // last: may destroy *this
    if (phase_due_ <= now) {
        const time_point due = std::exchange(phase_due_, time_point::max());
        arm(idle_due()); // before the handler: it may close, and a close may destroy *this
        return handler_->on_phase_deadline(due);
    }
    if (const time_point due = idle_due(); due > now) return arm(due); // woken early: activity moved them on
    // The peer's bytes wait unread (a process stall): no idle judgement until they are read.
    if (handler_->input_waiting()) return arm(saturating_add(now, unread_input_recheck));
    idle_event events[3];
    const std::size_t n = idle_.take(settings_->config.idle, *svc_, now, events);
    arm(idle_due()); // before the events: each may close, and a close may destroy *this
    for (std::size_t i = 0; i < n; ++i)
        if (!idle(events[i])) return;
}

void connection_liveness::on_expired(activity_timer& t, bool) {
    close_for(limits_.expired(t) == connection_limits::deadline::handshake ? close_reason::handshake_timeout
                                                                           : close_reason::max_age); // last
}

bool connection_liveness::idle(idle_event e) {
    if (counters_) counters_->idle_event(e.kind);
    handler_->on_idle(e);
    if (closed()) return false; // the handler closed it
    if (!e.first || !handler_->close_on_idle()) return true;
    close_for(e.kind == idle_kind::reader   ? close_reason::reader_idle
              : e.kind == idle_kind::writer ? close_reason::writer_idle
                                            : close_reason::all_idle);
    return false; // last: may have destroyed *this
}

void connection_liveness::on_dead() {
    if (counters_)
        counters_->heartbeat_death(svc_->fresh_now() - heartbeat_->judgement_deadline(), svc_->tick());
    close_for(close_reason::heartbeat_timeout);
}

void connection_liveness::on_miss() {
    if (counters_) counters_->heartbeat_miss();
}

void connection_liveness::close_for(close_reason why) {
    if (closed()) return;
    if (counters_ && scale_ && scale_->scaled() && settings_->scaled_reason(why)) counters_->closed_while_scaled();
    close();
    handler_->on_policy_close(why); // last: may destroy *this
}

void connection_liveness::close() {
    if (closed()) return;
    idle_.stop(); // first: closed() from here on
    cancel();     // the node: idle kinds and max age
    runtimes_.stop();
    if (heartbeat_) heartbeat_->stop();
    limits_.stop();
    if (requests_) requests_->close(errc::connection_closed);
}

} // namespace heartwheel::net
