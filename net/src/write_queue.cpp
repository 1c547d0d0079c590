// write_queue.cpp — chunks of whole messages; see write_queue.hpp for the invariants.
#include <heartwheel/net/write_queue.hpp>

namespace heartwheel::net {

void write_queue::append(std::initializer_list<std::string_view> parts) {
    std::size_t size = 0;
    for (auto p : parts) size += p.size();
    if (size == 0) return;
    // A new chunk when there is none, the last one is in flight, or the message would overflow it.
    const std::size_t count = chunk_count();
    const bool last_in_flight = in_flight_ && count == 1;
    if (count == 0 || last_in_flight || back().size() + size > limits_.chunk_bytes) {
        std::string& fresh = count == 0 ? front_ : rest_.emplace_back();
        fresh.swap(spare_); // reuse the kept capacity, if any
        fresh.clear();
    }
    std::string& c = back();
    for (auto p : parts) c.append(p.data(), p.size());
    queued_ += size;
}

std::string_view write_queue::next_bytes() {
    if (front_.empty()) return {};
    in_flight_ = true;
    return std::string_view(front_).substr(offset_);
}

bool write_queue::consumed(std::size_t n) {
    offset_ += n;
    queued_ -= n;
    if (offset_ < front_.size()) return false;
    in_flight_ = false;
    offset_ = 0;
    std::string done = std::move(front_);
    pop_front();
    if (limits_.keep_capacity > 0 && done.capacity() <= limits_.keep_capacity && done.capacity() > spare_.capacity()) {
        done.clear();
        spare_.swap(done);
    }
    return true;
}

namespace {
// Heap bytes a string holds: none while its characters fit in the object itself (SSO).
std::size_t heap_bytes(const std::string& s) noexcept {
    static const std::size_t inline_capacity = std::string().capacity();
    return s.capacity() > inline_capacity ? s.capacity() + 1 : 0;
}
} // namespace

// The next chunk moves to the front; the list of the rest is released once it is empty.
void write_queue::pop_front() noexcept {
    if (rest_.empty()) {
        std::string().swap(front_);
        return;
    }
    front_ = std::move(rest_.front());
    rest_.erase(rest_.begin());
    if (rest_.empty()) std::vector<std::string>().swap(rest_);
}

std::size_t write_queue::memory() const noexcept {
    std::size_t m = heap_bytes(spare_) + heap_bytes(front_) + rest_.capacity() * sizeof(std::string);
    for (const auto& c : rest_) m += heap_bytes(c);
    return m;
}

void write_queue::drop_pending() noexcept {
    std::vector<std::string>().swap(rest_);
    if (in_flight_) {
        queued_ = front_.size() - offset_; // the rest of the write in flight stays
        return;
    }
    std::string().swap(front_);
    queued_ = 0;
    offset_ = 0;
}

void write_queue::clear() noexcept {
    std::string().swap(front_);
    std::vector<std::string>().swap(rest_);
    std::string().swap(spare_);
    offset_ = 0;
    queued_ = 0;
    in_flight_ = false;
}

} // namespace heartwheel::net
