// activity_clock.cpp — opening and closing stamp batches; see activity_clock.hpp for the invariant.
#include <heartwheel/activity_clock.hpp>

#include <heartwheel/asio.hpp>

#include <algorithm>

namespace heartwheel {

activity_clock::activity_clock(asio::any_io_executor ex)
    : ex_(std::move(ex)), self_(std::make_shared<activity_clock*>(this)) {
    batches_.reserve(max_batches);
}

activity_clock::~activity_clock() { *self_ = nullptr; }

void activity_clock::open_batch() {
    open_ = true;
    batch_start_ = clock::now();
    // Runs after the handlers that are ready now: everything stamped until then has happened by `end`.
    asio::post(ex_, [weak = std::weak_ptr<activity_clock*>(self_)] {
        auto alive = weak.lock();
        if (!alive || *alive == nullptr) return;
        (*alive)->close_batch();
    });
}

void activity_clock::close_batch() {
    const duration span = clock::now() - batch_start_;
    if (span > max_span_) max_span_ = span;
    open_ = false;
    while (!batches_.empty() && batches_.back().span <= span) batches_.pop_back(); // outlasted
    if (batches_.size() == max_batches) {
        floor_ = std::max(floor_, batches_.front().span);
        batches_.erase(batches_.begin());
    }
    batches_.push_back({batch_start_, span});
}

time_point activity_clock::latest_possible(time_point s) const {
    if (open_ && s >= batch_start_) return std::max(s, clock::now()); // the open batch: not over yet
    const auto it = std::lower_bound(batches_.begin(), batches_.end(), s,
                                     [](const batch& b, time_point t) { return b.start < t; });
    if (it == batches_.end()) return s; // no batch opened at or after s: an exact time
    return s + (it == batches_.begin() ? std::max(floor_, it->span) : it->span);
}

} // namespace heartwheel
