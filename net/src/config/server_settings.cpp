// server_settings.cpp — one set() behind the flags and the config keys (server_settings.hpp).
#include <heartwheel/net/config/server_settings.hpp>

#include <heartwheel/net/server/listen.hpp>
#include <heartwheel/net/policies/policies.hpp>

#include <sys/un.h>

#include <algorithm>
#include <array>
#include <sstream>

namespace heartwheel::net {
namespace {

constexpr std::array<const char*, 9> names = {"listen", "max_connections", "max_handshakes", "drain_window",
                                              "proxy_protocol", "proxy_from", "proxy_timeout", "handover", "metrics"};

// "max-connections" and "--max-connections" read as "max_connections".
std::string normal(std::string_view key) {
    while (!key.empty() && key.front() == '-') key.remove_prefix(1);
    std::string k(key);
    std::replace(k.begin(), k.end(), '-', '_');
    return k;
}

std::chrono::milliseconds millis(std::string_view value, const std::string& who, bool from_file, std::int64_t lo,
                                 std::int64_t hi, const char* range) {
    const auto ms = from_file ? parse_duration(value, who) : std::chrono::milliseconds(parse_count(value, who, lo, hi));
    if (ms.count() < lo || ms.count() > hi) throw config_error(who, std::string(value), range);
    return ms;
}

bool yes(std::string_view value, const std::string& who) {
    if (value == "true" || value == "yes" || value == "1") return true;
    if (value == "false" || value == "no" || value == "0") return false;
    throw config_error(who, std::string(value), "true or false", "not valid");
}

} // namespace

bool server_settings::is_key(std::string_view key) {
    const std::string k = normal(key);
    return std::find(names.begin(), names.end(), k) != names.end();
}

const char* const* server_settings::keys() noexcept { return names.data(); }
std::size_t server_settings::key_count() noexcept { return names.size(); }

bool server_settings::set(std::string_view key, std::string_view value, const std::string& who, bool from_file) {
    const std::string k = normal(key);
    if (k == "listen") {
        parse_endpoint(value, who); // judged now, kept as written
        listen = std::string(value);
    } else if (k == "max_connections") admission.max_connections = parse_count(value, who, 1, 10'000'000);
    else if (k == "max_handshakes") admission.max_handshakes = parse_count(value, who, 0, 10'000'000);
    else if (k == "drain_window") drain_window = millis(value, who, from_file, 0, 600'000, "0..600000 ms (10 min)");
    else if (k == "proxy_protocol") proxy.enabled = yes(value, who);
    else if (k == "proxy_from") proxy.trusted = parse_cidrs(value, who);
    else if (k == "proxy_timeout") proxy.timeout = millis(value, who, from_file, 10, 60'000, "10..60000 ms");
    else if (k == "handover") {
        if (value.empty() || value.size() >= sizeof(sockaddr_un{}.sun_path))
            throw config_error(who, std::string(value),
                               "a Unix socket path of 1.." + std::to_string(sizeof(sockaddr_un{}.sun_path) - 1) + " bytes",
                               "not a path");
        handover = std::string(value);
    } else if (k == "metrics") metrics = parse_endpoint(value, who);
    else return false;
    return true;
}

asio::ip::tcp::endpoint server_settings::endpoint() const { return parse_endpoint(listen, "--listen"); }

listener_options server_settings::listener() const {
    listener_options lo;
    lo.admission = admission;
    lo.proxy = proxy;
    lo.handover = handover;
    return lo;
}

void server_settings::validate() const {
    endpoint();
    proxy.validate();
}

bool parse_server_flag(int argc, const char* const* argv, int& i, server_settings& s) {
    const std::string_view flag = argv[i];
    if (flag.substr(0, 2) != "--" || !server_settings::is_key(flag)) return false;
    if (flag == "--proxy-protocol") { // the one flag without a value
        s.proxy.enabled = true;
        return true;
    }
    if (i + 1 >= argc) throw config_error(std::string(flag), "", "a value", "missing");
    s.set(flag, argv[++i], std::string(flag));
    return true;
}

std::string server_flags_help(const server_settings& s, bool tls) {
    std::ostringstream os;
    os << "  --listen HOST:PORT    where to listen (default " << s.listen << "; port 0 picks one)\n"
       << "  --max-connections N   open at once, 1..10000000 (default " << s.admission.max_connections
       << "); beyond, newcomers wait in the backlog\n";
    if (tls)
        os << "  --max-handshakes N    TLS handshakes in progress at once, 0..10000000, at most half of --max-connections\n"
           << "                        (default " << s.admission.max_handshakes
           << "; 0 = off); beyond, newcomers wait and stalled handshakes are shed\n";
    os << "  --drain-window MS     on the first SIGINT/SIGTERM, ask clients to leave spread over this long, then stop,\n"
       << "                        0..600000 (default " << s.drain_window.count() << "; 0 = at once); a second signal stops at once\n"
       << "  --proxy-protocol      behind a balancer: every connection starts with a PROXY header (v1 or v2)\n"
       << "  --proxy-from CIDRS    the balancers trusted to send one (default " << to_string(s.proxy.trusted) << ")\n"
       << "  --proxy-timeout MS    a header must be whole within this, 10..60000 (default " << s.proxy.timeout.count() << ")\n"
       << "  --handover PATH       a Unix socket path: take the listening socket from the process serving it (which\n"
       << "                        then drains) and serve it for the next one: a restart that refuses no connect\n"
       << "  --metrics HOST:PORT   serve Prometheus text at http://HOST:PORT/metrics (port 0 picks one; the second\n"
       << "                        line says where: \"metrics on HOST:PORT\")\n"
       << "  --config FILE         these as keys ('_' for '-': proxy_from = \"10.0.0.0/8\"; durations may say \"10s\"),\n"
       << "                        beside the liveness tables ([idle], [heartbeat], [output], ...)\n";
    return os.str();
}

} // namespace heartwheel::net
