// line_framer.cpp — see line_framer.hpp.
#include "line_framer.hpp"

#include <cstring>

namespace echo {

std::span<char> line_framer::prepare() {
    if (begin_ == end_ && buf_.size() > 4 * read_chunk) {
        std::string().swap(buf_);
        begin_ = scan_ = end_ = 0;
    }
    if (begin_ > 0) {
        std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
        scan_ -= begin_;
        end_ -= begin_;
        begin_ = 0;
    }
    if (buf_.size() < end_ + read_chunk) buf_.resize(end_ + read_chunk);
    return {buf_.data() + end_, read_chunk};
}

void line_framer::commit(std::size_t n) { end_ += n; }

line_framer::status line_framer::next(std::string_view& line) {
    // Never look further than one byte past the longest allowed line.
    const std::size_t limit = std::min(end_, begin_ + max_line_ + 1);
    const void* nl = scan_ < limit ? std::memchr(buf_.data() + scan_, '\n', limit - scan_) : nullptr;
    if (nl == nullptr) {
        scan_ = limit;
        return limit - begin_ > max_line_ ? status::too_long : status::need_more;
    }
    const std::size_t pos = static_cast<std::size_t>(static_cast<const char*>(nl) - buf_.data());
    line = std::string_view(buf_.data() + begin_, pos - begin_);
    begin_ = scan_ = pos + 1;
    return status::line;
}

} // namespace echo
