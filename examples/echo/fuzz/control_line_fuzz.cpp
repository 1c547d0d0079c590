// control_line_fuzz.cpp — the control-line parser. Any bytes are one line; the parse must match the
// protocol's definition: "PING ", "PONG " or "BYE " followed by a non-empty argument is a control line
// whose argument is the rest of the line (a view into it); everything else is data with no argument.
#include "echo/protocol.hpp"
#include "fuzz_check.hpp"

#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view line(reinterpret_cast<const char*>(data), size);
    const echo::parsed_line p = echo::parse_line(line);
    struct word {
        std::string_view prefix;
        echo::line_kind kind;
    };
    echo::line_kind expected = echo::line_kind::data;
    std::string_view arg;
    for (const word w : {word{"PING ", echo::line_kind::ping}, word{"PONG ", echo::line_kind::pong},
                         word{"BYE ", echo::line_kind::bye}}) {
        if (line.size() > w.prefix.size() && line.substr(0, w.prefix.size()) == w.prefix) {
            expected = w.kind;
            arg = line.substr(w.prefix.size());
        }
    }
    FUZZ_CHECK(p.kind == expected, "kind matches the protocol");
    FUZZ_CHECK(p.arg == arg, "argument matches the protocol");
    if (!p.arg.empty())
        FUZZ_CHECK(p.arg.data() + p.arg.size() == line.data() + line.size(), "argument is the line's tail");
    return 0;
}
