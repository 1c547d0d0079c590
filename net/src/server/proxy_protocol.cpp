// proxy_protocol.cpp — the PROXY header parser and the trusted ranges; see proxy_protocol.hpp.
#include <heartwheel/net/server/proxy_protocol.hpp>
#include <heartwheel/net/policies/policies.hpp>

#include <algorithm>
#include <cstring>

namespace heartwheel::net {
namespace {

constexpr unsigned char v2_signature[12] = {0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A};
constexpr std::string_view v1_prefix = "PROXY ";
constexpr std::size_t v1_max = 107; // the specification's bound, CRLF included

// Whether the first min(size, n) bytes agree with `prefix`.
bool starts_like(const unsigned char* data, std::size_t size, const unsigned char* prefix, std::size_t n) noexcept {
    return std::memcmp(data, prefix, std::min(size, n)) == 0;
}

bool parse_port(std::string_view text, unsigned short& port) noexcept {
    if (text.empty() || text.size() > 5 || (text.size() > 1 && text[0] == '0')) return false;
    unsigned value = 0;
    for (const char c : text) {
        if (c < '0' || c > '9') return false;
        value = value * 10 + static_cast<unsigned>(c - '0');
    }
    if (value > 65535) return false;
    port = static_cast<unsigned short>(value);
    return true;
}

// "PROXY TCP4 1.2.3.4 5.6.7.8 1111 2222" (the line without its CRLF).
bool parse_v1_line(std::string_view line, proxy_header& h) noexcept {
    for (const char c : line)
        if (c < 0x20 || c > 0x7E) return false; // text only: no NUL to cut an address short, no lone CR
    std::string_view field[6];
    std::size_t n = 0;
    while (n < 6) {
        const auto space = line.find(' ');
        field[n++] = line.substr(0, space);
        if (space == std::string_view::npos) {
            line = {};
            break;
        }
        line.remove_prefix(space + 1);
    }
    if (n >= 2 && field[1] == "UNKNOWN") return true; // whatever follows is ignored
    if (n != 6 || !line.empty() || (field[1] != "TCP4" && field[1] != "TCP6")) return false;
    error_code ec;
    const auto src = asio::ip::make_address(std::string(field[2]), ec);
    if (ec) return false;
    const auto dst = asio::ip::make_address(std::string(field[3]), ec);
    if (ec) return false;
    const bool v4 = field[1] == "TCP4";
    if (src.is_v4() != v4 || dst.is_v4() != v4) return false;
    unsigned short sport = 0, dport = 0;
    if (!parse_port(field[4], sport) || !parse_port(field[5], dport)) return false;
    h.local = false;
    h.source = {src, sport};
    h.destination = {dst, dport};
    return true;
}

proxy_parse_result parse_v1(const unsigned char* data, std::size_t size) noexcept {
    proxy_parse_result r;
    const std::string_view seen(reinterpret_cast<const char*>(data), std::min(size, v1_max));
    const auto end = seen.find("\r\n");
    if (end == std::string_view::npos) {
        r.status = size >= v1_max ? proxy_parse::oversized : proxy_parse::incomplete;
        // A lone CR or LF inside the line is not a header going on.
        if (r.status == proxy_parse::incomplete && seen.find_first_of("\r\n") < seen.size() - 1)
            r.status = proxy_parse::malformed;
        return r;
    }
    r.header.version = 1;
    r.header.length = end + 2;
    r.status = parse_v1_line(seen.substr(0, end), r.header) ? proxy_parse::done : proxy_parse::malformed;
    return r;
}

std::uint16_t be16(const unsigned char* p) noexcept {
    return static_cast<std::uint16_t>((p[0] << 8) | p[1]);
}

proxy_parse_result parse_v2(const unsigned char* data, std::size_t size) noexcept {
    proxy_parse_result r;
    if (size < 16) return r; // incomplete
    const unsigned version = data[12] >> 4, command = data[12] & 0x0Fu;
    const std::size_t length = 16u + be16(data + 14);
    if (version != 2 || command > 1) {
        r.status = proxy_parse::malformed;
        return r;
    }
    if (length > max_proxy_header) {
        r.status = proxy_parse::oversized;
        return r;
    }
    if (size < length) return r; // incomplete
    r.header.version = 2;
    r.header.length = length;
    r.status = proxy_parse::done;
    if (command == 0) return r; // LOCAL: the balancer's own connection (a health check)
    const unsigned char* a = data + 16;
    const std::size_t room = length - 16;
    switch (data[13]) {
    case 0x11: { // TCP over IPv4: 4 + 4 + 2 + 2
        if (room < 12) break;
        asio::ip::address_v4::bytes_type s{}, d{};
        std::memcpy(s.data(), a, 4);
        std::memcpy(d.data(), a + 4, 4);
        r.header.local = false;
        r.header.source = {asio::ip::address_v4(s), be16(a + 8)};
        r.header.destination = {asio::ip::address_v4(d), be16(a + 10)};
        return r;
    }
    case 0x21: { // TCP over IPv6: 16 + 16 + 2 + 2
        if (room < 36) break;
        asio::ip::address_v6::bytes_type s{}, d{};
        std::memcpy(s.data(), a, 16);
        std::memcpy(d.data(), a + 16, 16);
        r.header.local = false;
        r.header.source = {asio::ip::address_v6(s), be16(a + 32)};
        r.header.destination = {asio::ip::address_v6(d), be16(a + 34)};
        return r;
    }
    case 0x00: case 0x12: case 0x22: case 0x31: case 0x32: // UNSPEC, UDP, UNIX: not ours to route
        return r;
    default: break;
    }
    r.status = proxy_parse::malformed;
    return r;
}

} // namespace

proxy_parse_result parse_proxy_header(const unsigned char* data, std::size_t size) noexcept {
    proxy_parse_result r;
    if (size == 0) return r;
    if (starts_like(data, size, v2_signature, sizeof v2_signature)) return parse_v2(data, size);
    if (starts_like(data, size, reinterpret_cast<const unsigned char*>(v1_prefix.data()), v1_prefix.size()))
        return parse_v1(data, size);
    r.status = proxy_parse::missing;
    return r;
}

bool cidr::contains(const asio::ip::address& a) const noexcept {
    auto candidate = a;
    if (network.is_v4() && a.is_v6() && a.to_v6().is_v4_mapped())
        candidate = asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6());
    if (candidate.is_v4() != network.is_v4()) return false;
    const auto bytes = [](const asio::ip::address& x) {
        std::array<unsigned char, 16> b{};
        if (x.is_v4()) {
            const auto v = x.to_v4().to_bytes();
            std::copy(v.begin(), v.end(), b.begin());
        } else {
            const auto v = x.to_v6().to_bytes();
            std::copy(v.begin(), v.end(), b.begin());
        }
        return b;
    };
    const auto n = bytes(network), c = bytes(candidate);
    unsigned bits = prefix;
    for (std::size_t i = 0; bits > 0; ++i, bits = bits >= 8 ? bits - 8 : 0) {
        const unsigned mask = bits >= 8 ? 0xFFu : (0xFFu << (8 - bits)) & 0xFFu;
        if ((n[i] & mask) != (c[i] & mask)) return false;
    }
    return true;
}

