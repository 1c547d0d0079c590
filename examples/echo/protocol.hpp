// protocol.hpp — the echo/heartbeat wire protocol: newline-terminated lines; "PING <token>" is
// answered with "PONG <token>"; "PONG <token>" is consumed; "BYE <reason>" is the server's last line;
// anything else is echoed unchanged. Parsing is allocation-free (views into the line).
#ifndef HEARTWHEEL_ECHO_PROTOCOL_HPP
#define HEARTWHEEL_ECHO_PROTOCOL_HPP

#include <string_view>

namespace echo {

enum class line_kind { data, ping, pong, bye };

struct parsed_line {
    line_kind kind;
    std::string_view arg; ///< the token (ping, pong) or reason (bye); empty for data
};

/// Classifies one line (without its '\n'; a trailing '\r' is part of the line). A control word must be
/// followed by exactly one space and a non-empty argument; "PING" alone or "PINGX" is data.
parsed_line parse_line(std::string_view line) noexcept;

} // namespace echo

#endif
