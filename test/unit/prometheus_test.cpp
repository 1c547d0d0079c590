// prometheus_test.cpp — net::prometheus_writer: each family has its HELP and TYPE lines once; closes are
// counted by reason under their names; a histogram is cumulative, ends with +Inf equal to _count, and
// its _sum is in seconds; the wheels' figures and an application's own metric come out as given.
#define BOOST_TEST_MODULE prometheus
#include <boost/test/unit_test.hpp>

#include <heartwheel/net/connection/close_reason.hpp>
#include <heartwheel/net/metrics/prometheus.hpp>

#include <map>
#include <sstream>
#include <string>

using namespace std::chrono_literals;
namespace net = heartwheel::net;

namespace {

/// sample name (with labels) -> value text; and how often each "# TYPE name" appeared.
struct parsed {
    std::map<std::string, std::string> samples;
    std::map<std::string, int> types, helps;
};

parsed parse(const std::string& text) {
    parsed p;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream l(line);
        std::string a, b;
        l >> a >> b;
        if (a == "#" && b == "TYPE") {
            std::string name;
            l >> name;
            ++p.types[name];
        } else if (a == "#" && b == "HELP") {
            std::string name;
            l >> name;
            ++p.helps[name];
        } else {
            p.samples[a] = b;
        }
    }
    return p;
}

} // namespace

BOOST_AUTO_TEST_CASE(liveness_wheels_and_own_families) {
    net::liveness_counters c;
    c.closed(net::close_reason::reader_idle);
    c.closed(net::close_reason::reader_idle);
    c.closed(net::close_reason::heartbeat_timeout);
    c.ping_sent();
    c.rtt(300us);  // bucket le=0.0005
    c.rtt(2ms);    // bucket le=0.0025
    c.rtt(10s);    // beyond every bound
    heartwheel::driver_stats d;
    d.wakeups = 7;
    d.lateness[0] = 5;
    d.lateness[3] = 2;
    d.lateness_total_us = 1500;

    net::prometheus_writer w;
    w.metric("app_things", "gauge", "Things of the application.", 42);
    w.liveness(c.snapshot());
    w.wheels(12, d);
    w.read_chunks();
    const parsed p = parse(w.text());

    for (const auto& [name, n] : p.types) {
        BOOST_TEST(n == 1, name);
        BOOST_TEST(p.helps.count(name) == 1u, name);
    }
    BOOST_TEST(p.samples.at("app_things") == "42");
    BOOST_TEST(p.samples.at("heartwheel_closes_total{reason=\"reader-idle\"}") == "2");
    BOOST_TEST(p.samples.at("heartwheel_closes_total{reason=\"heartbeat-timeout\"}") == "1");
    BOOST_TEST(p.samples.at("heartwheel_closes_total{reason=\"slow-consumer\"}") == "0");
    BOOST_TEST(p.samples.at("heartwheel_pings_sent_total") == "1");
    BOOST_TEST(p.samples.at("heartwheel_rtt_seconds_bucket{le=\"0.0005\"}") == "1");
    BOOST_TEST(p.samples.at("heartwheel_rtt_seconds_bucket{le=\"0.0025\"}") == "2"); // cumulative
    BOOST_TEST(p.samples.at("heartwheel_rtt_seconds_bucket{le=\"+Inf\"}") == "3");
    BOOST_TEST(p.samples.at("heartwheel_rtt_seconds_count") == "3");
    BOOST_TEST(std::stod(p.samples.at("heartwheel_rtt_seconds_sum")) == 10.0023, boost::test_tools::tolerance(1e-9));
    BOOST_TEST(p.samples.at("heartwheel_wheel_timers") == "12");
    BOOST_TEST(p.samples.at("heartwheel_driver_wakeups_total") == "7");
    BOOST_TEST(p.samples.at("heartwheel_timer_lateness_seconds_bucket{le=\"5e-05\"}") == "5");
    BOOST_TEST(p.samples.at("heartwheel_timer_lateness_seconds_bucket{le=\"0.0005\"}") == "7");
    BOOST_TEST(p.samples.at("heartwheel_timer_lateness_seconds_count") == "7");
    BOOST_TEST(p.samples.at("heartwheel_timer_lateness_seconds_sum") == "0.0015");
    BOOST_TEST(p.samples.count("heartwheel_read_chunks_lent") == 1u);
}
