// libevent_system.hpp — libevent timers: plain (a min-heap inside the event_base) or with
// event_base_init_common_timeout, which keeps one FIFO queue per distinct duration. For the common
// variant the 1–30 s deadlines are rounded to whole seconds, giving 30 queues.
#ifndef HEARTWHEEL_BENCH_LIBEVENT_SYSTEM_HPP
#define HEARTWHEEL_BENCH_LIBEVENT_SYSTEM_HPP

#include "common.hpp"

#include <event2/event.h>
#include <event2/event_struct.h>

#include <array>
#include <memory>

namespace bench {

template <bool Common>
class libevent_system {
public:
    static constexpr const char* name = Common ? "libevent common-timeout" : "libevent";

    explicit libevent_system(std::size_t n) : base_(event_base_new()), events_(new event[n]) {
        for (std::size_t i = 0; i < n; ++i) event_assign(&events_[i], base_, -1, 0, &on_timer, nullptr);
        if (Common) {
            for (int s = 0; s <= 30; ++s) {
                const timeval tv{s, 0};
                common_[s] = event_base_init_common_timeout(base_, &tv);
            }
        }
    }
    ~libevent_system() {
        event_base_free(base_); // detaches the events still added; they are freed after
        events_.reset();
    }

    void arm(std::size_t i, std::int64_t delay) {
        if (Common) {
            event_add(&events_[i], common_[static_cast<std::size_t>(delay / 1'000'000'000) % 31]);
        } else {
            const timeval tv{static_cast<time_t>(delay / 1'000'000'000), static_cast<suseconds_t>(delay % 1'000'000'000 / 1000)};
            event_add(&events_[i], &tv);
        }
    }
    void cancel(std::size_t i) { event_del(&events_[i]); }
    void rearm(std::size_t i, std::int64_t delay) { arm(i, delay); }
    void arm_expired(std::size_t i, std::int64_t) {
        if (Common) event_add(&events_[i], common_[0]);
        else {
            const timeval tv{0, 0};
            event_add(&events_[i], &tv);
        }
    }
    std::size_t expire_all() {
        const auto before = fired_counter();
        event_base_loop(base_, EVLOOP_NONBLOCK);
        return fired_counter() - before;
    }
    /// A system on the real clock: time passing means running its loop once without blocking.
    std::size_t advance_to(std::int64_t) {
        const auto before = fired_counter();
        event_base_loop(base_, EVLOOP_NONBLOCK);
        return fired_counter() - before;
    }
    /// The harness's own step of every operation: from a timer's number to the timer (instructions' `loop`).
    const void* address_of(std::size_t i) const { return &events_[i]; }

private:
    static void on_timer(evutil_socket_t, short, void*) { ++fired_counter(); }
    event_base* base_;
    std::unique_ptr<event[]> events_;
    std::array<const timeval*, 31> common_{};
};

} // namespace bench

#endif
