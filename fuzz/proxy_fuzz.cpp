// proxy_fuzz.cpp — net::parse_proxy_header and the trusted ranges, fed a peer's first bytes.
// Invariants: a header found is no longer than what was given nor than its version's bound; it is
// found again, the same, from its own bytes alone (what follows it changes nothing), and one byte
// short of it is incomplete (a reader never takes a header early); incomplete is only said below the
// bound (a reader's buffer never fills waiting). The same bytes as text go to cidr::parse, which
// accepts or throws config_error, and a range it accepts contains its own network address.
#include <heartwheel/net/policies/policies.hpp>
#include <heartwheel/net/server/proxy_protocol.hpp>
#include "fuzz_check.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace net = heartwheel::net;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto r = net::parse_proxy_header(data, size);
    if (r.status == net::proxy_parse::done) {
        const auto& h = r.header;
        FUZZ_CHECK(h.length <= size, "a header longer than the bytes given");
        FUZZ_CHECK(h.length <= (h.version == 1 ? 107u : net::max_proxy_header), "a header past its bound");
        const auto alone = net::parse_proxy_header(data, h.length);
        FUZZ_CHECK(alone.status == net::proxy_parse::done && alone.header.length == h.length, "what follows changed it");
        FUZZ_CHECK(alone.header.local == h.local && alone.header.source == h.source, "what follows changed the client");
        FUZZ_CHECK(net::parse_proxy_header(data, h.length - 1).status == net::proxy_parse::incomplete,
                   "a header found one byte early");
    }
    if (r.status == net::proxy_parse::incomplete) FUZZ_CHECK(size < net::max_proxy_header, "incomplete at the bound");

    const std::string_view text(reinterpret_cast<const char*>(data), size < 64 ? size : 64);
    try {
        const auto range = net::cidr::parse(text);
        FUZZ_CHECK(range.contains(range.network), "a range without its own address");
    } catch (const net::config_error&) {
    }
    return 0;
}
