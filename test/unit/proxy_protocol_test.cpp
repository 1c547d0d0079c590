// The PROXY header parser (versions 1 and 2) and the trusted ranges: every header whole, every
// prefix of one incomplete (never done early, never an error), and each way a header goes wrong.
#include <boost/test/unit_test.hpp>
#include <heartwheel/net/policies/policies.hpp>
#include <heartwheel/net/server/proxy_protocol.hpp>

#include <string>
#include <vector>

namespace net = heartwheel::net;
using net::proxy_parse;

namespace {

net::proxy_parse_result parse(const std::string& bytes) {
    return net::parse_proxy_header(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
}

const std::string v2_signature("\r\n\r\n\0\r\nQUIT\n", 12);

// A version 2 header: command byte, family byte, then the address block.
std::string v2(unsigned char command, unsigned char family, const std::string& block) {
    std::string h = v2_signature;
    h += static_cast<char>(command);
    h += static_cast<char>(family);
    h += static_cast<char>((block.size() >> 8) & 0xFF);
    h += static_cast<char>(block.size() & 0xFF);
    return h + block;
}

std::string bytes(std::initializer_list<int> b) {
    std::string s;
    for (const int x : b) s += static_cast<char>(x);
    return s;
}

// Every strict prefix of a whole header is incomplete (a reader waits for more, nothing else).
void every_prefix_incomplete(const std::string& header) {
    for (std::size_t n = 0; n < header.size(); ++n)
        BOOST_TEST((parse(header.substr(0, n)).status == proxy_parse::incomplete), "prefix of " << n);
}

} // namespace

BOOST_AUTO_TEST_SUITE(proxy_protocol)

BOOST_AUTO_TEST_CASE(version_1_names_the_client_and_leaves_what_follows) {
    const std::string h = "PROXY TCP4 192.0.2.7 198.51.100.1 56324 443\r\n";
    const auto r = parse(h + "hello\n");
    BOOST_TEST((r.status == proxy_parse::done));
    BOOST_TEST(r.header.version == 1);
    BOOST_TEST(!r.header.local);
    BOOST_TEST(r.header.length == h.size());
    BOOST_TEST(r.header.source.address().to_string() == "192.0.2.7");
    BOOST_TEST(r.header.source.port() == 56324);
    BOOST_TEST(r.header.destination.address().to_string() == "198.51.100.1");
    BOOST_TEST(r.header.destination.port() == 443);
    every_prefix_incomplete(h);

    const auto six = parse("PROXY TCP6 2001:db8::1 2001:db8::2 1 65535\r\n");
    BOOST_TEST((six.status == proxy_parse::done));
    BOOST_TEST(six.header.source.address().to_string() == "2001:db8::1");
    BOOST_TEST(six.header.destination.port() == 65535);

    const auto unknown = parse("PROXY UNKNOWN ffff::1 ffff::2 1 2\r\n");
    BOOST_TEST((unknown.status == proxy_parse::done));
    BOOST_TEST(unknown.header.local); // the connection's own addresses stand
    BOOST_TEST((parse("PROXY UNKNOWN\r\n").status == proxy_parse::done));
}

BOOST_AUTO_TEST_CASE(version_1_wrong_in_each_way_it_can_be) {
    for (const std::string bad : {
             "PROXY TCP4 192.0.2.7 198.51.100.1 56324\r\n",          // a field short
             "PROXY TCP4 192.0.2.7 198.51.100.1 56324 443 x\r\n",    // one too many
             "PROXY TCP4 2001:db8::1 198.51.100.1 1 2\r\n",          // a v6 address in TCP4
             "PROXY TCP6 192.0.2.7 2001:db8::2 1 2\r\n",             // a v4 address in TCP6
             "PROXY TCP4 192.0.2.7 198.51.100.1 65536 443\r\n",      // a port out of range
             "PROXY TCP4 192.0.2.7 198.51.100.1 0443 443\r\n",       // a leading zero
             "PROXY TCP4 192.0.2.7 198.51.100.1 -1 443\r\n",         // not a number
             "PROXY TCP4  192.0.2.7 198.51.100.1 1 2\r\n",           // two spaces
             "PROXY UDP4 192.0.2.7 198.51.100.1 1 2\r\n",            // not TCP
             "PROXY TCP4 192.0.2.7\n198.51.100.1 1 2\r\n",           // a lone LF inside
             "PROXY TCP4 300.0.2.7 198.51.100.1 1 2\r\n"})           // not an address
        BOOST_TEST((parse(bad).status == proxy_parse::malformed), bad);
    // A NUL would cut an address short (found by proxy_fuzz), and the line is text only.
    BOOST_TEST((parse(std::string("PROXY TCP4 192.0.2.7 198.51.100.1\0\r 1 2\r\n", 41)).status == proxy_parse::malformed));
    // Past the specification's 107 bytes with no end of line: oversized, whatever it says.
    BOOST_TEST((parse("PROXY TCP6 " + std::string(120, 'f')).status == proxy_parse::oversized));
    BOOST_TEST((parse("PROXY TCP6 " + std::string(90, 'f')).status == proxy_parse::incomplete));
}

BOOST_AUTO_TEST_CASE(anything_else_is_a_missing_header) {
    for (const std::string other : {"GET / HTTP/1.1\r\n", "\x16\x03\x01\x02\x00", "P ", "proxy TCP4", "\r\n\r\n\x01"})
        BOOST_TEST((parse(other).status == proxy_parse::missing), other);
    BOOST_TEST((parse("").status == proxy_parse::incomplete));
    BOOST_TEST((parse("PRO").status == proxy_parse::incomplete));
}

BOOST_AUTO_TEST_CASE(version_2_names_the_client_over_ipv4_and_ipv6) {
    const std::string four = v2(0x21, 0x11, bytes({192, 0, 2, 7, 198, 51, 100, 1, 0xDC, 0x04, 0x01, 0xBB}));
    const auto r = parse(four + "hello");
    BOOST_TEST((r.status == proxy_parse::done));
    BOOST_TEST(r.header.version == 2);
    BOOST_TEST(r.header.length == 28u);
    BOOST_TEST(r.header.source.address().to_string() == "192.0.2.7");
    BOOST_TEST(r.header.source.port() == 56324);
    BOOST_TEST(r.header.destination.port() == 443);
    every_prefix_incomplete(four);

    std::string block(36, '\0');
    block[0] = '\x20', block[1] = '\x01', block[15] = '\x09'; // 2001::9
    block[32] = '\x30', block[33] = '\x39';                   // port 12345
    block += "TLVs are skipped";
    const auto six = parse(v2(0x21, 0x21, block));
    BOOST_TEST((six.status == proxy_parse::done));
    BOOST_TEST(six.header.source.address().to_string() == "2001::9");
    BOOST_TEST(six.header.source.port() == 12345);
    BOOST_TEST(six.header.length == 16u + block.size());
}

BOOST_AUTO_TEST_CASE(version_2_local_and_foreign_families_leave_the_socket_addresses) {
    const auto local = parse(v2(0x20, 0x00, ""));   // a balancer's health check
    BOOST_TEST((local.status == proxy_parse::done));
    BOOST_TEST(local.header.local);
    BOOST_TEST(local.header.length == 16u);
    const auto unix_socket = parse(v2(0x21, 0x31, std::string(216, 'u')));
    BOOST_TEST((unix_socket.status == proxy_parse::done));
    BOOST_TEST(unix_socket.header.local);
}

BOOST_AUTO_TEST_CASE(version_2_wrong_in_each_way_it_can_be) {
    BOOST_TEST((parse(v2(0x11, 0x11, std::string(12, 'a'))).status == proxy_parse::malformed)); // version 1 in a v2 frame
    BOOST_TEST((parse(v2(0x22, 0x11, std::string(12, 'a'))).status == proxy_parse::malformed)); // command 2
    BOOST_TEST((parse(v2(0x21, 0x11, std::string(11, 'a'))).status == proxy_parse::malformed)); // addresses cut short
    BOOST_TEST((parse(v2(0x21, 0x21, std::string(35, 'a'))).status == proxy_parse::malformed));
    BOOST_TEST((parse(v2(0x21, 0x41, std::string(12, 'a'))).status == proxy_parse::malformed)); // no such family
    // A length past the bound is oversized at once (16 bytes seen), not waited for.
    const auto big = v2(0x21, 0x11, std::string(net::max_proxy_header, 'a'));
    BOOST_TEST((parse(big.substr(0, 16)).status == proxy_parse::oversized));
    const auto largest = v2(0x21, 0x11, std::string(net::max_proxy_header - 16, 'a'));
    BOOST_TEST((parse(largest).status == proxy_parse::done));
}

BOOST_AUTO_TEST_CASE(trusted_ranges) {
    const auto ranges = net::parse_cidrs("10.0.0.0/8,192.0.2.7,2001:db8::/32");
    BOOST_TEST(ranges.size() == 3u);
    const auto in = [&](const char* a) {
        for (const auto& r : ranges)
            if (r.contains(asio::ip::make_address(a))) return true;
        return false;
    };
    BOOST_TEST(in("10.200.1.1"));
    BOOST_TEST(!in("11.0.0.1"));
    BOOST_TEST(in("192.0.2.7"));
    BOOST_TEST(!in("192.0.2.8"));
    BOOST_TEST(in("2001:db8:ffff::1"));
    BOOST_TEST(!in("2001:db9::1"));
    BOOST_TEST(in("::ffff:10.1.2.3")); // an IPv4 client on a dual-stack socket
    BOOST_TEST(net::to_string(ranges) == "10.0.0.0/8,192.0.2.7/32,2001:db8::/32");
    BOOST_TEST(net::cidr::parse("0.0.0.0/0").contains(asio::ip::make_address("203.0.113.9")));
    const auto fails = [](const char* text, const char* says) {
        try {
            net::parse_cidrs(text);
        } catch (const net::config_error& e) {
            BOOST_TEST(e.field() == "proxy_from");
            BOOST_TEST(std::string(e.what()).find(says) != std::string::npos, e.what());
            return;
        }
        BOOST_FAIL(std::string("accepted ") + text);
    };
    fails("10.0.0.0/33", "0 to 32");
    fails("::1/129", "0 to 128");
    fails("10.0.0/8", "not an address");
    fails("10.0.0.0/8,", "not an address");
    fails("10.0.0.0/x", "prefix");
}

BOOST_AUTO_TEST_CASE(options_are_validated) {
    net::proxy_protocol_options o;
    o.validate();
    o.timeout = std::chrono::milliseconds(5);
    BOOST_CHECK_THROW(o.validate(), net::config_error);
    o = {};
    o.max_pending = 0;
    BOOST_CHECK_THROW(o.validate(), net::config_error);
    o = {};
    o.enabled = true;
    o.trusted.clear();
    BOOST_CHECK_THROW(o.validate(), net::config_error);
}

BOOST_AUTO_TEST_SUITE_END()
