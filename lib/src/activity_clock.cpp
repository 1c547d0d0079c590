// activity_clock.cpp — opening and closing stamp batches; see activity_clock.hpp for the invariant.
#include <heartwheel/activity_clock.hpp>

#include <asio/post.hpp>

namespace heartwheel {

activity_clock::activity_clock(asio::any_io_executor ex)
    : ex_(std::move(ex)), self_(std::make_shared<activity_clock*>(this)) {}

activity_clock::~activity_clock() { *self_ = nullptr; }

void activity_clock::open_batch() {
    open_ = true;
    batch_start_ = clock::now();
    // Runs after the handlers that are ready now: everything stamped until then has happened by `end`.
    asio::post(ex_, [weak = std::weak_ptr<activity_clock*>(self_)] {
        auto alive = weak.lock();
        if (!alive || *alive == nullptr) return;
        activity_clock& self = **alive;
        const auto span = clock::now() - self.batch_start_;
        if (span > self.max_span_) self.max_span_ = span;
        self.open_ = false;
    });
}

time_point activity_clock::latest_possible(time_point s) const {
    if (open_ && s == batch_start_) return clock::now();
    return s + max_span_;
}

} // namespace heartwheel
