// heartwheel/activity_clock.hpp — a cached clock for stamping I/O activity without a clock call per read.
//
// Idea: the first stamp() in a batch of ready handlers reads the real clock and posts a "close batch"
// handler; every later stamp() until that handler runs returns the same cached time (a branch and a
// load). So there is one clock call per event-loop batch, not per read or write.
// Invariant that keeps liveness checks honest: a stamp s returned for an activity at real time r obeys
// s <= r <= s + span, where span is the longest batch seen so far (measured when each batch closes).
// latest_possible(s) returns that upper bound, so a deadline computed from it is never early against
// real time; it is late by at most the loop latency of one batch. Use from the executor's thread only.
#ifndef HEARTWHEEL_ACTIVITY_CLOCK_HPP
#define HEARTWHEEL_ACTIVITY_CLOCK_HPP

#include <heartwheel/clock.hpp>

#include <asio/any_io_executor.hpp>

#include <memory>

namespace heartwheel {

class activity_clock {
public:
    explicit activity_clock(asio::any_io_executor ex);
    ~activity_clock();
    activity_clock(const activity_clock&) = delete;
    activity_clock& operator=(const activity_clock&) = delete;

    /// The time to record for an activity happening now. Cheap after the first call in a batch.
    time_point stamp() {
        if (!open_) open_batch();
        return batch_start_;
    }

    /// The latest real time at which an activity stamped `s` can have happened.
    time_point latest_possible(time_point s) const;

    /// The longest batch measured so far (what latest_possible() adds to a closed batch's stamp).
    duration max_span() const noexcept { return max_span_; }

private:
    void open_batch();

    asio::any_io_executor ex_;
    std::shared_ptr<activity_clock*> self_;
    time_point batch_start_{};
    duration max_span_{};
    bool open_ = false;
};

} // namespace heartwheel

#endif
