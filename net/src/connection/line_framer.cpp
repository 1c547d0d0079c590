// line_framer.cpp — see line_framer.hpp.
#include <heartwheel/net/connection/line_framer.hpp>

#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace heartwheel::net {

namespace {
std::uint32_t u32(std::size_t v) noexcept { return static_cast<std::uint32_t>(v); }
// own_ is indexed in 32 bits: it may grow by `more` bytes only while it stays below 4 GiB.
void check_room(const detail::byte_array& own, std::size_t more) {
    if (own.size() + more > std::numeric_limits<std::uint32_t>::max())
        throw std::length_error("line_framer: 4 GiB or more kept unread");
}
} // namespace

void line_framer::feed(std::string_view bytes) {
    if (bytes.size() > max_size) throw std::length_error("line_framer: a feed of more than 2 GiB - 1 bytes");
    set_in(bytes);
}

void line_framer::release_if_consumed() {
    if (own_.empty() || begin_ < own_.size()) return; // nothing held, or still in use
    own_.release(); // everything was handed out: give the memory back
    begin_ = scan_ = 0;
}

line_framer::status line_framer::next(std::string_view& line) {
    release_if_consumed();
    std::string_view in = this->in();
    if (begin_ < own_.size()) {
        // Lines kept from earlier reads come first. Never look past the longest allowed line.
        const std::size_t limit = std::min(own_.size(), std::size_t{begin_} + max_line_ + 1);
        const void* nl = scan_ < limit ? std::memchr(own_.data() + scan_, '\n', limit - scan_) : nullptr;
        if (nl != nullptr) {
            const auto pos = static_cast<std::size_t>(static_cast<const char*>(nl) - own_.data());
            line = std::string_view(own_.data() + begin_, pos - begin_);
            begin_ = scan_ = u32(pos + 1);
            return status::line;
        }
        scan_ = u32(limit);
        const std::size_t partial = own_.size() - begin_;
        if (partial > max_line_) return status::too_long;
        // own_ ends with the start of a line: its end is in the bytes lent, or not yet read.
        const std::size_t room = std::size_t{max_line_} + 1 - partial; // bytes of in_ that may still belong to it
        const std::size_t look = std::min(in.size(), room);
        const void* end = look > 0 ? std::memchr(in.data(), '\n', look) : nullptr;
        if (end == nullptr) {
            if (in.size() >= room) return status::too_long;
            check_room(own_, in.size());
            own_.append(in.data(), in.size());
            scan_ = u32(own_.size());
            set_in({});
            return status::need_more;
        }
        const auto k = static_cast<std::size_t>(static_cast<const char*>(end) - in.data());
        check_room(own_, k);
        own_.append(in.data(), k);
        set_in(in.substr(k + 1)); // the rest stays lent
        line = std::string_view(own_.data() + begin_, own_.size() - begin_);
        begin_ = scan_ = u32(own_.size()); // handed out: released by the next call
        return status::line;
    }
    // Nothing kept: lines are returned in place, and only a partial line at the end is copied.
    const std::size_t look = std::min(in.size(), std::size_t{max_line_} + 1);
    const void* nl = look > 0 ? std::memchr(in.data(), '\n', look) : nullptr;
    if (nl != nullptr) {
        const auto k = static_cast<std::size_t>(static_cast<const char*>(nl) - in.data());
        line = in.substr(0, k);
        set_in(in.substr(k + 1)); // the rest stays lent
        return status::line;
    }
    if (in.size() > max_line_) return status::too_long;
    if (!in.empty()) {
        own_.append(in.data(), in.size()); // own_ is empty here: nothing kept
        begin_ = 0;
        scan_ = u32(own_.size());
        set_in({});
    }
    return status::need_more;
}

void line_framer::stash() {
    release_if_consumed();
    if (in_size_ == 0) return;
    if (begin_ > 0) { // drop what was handed out before growing
        own_.erase_front(begin_);
        scan_ -= begin_;
        begin_ = 0;
    }
    check_room(own_, in_size_);
    own_.append(in_, in_size_);
    set_in({});
}

} // namespace heartwheel::net
