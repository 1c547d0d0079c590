// liveness.cpp — the steady_timer baseline.
#include "liveness.hpp"

namespace echo::baselines {

asio_liveness::asio_liveness(worker& w, heartwheel::net::liveness_handler& handler)
    : w_(w), handler_(handler), cfg_(w.options.live), self_(std::make_shared<asio_liveness*>(this)),
      reader_(w.ex), writer_(w.ex), all_(w.ex), write_timeout_(w.ex), ping_(w.ex), miss_(w.ex), handshake_(w.ex),
      age_(w.ex) {
    arm(reader_, cfg_.idle.reader_idle, &asio_liveness::reader_idle);
    arm(writer_, cfg_.idle.writer_idle, &asio_liveness::writer_idle);
    arm(all_, cfg_.idle.all_idle, &asio_liveness::all_idle);
    arm(ping_, cfg_.heartbeat.interval, &asio_liveness::send_ping);
    arm(age_, cfg_.limits.max_age, &asio_liveness::max_age);
    if (cfg_.timeouts.read_timeout.count() > 0) {
        read_timeout_ = std::make_unique<timer>(w.ex);
        arm(*read_timeout_, cfg_.timeouts.read_timeout, &asio_liveness::read_timed_out);
    }
}

asio_liveness::~asio_liveness() { *self_ = nullptr; }

void asio_liveness::arm(timer& t, std::chrono::milliseconds after, void (asio_liveness::*fn)()) {
    if (after.count() <= 0 || closed_) return;
    t.expires_after(after); // cancels the pending wait: an operation_aborted completion per re-arm
    t.async_wait([weak = std::weak_ptr<asio_liveness*>(self_), fn](std::error_code ec) {
        auto alive = weak.lock();
        if (ec || !alive || *alive == nullptr) return;
        ((**alive).*fn)();
    });
}

void asio_liveness::handshake_started() { arm(handshake_, cfg_.limits.handshake_timeout, &asio_liveness::handshake_timed_out); }

void asio_liveness::on_read(bool data) {
    read_since_ping_ = true;
    if (read_timeout_) arm(*read_timeout_, cfg_.timeouts.read_timeout, &asio_liveness::read_timed_out);
    if (data) {
        arm(reader_, cfg_.idle.reader_idle, &asio_liveness::reader_idle);
        arm(all_, cfg_.idle.all_idle, &asio_liveness::all_idle);
    }
}

void asio_liveness::on_write_started() {
    writing_ = true;
    arm(write_timeout_, cfg_.timeouts.write_timeout, &asio_liveness::write_timed_out);
}

void asio_liveness::on_write_progress() {
    arm(write_timeout_, cfg_.timeouts.write_timeout, &asio_liveness::write_timed_out);
    if (cfg_.idle.write_progress_is_activity) {
        arm(writer_, cfg_.idle.writer_idle, &asio_liveness::writer_idle);
        arm(all_, cfg_.idle.all_idle, &asio_liveness::all_idle);
    }
}

void asio_liveness::on_write_complete(bool drained) {
    if (drained) {
        writing_ = false;
        write_timeout_.cancel();
    }
    arm(writer_, cfg_.idle.writer_idle, &asio_liveness::writer_idle);
    arm(all_, cfg_.idle.all_idle, &asio_liveness::all_idle);
    arm(ping_, cfg_.heartbeat.interval, &asio_liveness::send_ping);
}

void asio_liveness::on_pong() {
    read_since_ping_ = true;
    w_.live_counters.pong_received();
    if (awaiting_pong_) {
        awaiting_pong_ = false;
        w_.live_counters.rtt(heartwheel::clock::now() - ping_sent_);
        // Answered: nothing to judge; a ping held back meanwhile goes out now.
        judging_ = false;
        miss_.cancel();
        misses_ = 0;
        if (ping_due_) send_ping();
    }
}

// One ping outstanding at a time, as net's heartbeat: a ping that falls due while the previous one is
// neither answered nor judged goes out when it is (the timeout may be longer than the interval).
void asio_liveness::send_ping() {
    if (closed_) return;
    if (judging_) {
        ping_due_ = true;
        return;
    }
    ping_due_ = false;
    judging_ = true;
    ping_sent_ = heartwheel::clock::now();
    awaiting_pong_ = true;
    read_since_ping_ = false;
    arm(miss_, cfg_.heartbeat.timeout, &asio_liveness::judge_ping);
    arm(ping_, cfg_.heartbeat.interval, &asio_liveness::send_ping);
    if (!pinger_) return; // nothing can be written yet (or any more): judged all the same
    w_.live_counters.ping_sent();
    pinger_->send_ping();
}

void asio_liveness::judge_ping() {
    judging_ = false;
    if (read_since_ping_) {
        misses_ = 0;
    } else {
        ++misses_;
        w_.live_counters.heartbeat_miss();
        if (misses_ >= cfg_.heartbeat.misses) {
            // steady_timers have no tick: any lateness is past their bound
            w_.live_counters.heartbeat_death(heartwheel::clock::now() - (ping_sent_ + cfg_.heartbeat.timeout),
                                             heartwheel::duration::zero());
            return decide(close_reason::heartbeat_timeout);
        }
    }
    if (ping_due_) send_ping();
}

void asio_liveness::decide(close_reason r) {
    if (closed_) return;
    close();
    handler_.on_policy_close(r); // counted by the connection's close path
}

void asio_liveness::close() {
    closed_ = true;
    for (timer* t : {&reader_, &writer_, &all_, &write_timeout_, &ping_, &miss_, &handshake_, &age_}) t->cancel();
    if (read_timeout_) read_timeout_->cancel();
}

} // namespace echo::baselines
