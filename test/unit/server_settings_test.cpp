// server_settings_test.cpp — the listening side's settings read once, the same from a flag or a
// config key: values, durations with units in a file, errors naming the flag or key (and the file).
#include <boost/test/unit_test.hpp>

#include <heartwheel/net/config/server_toml.hpp>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

using namespace heartwheel::net;

namespace {

bool parse(std::vector<const char*> args, server_settings& s) {
    args.insert(args.begin(), "server");
    const int argc = static_cast<int>(args.size());
    for (int i = 1; i < argc; ++i)
        if (!parse_server_flag(argc, args.data(), i, s)) return false;
    return true;
}

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const config_error& e) {
        return e.what();
    }
    return "";
}

struct config_file {
    std::string path = "/tmp/heartwheel_server_settings_test_" + std::to_string(::getpid()) + ".toml";
    explicit config_file(const std::string& text) { std::ofstream(path) << text; }
    ~config_file() { std::remove(path.c_str()); }
};

} // namespace

BOOST_AUTO_TEST_CASE(the_flags_set_the_settings_and_their_listener_options) {
    server_settings s;
    BOOST_TEST_REQUIRE(parse({"--listen", "127.0.0.1:7100", "--max-connections", "500", "--max-handshakes", "20",
                              "--drain-window", "2500", "--proxy-protocol", "--proxy-from", "10.0.0.0/8",
                              "--proxy-timeout", "700", "--handover", "/tmp/h.sock", "--metrics", "127.0.0.1:0"},
                             s));
    BOOST_TEST(s.endpoint().port() == 7100);
    BOOST_TEST(s.drain_window.count() == 2500);
    BOOST_TEST(s.metrics.has_value());
    const listener_options lo = s.listener();
    BOOST_TEST(lo.admission.max_connections == 500u);
    BOOST_TEST(lo.admission.max_handshakes == 20u);
    BOOST_TEST(lo.proxy.enabled);
    BOOST_TEST(to_string(lo.proxy.trusted) == "10.0.0.0/8");
    BOOST_TEST(lo.proxy.timeout.count() == 700);
    BOOST_TEST(lo.handover == "/tmp/h.sock");
    server_settings other;
    BOOST_TEST(!parse({"--io-threads", "4"}, other)); // not one of them: the server's own
}

BOOST_AUTO_TEST_CASE(a_bad_flag_value_names_the_flag_and_the_range) {
    server_settings s;
    const auto few = error_of([&] { parse({"--max-connections", "0"}, s); });
    BOOST_TEST(few.find("--max-connections") != std::string::npos, few);
    BOOST_TEST(few.find("1..10000000") != std::string::npos, few);
    const auto missing = error_of([&] { parse({"--drain-window"}, s); });
    BOOST_TEST(missing.find("--drain-window") != std::string::npos, missing);
    const auto window = error_of([&] { parse({"--drain-window", "600001"}, s); });
    BOOST_TEST(window.find("--drain-window") != std::string::npos, window);
    const auto where = error_of([&] { parse({"--metrics", "localhost:9"}, s); });
    BOOST_TEST(where.find("--metrics") != std::string::npos, where);
    const auto path = error_of([&] { parse({"--handover", std::string(200, 'x').c_str()}, s); });
    BOOST_TEST(path.find("--handover") != std::string::npos, path);
}

BOOST_AUTO_TEST_CASE(the_config_file_takes_the_same_names_beside_the_liveness_tables) {
    const config_file f("max_connections = 50\nproxy_protocol = true\nproxy_from = \"192.168.0.0/16\"\n"
                        "drain_window = \"5s\"\nproxy_timeout = 900\nlisten = \"127.0.0.1:7300\"\n"
                        "[heartbeat]\ninterval = \"7s\"\n");
    server_settings s;
    liveness_config live;
    load_server_config(f.path, s, live);
    BOOST_TEST(s.admission.max_connections == 50u);
    BOOST_TEST(s.proxy.enabled);
    BOOST_TEST(to_string(s.proxy.trusted) == "192.168.0.0/16");
    BOOST_TEST(s.drain_window.count() == 5000); // a unit in a file
    BOOST_TEST(s.proxy.timeout.count() == 900); // a bare integer: milliseconds
    BOOST_TEST(s.endpoint().port() == 7300);
    BOOST_TEST(live.heartbeat.interval.count() == 7000);
}

BOOST_AUTO_TEST_CASE(a_bad_key_or_value_in_the_file_is_named_with_the_file) {
    server_settings s;
    liveness_config live;
    const config_file unknown("max_conections = 5\n");
    const auto u = error_of([&] { load_server_config(unknown.path, s, live); });
    BOOST_TEST(u.find("max_conections") != std::string::npos, u);
    BOOST_TEST(u.find("max_connections") != std::string::npos, u); // the accepted keys are listed
    const config_file bad("drain_window = \"forever\"\n");
    const auto b = error_of([&] { load_server_config(bad.path, s, live); });
    BOOST_TEST(b.find("drain_window (in " + bad.path + ")") != std::string::npos, b);
    const config_file wrong_type("proxy_protocol = 1.5\n");
    const auto w = error_of([&] { load_server_config(wrong_type.path, s, live); });
    BOOST_TEST(w.find("proxy_protocol") != std::string::npos, w);
    const config_file empty_from("proxy_protocol = true\nproxy_from = \"\"\n");
    const auto e = error_of([&] { load_server_config(empty_from.path, s, live); });
    BOOST_TEST(e.find("proxy_from") != std::string::npos, e);
}
