// write_queue.cpp — chunks of whole messages; see write_queue.hpp for the invariants.
#include <heartwheel/net/write_queue.hpp>

namespace heartwheel::net {

void write_queue::append(std::initializer_list<std::string_view> parts) {
    std::size_t size = 0;
    for (auto p : parts) size += p.size();
    if (size == 0) return;
    // A new chunk when there is none, the last one is in flight, or the message would overflow it.
    const bool last_in_flight = in_flight_ && chunks_.size() == 1;
    if (chunks_.empty() || last_in_flight || (!chunks_.back().empty() && chunks_.back().size() + size > limits_.chunk_bytes)) {
        chunks_.emplace_back();
        chunks_.back().swap(spare_); // reuse the kept capacity, if any
        chunks_.back().clear();
    }
    std::string& c = chunks_.back();
    for (auto p : parts) c.append(p.data(), p.size());
    queued_ += size;
}

std::string_view write_queue::next_bytes() {
    if (chunks_.empty()) return {};
    in_flight_ = true;
    return std::string_view(chunks_.front()).substr(offset_);
}

bool write_queue::consumed(std::size_t n) {
    offset_ += n;
    queued_ -= n;
    if (offset_ < chunks_.front().size()) return false;
    in_flight_ = false;
    offset_ = 0;
    std::string done = std::move(chunks_.front());
    chunks_.pop_front();
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

std::size_t write_queue::memory() const noexcept {
    std::size_t m = heap_bytes(spare_);
    for (const auto& c : chunks_) m += heap_bytes(c);
    return m;
}

void write_queue::drop_pending() noexcept {
    const std::size_t keep = in_flight_ ? 1 : 0;
    while (chunks_.size() > keep) {
        queued_ -= chunks_.back().size();
        chunks_.pop_back();
    }
    if (!in_flight_) {
        offset_ = 0;
        queued_ = 0;
    }
}

void write_queue::clear() noexcept {
    chunks_.clear();
    std::string().swap(spare_);
    offset_ = 0;
    queued_ = 0;
    in_flight_ = false;
}

} // namespace heartwheel::net
