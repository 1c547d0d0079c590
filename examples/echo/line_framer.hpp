// line_framer.hpp — splits a byte stream into '\n'-terminated lines of at most `max_line` bytes.
//
// The session reads into prepare() / commit() and takes lines out with next(). Invariants (fuzzed in
// fuzz/line_framer_fuzz.cpp): the lines returned, each followed by '\n', are exactly a prefix of the
// bytes committed, whatever sizes the reads came in; no line holds a '\n' or exceeds max_line bytes;
// a line longer than max_line is reported as too_long as soon as max_line + 1 bytes of it are
// buffered, so the buffer never holds more than max_line + 1 + read_chunk bytes. Each byte is
// scanned for '\n' once, however the input is split.
#ifndef HEARTWHEEL_ECHO_LINE_FRAMER_HPP
#define HEARTWHEEL_ECHO_LINE_FRAMER_HPP

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace echo {

class line_framer {
public:
    enum class status { line, need_more, too_long };
    /// Bytes asked for per read. Small, because every connection holds this much: lines longer than
    /// this grow the buffer, and an empty buffer that grew is released (see prepare()).
    static constexpr std::size_t read_chunk = 4096;

    explicit line_framer(std::size_t max_line) : max_line_(max_line) {}

    /// Space for the next read (read_chunk bytes); moves unread bytes to the front first, and frees
    /// a buffer that a long line grew once it is empty again.
    std::span<char> prepare();
    /// `n` bytes of the span from prepare() were filled.
    void commit(std::size_t n);
    /// The next complete line (without '\n'); the view stays valid until the next call of any member.
    status next(std::string_view& line);
    /// Bytes received but not yet returned as lines.
    std::size_t buffered() const { return end_ - begin_; }

private:
    std::string buf_;
    std::size_t begin_ = 0; ///< first byte not yet returned
    std::size_t scan_ = 0;  ///< bytes before this one hold no '\n' (begin_ <= scan_ <= end_)
    std::size_t end_ = 0;   ///< end of committed bytes
    std::size_t max_line_;
};

} // namespace echo

#endif
