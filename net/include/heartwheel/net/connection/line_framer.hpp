// heartwheel/net/connection/line_framer.hpp — splits a byte stream into '\n'-terminated lines of at most
// `max_line` bytes, holding memory only for what a read left unfinished: the framing of a line
// protocol over liveness_stream::async_receive, whose chunks are lent and given back.
//
// The application lends it each read's bytes with feed() (a read_chunk from the thread's pool) and takes
// lines out with next(): a line that lies whole in the bytes fed is returned in place, without a
// copy. Only the tail of a read that is not yet a whole line — or, with stash(), whatever the session
// could not handle before giving the chunk back (backpressure, a close) — is copied into the framer's
// own buffer, which is released as soon as it has been handed out: an idle connection's framer holds
// nothing.
// Invariants (fuzzed in fuzz/line_framer_fuzz.cpp): the lines returned, each followed by '\n', are
// exactly a prefix of the bytes fed, whatever sizes the reads came in and wherever stash() was
// called; no line holds a '\n' or exceeds max_line; a line longer than max_line is reported as
// too_long as soon as max_line + 1 bytes of it have been fed, so the framer never holds more than
// max_line bytes of a partial line, plus what stash() kept; each byte is scanned for '\n' once.
// Sizes are held in 32 bits and what it keeps in a detail::byte_array (40 bytes: every idle
// connection of a line protocol holds one; a std::string and its inline room took 16 more): a line
// is at most 2 GiB - 1 (a larger max_line is taken as that), a feed at most 2 GiB - 1, and what the
// framer keeps under 4 GiB (std::length_error otherwise).
#ifndef HEARTWHEEL_NET_LINE_FRAMER_HPP
#define HEARTWHEEL_NET_LINE_FRAMER_HPP

#include <heartwheel/net/detail/byte_array.hpp>

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace heartwheel::net {

class line_framer {
public:
    enum class status { line, need_more, too_long };

    /// The longest line a framer takes (a larger max_line is taken as this), and the most one feed()
    /// may lend.
    static constexpr std::size_t max_size = (std::size_t{1} << 31) - 1;

    explicit line_framer(std::size_t max_line) noexcept
        : max_line_(static_cast<std::uint32_t>(max_line < max_size ? max_line : max_size)) {}

    /// Lends the bytes of one read: they must stay valid until next() returns need_more (every byte
    /// taken) or stash() is called. Call only when the bytes fed before were all taken or stashed.
    /// std::length_error for more than max_size bytes.
    void feed(std::string_view bytes);
    /// The next complete line (without '\n'); the view stays valid until the next call of any member
    /// (and while the bytes fed are).
    status next(std::string_view& line);
    /// Copies the bytes fed and not yet taken into the framer's own buffer, so that the memory fed
    /// can be given back; next() returns their lines later.
    void stash();

    /// Bytes received but not yet returned as lines (own and lent).
    std::size_t buffered() const noexcept { return own_.size() - begin_ + in_size_; }
    /// Heap bytes the framer holds (0 while no partial line or stashed bytes are kept).
    std::size_t memory() const noexcept { return own_.capacity(); }

private:
    void release_if_consumed();
    std::string_view in() const noexcept { return {in_, in_size_}; }
    void set_in(std::string_view v) noexcept {
        in_ = v.data();
        in_size_ = static_cast<std::uint32_t>(v.size());
    }

    detail::byte_array own_;     ///< kept across reads: a partial line, or stashed bytes
    const char* in_ = nullptr;   ///< lent by feed(), not yet taken: in_size_ bytes from here
    std::uint32_t in_size_ = 0;
    std::uint32_t begin_ = 0;    ///< first byte of own_ not yet returned
    std::uint32_t scan_ = 0;     ///< own_'s bytes before this one hold no '\n' (begin_ <= scan_ <= size)
    std::uint32_t max_line_;
};

} // namespace heartwheel::net

#endif
