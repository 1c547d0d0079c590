// heartwheel/activity_clock.hpp — a cached clock for stamping I/O activity without a clock call per read.
//
// Idea: the first stamp() in a batch of ready handlers reads the real clock and posts a "close batch"
// handler; every later stamp() until that handler runs returns the same cached time (a branch and a
// load). So there is one clock call per event-loop batch, not per read or write.
// Invariant that keeps liveness checks honest: a stamp s returned for an activity at real time r obeys
// s <= r <= s + span(B), B the batch that opened at s (its span measured when it closes).
// latest_possible(s) returns an upper bound of that, so a deadline computed from it is never early
// against real time, and late by about the loop latency of the batches since s — not of the longest
// batch ever: one burst (2,000 connects at once) delays only the stamps taken before it ended.
//
// How: batches never overlap (one opens only after the previous closed), so the longest span among
// the batches that opened at or after s bounds span(B). The closed batches are kept as a list whose
// spans decrease from oldest to newest (a batch that closes pops the entries it outlasts: they can
// never be the longest for any stamp again); latest_possible(s) is s plus the span of the first entry
// that opened at or after s (a binary search), or s itself when none did (an exact time such as a
// fresh clock reading). The list is capped; what falls off its old end raises a floor kept for
// stamps older than everything left. Use from the executor's thread only.
#ifndef HEARTWHEEL_ACTIVITY_CLOCK_HPP
#define HEARTWHEEL_ACTIVITY_CLOCK_HPP

#include <heartwheel/clock.hpp>

#include <heartwheel/asio.hpp>

#include <memory>
#include <vector>

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

    /// The longest batch measured so far (for reports; latest_possible() uses the batches since a stamp).
    duration max_span() const noexcept { return max_span_; }

private:
    void open_batch();
    void close_batch();

    struct batch {
        time_point start;
        duration span;
    };
    static constexpr std::size_t max_batches = 64;

    asio::any_io_executor ex_;
    std::shared_ptr<activity_clock*> self_;
    time_point batch_start_{};
    duration max_span_{};
    std::vector<batch> batches_; ///< closed batches, spans decreasing from oldest to newest
    duration floor_{};           ///< the longest span dropped off the list's old end
    bool open_ = false;
};

} // namespace heartwheel

#endif
