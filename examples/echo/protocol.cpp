// protocol.cpp — the control-line parser.
#include "protocol.hpp"

namespace echo {

parsed_line parse_line(std::string_view line) noexcept {
    auto control = [&](std::string_view word, line_kind kind, parsed_line& out) {
        if (line.size() <= word.size() + 1 || line.substr(0, word.size()) != word || line[word.size()] != ' ')
            return false;
        out = {kind, line.substr(word.size() + 1)};
        return true;
    };
    parsed_line out{line_kind::data, {}};
    if (line.size() < 5) return out;
    if (control("PING", line_kind::ping, out) || control("PONG", line_kind::pong, out) ||
        control("BYE", line_kind::bye, out))
        return out;
    return {line_kind::data, {}};
}

} // namespace echo