cidr cidr::parse(std::string_view text, const std::string& key) {
    const std::string shown(text);
    const auto slash = text.find('/');
    error_code ec;
    const auto address = asio::ip::make_address(std::string(text.substr(0, slash)), ec);
    if (ec) throw config_error(key, shown, "an address range like 10.0.0.0/8 or ::1/128", "not an address");
    const unsigned bits = address.is_v4() ? 32 : 128;
    cidr r{address, bits};
    if (slash != std::string_view::npos) {
        const auto digits = text.substr(slash + 1);
        unsigned value = 0;
        bool ok = !digits.empty() && digits.size() <= 3;
        for (const char c : digits) {
            ok = ok && c >= '0' && c <= '9';
            if (ok) value = value * 10 + static_cast<unsigned>(c - '0');
        }
        if (!ok || value > bits)
            throw config_error(key, shown, "a prefix length 0 to " + std::to_string(bits), "bad prefix length");
        r.prefix = value;
    }
    return r;
}

std::vector<cidr> parse_cidrs(std::string_view list, const std::string& key) {
    std::vector<cidr> r;
    while (true) {
        const auto comma = list.find(',');
        r.push_back(cidr::parse(list.substr(0, comma), key));
        if (comma == std::string_view::npos) break;
        list.remove_prefix(comma + 1);
    }
    return r;
}

std::string to_string(const std::vector<cidr>& ranges) {
    std::string r;
    for (const auto& c : ranges) {
        if (!r.empty()) r += ',';
        r += c.network.to_string() + "/" + std::to_string(c.prefix);
    }
    return r;
}

void proxy_protocol_options::validate() const {
    if (timeout.count() < 10 || timeout.count() > 60000)
        throw config_error("proxy_timeout", std::to_string(timeout.count()) + "ms", "10ms to 60s");
    if (max_pending < 1 || max_pending > 1000000)
        throw config_error("proxy_max_pending", std::to_string(max_pending), "1 to 1000000");
    if (enabled && trusted.empty())
        throw config_error("proxy_from", "", "at least one address range (the balancers')", "empty");
}

close_reason proxy_untrusted_reason() {
    static const close_reason r = define_close_reason("proxy-untrusted");
    return r;
}
close_reason proxy_missing_reason() {
    static const close_reason r = define_close_reason("proxy-missing");
    return r;
}
close_reason proxy_malformed_reason() {
    static const close_reason r = define_close_reason("proxy-malformed");
    return r;
}
close_reason proxy_oversized_reason() {
    static const close_reason r = define_close_reason("proxy-oversized");
    return r;
}
close_reason proxy_timeout_reason() {
    static const close_reason r = define_close_reason("proxy-timeout");
    return r;
}

} // namespace heartwheel::net
