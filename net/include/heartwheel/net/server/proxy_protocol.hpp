// heartwheel/net/server/proxy_protocol.hpp — the PROXY protocol (HAProxy's, versions 1 and 2): a load
// balancer that opens the connection to the server first sends a header naming the client it
// carries, so that a server behind it sees its clients' addresses, not the balancer's.
//
// The parser is a plain function over the bytes received so far: it says "incomplete" until the
// header is whole, and never asks for a byte beyond it — a reader peeks (MSG_PEEK), parses, then
// consumes exactly `length` bytes, so whatever the client sent after the header stays for the
// protocol. A header is at most 107 bytes (version 1, the specification's bound) or
// max_proxy_header bytes (version 2, its TLVs included); anything longer is `oversized`, so that a
// reader's buffer is bounded. Bytes that cannot start a header are `missing`; a header that
// started right and then went wrong is `malformed`.
//
// Trust: a header is a claim anyone can make. Only peers in the trusted networks (the balancers)
// may send one; the listener (listener_options::proxy) closes any other peer `proxy-untrusted`.
// A LOCAL command (a balancer's own health check) or an address family the server does not route
// (UNKNOWN, UDP, UNIX) leaves the connection's own addresses standing, as the specification asks.
#ifndef HEARTWHEEL_NET_PROXY_PROTOCOL_HPP
#define HEARTWHEEL_NET_PROXY_PROTOCOL_HPP

#include <heartwheel/net/connection/close_reason.hpp>

#include <heartwheel/asio.hpp>

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace heartwheel::net {

/// The longest version 2 header read (16 bytes and up to 1,008 of addresses and TLVs).
inline constexpr std::size_t max_proxy_header = 1024;

struct proxy_header {
    int version = 0;   ///< 1 or 2
    bool local = true; ///< no client named (LOCAL, UNKNOWN, a family not routed): the socket's own addresses stand
    asio::ip::tcp::endpoint source;      ///< the client, when !local
    asio::ip::tcp::endpoint destination; ///< the address the client connected to, when !local
    std::size_t length = 0;              ///< bytes of the header, to consume
};

enum class proxy_parse { done, incomplete, missing, malformed, oversized };

struct proxy_parse_result {
    proxy_parse status = proxy_parse::incomplete;
    proxy_header header; ///< when done
};

/// Parses a header at the start of `data` (the bytes received so far).
proxy_parse_result parse_proxy_header(const unsigned char* data, std::size_t size) noexcept;

/// An address range: "10.0.0.0/8", "::1/128", or an address alone (the whole address).
struct cidr {
    asio::ip::address network;
    unsigned prefix = 0;
    bool contains(const asio::ip::address& a) const noexcept;
    /// Throws config_error naming `key` when `text` is not a range.
    static cidr parse(std::string_view text, const std::string& key = "proxy_from");
};
/// "A,B,..." (at least one), each cidr::parse.
std::vector<cidr> parse_cidrs(std::string_view list, const std::string& key = "proxy_from");
/// "127.0.0.0/8,::1/128".
std::string to_string(const std::vector<cidr>& ranges);

struct proxy_protocol_options {
    /// Every connection must start with a header (and come from `trusted`); off by default.
    bool enabled = false;
    /// The balancers' addresses; a peer outside them is closed proxy-untrusted. Loopback by default.
    std::vector<cidr> trusted = {cidr{asio::ip::make_address("127.0.0.0"), 8}, cidr{asio::ip::make_address("::1"), 128}};
    /// A header not whole this long after the accept is closed proxy-timeout. 10 ms to 60 s.
    std::chrono::milliseconds timeout{3000};
    /// Headers being read at once; beyond, accepting waits (the backlog holds the rest). 1 to 1,000,000.
    std::size_t max_pending = 1024;

    /// Throws config_error naming the field and its range.
    void validate() const;
};

/// The close reasons of a connection refused for its header (counted by the listener).
close_reason proxy_untrusted_reason(); ///< "proxy-untrusted": a header from a peer outside the trusted ranges
close_reason proxy_missing_reason();   ///< "proxy-missing": the first bytes are not a header (a peer that leaves first: peer-closed)
close_reason proxy_malformed_reason(); ///< "proxy-malformed"
close_reason proxy_oversized_reason(); ///< "proxy-oversized"
close_reason proxy_timeout_reason();   ///< "proxy-timeout": not whole within the timeout

} // namespace heartwheel::net

#endif
