// asio_wheel.cpp — arming the one steady_timer, and advancing the wheel when it fires.
//
// Invariant: while the wheel has a pending timer, either the steady_timer is armed at or before the
// next occupied slot's time or exact deadline (armed_ / armed_at_), or an advance is posted
// (advance_posted_), or an advance is running (advancing_) and will arm or post on its way out.
#include <heartwheel/asio_wheel.hpp>
#include <heartwheel/error.hpp>

namespace heartwheel {

asio_wheel::asio_wheel(executor_type ex, wheel_config config)
    : ex_(ex), wheel_(clock::now(), config), timer_(ex), activity_(ex),
      self_(std::make_shared<asio_wheel*>(this)), now_(clock::now()) {
    wheel_.set_empty_hook([](void* self) { static_cast<asio_wheel*>(self)->disarm(); }, this);
}

void asio_wheel::disarm() noexcept {
    if (!armed_) return;
    armed_ = false; // nothing pending: do not wake at all
    timer_.cancel();
}

asio_wheel::~asio_wheel() {
    *self_ = nullptr;
    wheel_.set_empty_hook(nullptr, nullptr);
    for (timer_node* t : wheel_.stop())
        if (auto* op = dynamic_cast<completion_node*>(t)) op->complete(errc::wheel_stopped);
}

void asio_wheel::schedule_at(timer_node& t, time_point deadline) {
    wheel_.schedule(t, deadline);
    after_schedule(t);
}

void asio_wheel::schedule_every(periodic_timer& t, duration period, missed_tick policy) {
    wheel_.schedule_periodic(t, saturating_add(refresh_now(), period), period, policy);
    after_schedule(t);
}

void asio_wheel::schedule_exact(timer_node& t, time_point deadline) {
    wheel_.schedule_exact(t, deadline);
    after_schedule(t);
}

bool asio_wheel::cancel(timer_node& t) noexcept { return wheel_.cancel(t); }

void asio_wheel::touch(timer_node& t, time_point deadline) {
    if (wheel_.touch(t, deadline)) after_schedule(t); // a lazy touch never needs an earlier wake-up
}

void asio_wheel::schedule_after(timer_node& t, duration delay) { schedule_at(t, saturating_add(refresh_now(), delay)); }

timer_handle asio_wheel::schedule_after(duration delay, std::function<void()> fn) {
    timer_handle h(std::move(fn));
    schedule_after(h.node(), delay);
    return h;
}

timer_handle asio_wheel::schedule_every(duration period, std::function<void()> fn, missed_tick policy) {
    timer_handle h(std::move(fn));
    schedule_every(h.node(), period, policy);
    return h;
}

void asio_wheel::start_wait(detail::wait_op_base& op, time_point when) {
    if (auto ec = wheel_.try_schedule(op, when)) {
        op.complete(ec);
        return;
    }
    op.connect_cancellation();
    after_schedule(op);
}

void asio_wheel::after_schedule(timer_node& t) {
    if (advancing_ || advance_posted_) return; // the running/posted advance arms on its way out
    if (wheel_.has_due()) {
        post_advance();
        return;
    }
    const time_point when = wheel_.filed_wakeup(t);
    if (!armed_ || when < armed_at_) arm(when);
}

void asio_wheel::arm(time_point when) {
    armed_ = true;
    armed_at_ = when;
    ++stats_.rearms;
    timer_.expires_at(when);
    timer_.async_wait([weak = std::weak_ptr<asio_wheel*>(self_)](error_code ec) {
        auto alive = weak.lock();
        if (ec || !alive || *alive == nullptr) return; // re-armed, cancelled or destroyed
        asio_wheel& self = **alive;
        self.armed_ = false;
        ++self.stats_.wakeups;
        self.record_lateness();
        self.run_advance();
    });
}

void asio_wheel::record_lateness() noexcept {
    const auto late = std::chrono::duration_cast<std::chrono::microseconds>(
                          saturating_sub(refresh_now(), armed_at_))
                          .count();
    const std::int64_t us = late > 0 ? late : 0;
    std::size_t b = 0;
    while (b < driver_stats::lateness_bounds_us.size() && us > driver_stats::lateness_bounds_us[b]) ++b;
    ++stats_.lateness[b];
    stats_.lateness_total_us += us;
}

void asio_wheel::post_advance() {
    if (advance_posted_) return;
    advance_posted_ = true;
    asio::post(ex_, [weak = std::weak_ptr<asio_wheel*>(self_)] {
        auto alive = weak.lock();
        if (!alive || *alive == nullptr) return;
        (*alive)->advance_posted_ = false;
        (*alive)->run_advance();
    });
}

void asio_wheel::run_advance() {
    if (wheel_.stopped()) return;
    {
        advancing_ = true;
        struct reset {
            bool& flag;
            ~reset() { flag = false; }
        } guard{advancing_};
        ++stats_.advances;
        try {
            stats_.fired += wheel_.advance(refresh_now());
        } catch (...) {
            post_advance(); // a callback threw: whatever is still due runs on the next turn
            throw;
        }
    }
    if (wheel_.has_due()) {
        post_advance(); // budget ran out, or a timer re-armed itself into this advance: let I/O run
        return;
    }
    const auto next = wheel_.next_wakeup();
    if (!next) {
        disarm();
        return;
    }
    if (!armed_ || *next < armed_at_) arm(*next);
}

std::vector<timer_node*> asio_wheel::shutdown() {
    auto unfired = wheel_.stop();
    disarm();
    std::vector<timer_node*> handed_back;
    for (timer_node* t : unfired) {
        if (auto* op = dynamic_cast<completion_node*>(t)) op->complete(errc::wheel_stopped);
        else handed_back.push_back(t);
    }
    return handed_back;
}

} // namespace heartwheel
