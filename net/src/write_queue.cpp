// write_queue.cpp — swapping the pending buffer into flight, and releasing drained memory.
#include <heartwheel/net/write_queue.hpp>

namespace heartwheel::net {

std::string_view write_queue::next_bytes() {
    if (!writing()) {
        inflight_.clear();
        offset_ = 0;
        inflight_.swap(pending_); // pending_ takes the old (empty) buffer's capacity for reuse
    }
    return std::string_view(inflight_).substr(offset_);
}

bool write_queue::consumed(std::size_t n) {
    offset_ += n;
    if (offset_ < inflight_.size()) return false;
    inflight_.clear();
    offset_ = 0;
    release_if_large(inflight_, limits_.keep_capacity);
    if (pending_.empty()) release_if_large(pending_, limits_.keep_capacity);
    return true;
}

void write_queue::drop_pending() noexcept {
    pending_.clear();
    release_if_large(pending_, limits_.keep_capacity);
}

void write_queue::clear() noexcept {
    std::string().swap(inflight_);
    std::string().swap(pending_);
    offset_ = 0;
}

void write_queue::release_if_large(std::string& s, std::size_t keep) noexcept {
    if (s.capacity() > keep && s.empty()) std::string().swap(s);
}

} // namespace heartwheel::net
