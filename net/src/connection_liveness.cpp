// connection_liveness.cpp — one stamp per I/O event fanned out to every policy; one close decision.
#include <heartwheel/net/connection_liveness.hpp>

#include <utility>

namespace heartwheel::net {

connection_liveness::connection_liveness(timer_service& svc, asio::any_io_executor ex,
                                         const liveness_config& config, callbacks cbs,
                                         liveness_counters* counters, timeout_scale* scale,
                                         heartbeat::random_source rnd)
    : svc_(svc), write_timeout_ms_(config.timeouts.write_timeout), cbs_(std::move(cbs)), counters_(counters), scale_(scale),
      idle_(svc, config.idle,
            [this](idle_event e) {
                if (counters_) counters_->idle_event(static_cast<int>(e.kind));
                if (cbs_.on_idle) cbs_.on_idle(e);
                if (cbs_.close_on_idle && e.first && !closed_)
                    decide_close(e.kind == idle_kind::reader   ? close_reason::reader_idle
                                 : e.kind == idle_kind::writer ? close_reason::writer_idle
                                                               : close_reason::all_idle);
            },
            &config.overload, scale),
      read_timeout_(svc, this, [](void* self, bool) { static_cast<connection_liveness*>(self)->decide_close(close_reason::read_timeout); }),
      write_timeout_(svc, this, [](void* self, bool) { static_cast<connection_liveness*>(self)->decide_close(close_reason::write_timeout); }),
      heartbeat_(svc, config.heartbeat,
                 {[this] {
                      if (counters_) counters_->ping_sent();
                      if (cbs_.send_ping) cbs_.send_ping();
                  },
                  [this] { decide_close(close_reason::heartbeat_timeout); },
                  [this] {
                      if (counters_) counters_->heartbeat_miss();
                  }},
                 rnd),
      limits_(svc, config.limits,
              {[this] { decide_close(close_reason::handshake_timeout); }, [this] { decide_close(close_reason::max_age); }, {}},
              rnd, &config.overload, scale),
      requests_(svc, std::move(ex), config.request, counters) {
    config.timeouts.validate();
    config.overload.validate();
    read_timeout_.start(config.timeouts.read_timeout, config.overload.read_timeout, scale_, svc_.stamp());
    const auto& o = config.overload;
    const std::pair<close_reason, bool> scalable[] = {
        {close_reason::reader_idle, o.reader_idle.enabled()},   {close_reason::writer_idle, o.writer_idle.enabled()},
        {close_reason::all_idle, o.all_idle.enabled()},         {close_reason::read_timeout, o.read_timeout.enabled()},
        {close_reason::handshake_timeout, o.handshake_timeout.enabled()}, {close_reason::max_age, o.max_age.enabled()}};
    for (const auto& [why, on] : scalable) {
        const auto bit = static_cast<unsigned>(why);
        if (on && bit < 16) scaled_reasons_ |= static_cast<std::uint16_t>(1u << bit);
    }
}

connection_liveness::~connection_liveness() { close(); }

bool connection_liveness::scaled_reason(close_reason why) const noexcept {
    const auto bit = static_cast<unsigned>(why);
    return bit < 16 && (scaled_reasons_ >> bit & 1u) != 0;
}

void connection_liveness::on_read(bool counts_as_idle_activity) {
    const time_point s = svc_.stamp();
    heartbeat_.on_read(s);
    read_timeout_.touch(s);
    if (counts_as_idle_activity) idle_.on_read(s);
}

void connection_liveness::on_write_started() {
    if (write_timeout_ms_.count() > 0 && !write_timeout_.running())
        write_timeout_.start(std::chrono::duration_cast<duration>(write_timeout_ms_), svc_.stamp());
}

void connection_liveness::on_write_progress() {
    const time_point s = svc_.stamp();
    write_timeout_.touch(s);
    idle_.on_write_progress(s);
}

void connection_liveness::on_write_complete(bool drained) {
    const time_point s = svc_.stamp();
    write_timeout_.touch(s);
    if (drained) write_timeout_.stop();
    idle_.on_write_complete(s);
    heartbeat_.on_write(s);
}

void connection_liveness::on_pong() {
    heartbeat_.on_pong(svc_.stamp());
    if (counters_) {
        counters_->pong_received();
        if (auto rtt = heartbeat_.last_rtt()) counters_->rtt(*rtt);
    }
}

void connection_liveness::decide_close(close_reason why) {
    if (closed_) return;
    if (counters_ && scale_ && scale_->scaled() && scaled_reason(why)) counters_->closed_while_scaled();
    close();
    if (cbs_.close) cbs_.close(why); // last: may destroy *this
}

void connection_liveness::close() {
    if (closed_) return;
    closed_ = true;
    idle_.stop();
    read_timeout_.stop();
    write_timeout_.stop();
    heartbeat_.stop();
    limits_.stop();
    requests_.fail_all(errc::connection_closed);
}

} // namespace heartwheel::net
