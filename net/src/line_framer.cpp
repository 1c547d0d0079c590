// line_framer.cpp — see line_framer.hpp.
#include <heartwheel/net/line_framer.hpp>

#include <algorithm>
#include <cstring>

namespace heartwheel::net {

std::size_t line_framer::memory() const noexcept {
    // The capacity a std::string has within its own object (SSO) is not heap memory.
    return own_.capacity() > std::string().capacity() ? own_.capacity() + 1 : 0;
}

void line_framer::release_if_consumed() {
    if (own_.empty() || begin_ < own_.size()) return; // nothing held, or still in use
    std::string().swap(own_); // everything was handed out: give the memory back
    begin_ = scan_ = 0;
}

line_framer::status line_framer::next(std::string_view& line) {
    release_if_consumed();
    if (begin_ < own_.size()) {
        // Lines kept from earlier reads come first. Never look past the longest allowed line.
        const std::size_t limit = std::min(own_.size(), begin_ + max_line_ + 1);
        const void* nl = scan_ < limit ? std::memchr(own_.data() + scan_, '\n', limit - scan_) : nullptr;
        if (nl != nullptr) {
            const auto pos = static_cast<std::size_t>(static_cast<const char*>(nl) - own_.data());
            line = std::string_view(own_.data() + begin_, pos - begin_);
            begin_ = scan_ = pos + 1;
            return status::line;
        }
        scan_ = limit;
        const std::size_t partial = own_.size() - begin_;
        if (partial > max_line_) return status::too_long;
        // own_ ends with the start of a line: its end is in the bytes lent, or not yet read.
        const std::size_t room = max_line_ + 1 - partial; // bytes of in_ that may still belong to it
        const std::size_t look = std::min(in_.size(), room);
        const void* end = look > 0 ? std::memchr(in_.data(), '\n', look) : nullptr;
        if (end == nullptr) {
            if (in_.size() >= room) return status::too_long;
            own_.append(in_);
            scan_ = own_.size();
            in_ = {};
            return status::need_more;
        }
        const auto k = static_cast<std::size_t>(static_cast<const char*>(end) - in_.data());
        own_.append(in_.data(), k);
        in_.remove_prefix(k + 1);
        line = std::string_view(own_.data() + begin_, own_.size() - begin_);
        begin_ = scan_ = own_.size(); // handed out: released by the next call
        return status::line;
    }
    // Nothing kept: lines are returned in place, and only a partial line at the end is copied.
    const std::size_t look = std::min(in_.size(), max_line_ + 1);
    const void* nl = look > 0 ? std::memchr(in_.data(), '\n', look) : nullptr;
    if (nl != nullptr) {
        const auto k = static_cast<std::size_t>(static_cast<const char*>(nl) - in_.data());
        line = in_.substr(0, k);
        in_.remove_prefix(k + 1);
        return status::line;
    }
    if (in_.size() > max_line_) return status::too_long;
    if (!in_.empty()) {
        own_.assign(in_);
        begin_ = 0;
        scan_ = own_.size();
        in_ = {};
    }
    return status::need_more;
}

void line_framer::stash() {
    release_if_consumed();
    if (in_.empty()) return;
    if (begin_ > 0) { // drop what was handed out before growing
        own_.erase(0, begin_);
        scan_ -= begin_;
        begin_ = 0;
    }
    own_.append(in_);
    in_ = {};
}

} // namespace heartwheel::net
