// write_queue.cpp — chunks of whole messages; see write_queue.hpp for the invariants.
#include <heartwheel/net/connection/write_queue.hpp>

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace heartwheel::net {

namespace {
std::uint32_t narrow(std::size_t v) noexcept {
    return static_cast<std::uint32_t>(std::min<std::size_t>(v, std::numeric_limits<std::uint32_t>::max()));
}

} // namespace

write_queue::write_queue(write_queue_limits limits)
    : chunk_bytes_(narrow(limits.chunk_bytes)), keep_capacity_(narrow(limits.keep_capacity)) {}

write_queue::~write_queue() = default;

write_queue::chunk write_queue::take_spare() noexcept {
    chunk s;
    if (more_) {
        s.swap(more_->spare);
        release_more();
    }
    s.clear();
    return s;
}

void write_queue::append(const std::string_view* parts, std::size_t part_count) {
    std::size_t size = 0;
    for (std::size_t i = 0; i < part_count; ++i) size += parts[i].size();
    if (size == 0) return;
    if (size > std::numeric_limits<std::uint32_t>::max()) throw std::length_error("write_queue: message of 4 GiB or more");
    // A new chunk when there is none, the last one is in flight, or the message would overflow it.
    const std::size_t count = chunk_count();
    const bool last_in_flight = in_flight_ && count == 1;
    if (count == 0) {
        front_ = take_spare(); // reuse the kept capacity, if any
    } else if (last_in_flight || back().size() + size > chunk_bytes_) {
        chunk fresh = take_spare();
        if (!more_) more_ = std::make_unique<more>();
        more_->rest.push_back(std::move(fresh));
    }
    chunk& c = back();
    if (c.empty()) c.reserve(size); // a fresh chunk: one allocation for a message of several parts
    for (std::size_t i = 0; i < part_count; ++i) c.append(parts[i].data(), parts[i].size());
    queued_ += size;
}

std::string_view write_queue::next_bytes() {
    if (front_.empty()) return {};
    in_flight_ = true;
    return front_.view().substr(offset_);
}

bool write_queue::consumed(std::size_t n) {
    offset_ += static_cast<std::uint32_t>(n);
    queued_ -= n;
    if (offset_ < front_.size()) return false;
    in_flight_ = false;
    offset_ = 0;
    chunk done = std::move(front_);
    pop_front();
    if (keep_capacity_ > 0 && done.capacity() <= keep_capacity_ &&
        done.capacity() > (more_ ? more_->spare.capacity() : 0)) {
        done.clear();
        if (!more_) more_ = std::make_unique<more>();
        more_->spare.swap(done);
    }
    return true;
}

// The next chunk moves to the front; what only the backlog needed is released once it is empty.
void write_queue::pop_front() noexcept {
    if (!more_ || more_->rest.empty()) {
        front_.release();
        return;
    }
    front_ = std::move(more_->rest.front());
    more_->rest.erase(more_->rest.begin());
    release_more();
}

void write_queue::release_more() noexcept {
    if (!more_ || !more_->rest.empty()) return;
    if (more_->spare.capacity() > 0) {
        std::vector<chunk>().swap(more_->rest); // keep the spare, not the list's capacity
        return;
    }
    more_.reset();
}

std::size_t write_queue::memory() const noexcept {
    std::size_t m = front_.capacity();
    if (more_) {
        m += sizeof(more) + more_->spare.capacity() + more_->rest.capacity() * sizeof(chunk);
        for (const auto& c : more_->rest) m += c.capacity();
    }
    return m;
}

void write_queue::drop_pending() noexcept {
    if (more_) {
        std::vector<chunk>().swap(more_->rest);
        release_more();
    }
    if (in_flight_) {
        queued_ = front_.size() - offset_; // the rest of the write in flight stays
        return;
    }
    front_.release();
    queued_ = 0;
    offset_ = 0;
}

} // namespace heartwheel::net
