// policy_runtime_test.cpp — a policy's runtime is named by its slot and run on every connection with
// nothing written into connection_liveness (policy_runtime.hpp), on a manual clock: a policy defined
// here, in a list of its own, gets its runtime built from its validated policy and fed every hook;
// the read and write timeouts (timeout_policy.hpp, the built-in policy registered that way) close
// exactly at their period, put off while input waits, and never after close().
#define BOOST_TEST_MODULE policy_runtime
#include <boost/test/unit_test.hpp>

#include <heartwheel/net/policies/connection_liveness.hpp>

#include "liveness_recorder.hpp"
#include "manual_service.hpp"

#include <asio/io_context.hpp>

#include <string>
#include <vector>

using namespace hwtest;
using namespace heartwheel::net;
using namespace std::chrono_literals;
using heartwheel::time_point;
using heartwheel::timer_scheduler;

namespace {
// A policy as an application or a later session would add one: its struct, description, runtime and
// slot in one place. Its runtime records every hook it hears.
struct probe_policy {
    milliseconds limit{5000};
    void validate(const std::string& prefix = "probe") const { validate_policy(description(), this, prefix); }
    static const policy_description& description() {
        static const field_description fields[] = {field<&probe_policy::limit>("limit", 1, 10000, "a probe")};
        static const policy_description d{"probe", fields};
        return d;
    }
};
std::vector<std::string> heard;
class probe_runtime : public policy_runtime<probe_runtime> {
public:
    probe_runtime(policy_host&, const probe_policy& p) { heard.push_back("built " + std::to_string(p.limit.count())); }
    void on_read(policy_host&, const probe_policy& p, time_point) { heard.push_back("read " + std::to_string(p.limit.count())); }
    void on_write_started(policy_host&, const probe_policy&) { heard.emplace_back("write started"); }
    void on_write_complete(policy_host&, const probe_policy&, time_point, bool drained) { heard.push_back(drained ? "drained" : "more"); }
    void stop() noexcept { heard.emplace_back("stop"); }
    // on_write_progress: policy_runtime's, which does nothing
};
struct probe_slot {
    probe_policy probe;
    probe_policy& policy() noexcept { return probe; }
    using runtime = probe_runtime;
};
using probe_config = policy_set<idle_slot, probe_slot, limits_slot>;

struct host final : policy_host {
    explicit host(timer_scheduler& svc) : policy_host(svc, nullptr) {}
    std::vector<close_reason> closes;
    bool input = false;
    void close_for(close_reason why) override { closes.push_back(why); }
    bool input_waiting() override { return input; }
};
} // namespace

BOOST_AUTO_TEST_CASE(a_slot_that_names_a_runtime_has_it_built_validated_and_fed_every_hook) {
    manual_service svc;
    host h(svc);
    probe_config config;
    config.probe.limit = 700ms;
    heard.clear();
    {
        probe_config::with_slots<policy_runtimes> runtimes(h, config);
        runtimes.on_read(h, config, svc.stamp()); // each hook is given its slot's policy
        runtimes.on_write_started(h, config);
        runtimes.on_write_progress(h, config, svc.stamp());
        runtimes.on_write_complete(h, config, svc.stamp(), true);
        runtimes.stop();
    }
    BOOST_TEST(heard == (std::vector<std::string>{"built 700", "read 700", "write started", "drained", "stop"}),
               boost::test_tools::per_element());
    // Slots without a runtime add no bytes beside the one that has one.
    BOOST_TEST(sizeof(probe_config::with_slots<policy_runtimes>) == sizeof(probe_runtime));
    BOOST_TEST(sizeof(liveness_config::with_slots<policy_runtimes>) == sizeof(timeout_runtime));

    // A runtime is built from a validated policy only: the description's range, named.
    config.probe.limit = 0ms;
    heard.clear();
    try {
        probe_config::with_slots<policy_runtimes> runtimes(h, config);
        BOOST_FAIL("built from an invalid policy");
    } catch (const config_error& e) {
        BOOST_TEST(std::string(e.what()).find("probe.limit") != std::string::npos, e.what());
    }
    BOOST_TEST(heard.empty());
}

BOOST_AUTO_TEST_CASE(the_read_timeout_closes_at_its_period_and_waits_for_unread_input) {
    manual_service svc;
    host h(svc);
    timeout_policy p;
    p.read_timeout = 100ms;
    timeout_runtime rt(h, p);
    svc.step_by(60ms);
    rt.on_read(h, p, svc.stamp()); // a byte at 60 ms: the deadline moves to 160 ms
    svc.step_by(99ms);
    BOOST_TEST(h.closes.empty());
    h.input = true; // due at 160 ms with the peer's bytes unread: put off, not judged
    svc.step_by(1ms);
    BOOST_TEST(h.closes.empty());
    h.input = false;
    svc.step_by(unread_input_recheck);
    BOOST_TEST((h.closes == (std::vector<close_reason>{close_reason::read_timeout})));
    rt.stop();
    svc.step_by(1s);
    BOOST_TEST(h.closes.size() == 1u);
    BOOST_TEST(svc.wheel().empty());
}

BOOST_AUTO_TEST_CASE(the_write_timeout_runs_only_while_a_write_is_pending) {
    manual_service svc;
    host h(svc);
    timeout_policy p;
    p.write_timeout = 50ms;
    timeout_runtime rt(h, p);
    BOOST_TEST(svc.wheel().empty()); // no timer until the first write
    rt.on_write_started(h, p);
    svc.step_by(40ms);
    rt.on_write_complete(h, p, svc.stamp(), true); // drained: stopped
    svc.step_by(1s);
    BOOST_TEST(h.closes.empty());
    rt.on_write_started(h, p);
    svc.step_by(30ms);
    rt.on_write_progress(h, p, svc.stamp()); // progress at 30 ms: due at 80 ms
    svc.step_by(49ms);
    BOOST_TEST(h.closes.empty());
    svc.step_by(1ms);
    BOOST_TEST((h.closes == (std::vector<close_reason>{close_reason::write_timeout})));
}

BOOST_AUTO_TEST_CASE(connection_liveness_runs_the_registered_runtimes_and_closes_once) {
    asio::io_context io;
    manual_service svc;
    liveness_recorder handler(io.get_executor());
    liveness_config config;
    config.limits.handshake_timeout = 0ms;
    config.timeouts.read_timeout = 100ms;
    config.timeouts.write_timeout = 30ms;
    connection_liveness live(svc, config, handler);
    live.on_write_started();
    svc.step_by(30ms); // the write timeout's period without progress
    BOOST_TEST((handler.closes == (std::vector<close_reason>{close_reason::write_timeout})));
    svc.step_by(1s); // the read timeout was stopped by the close: one close in all
    BOOST_TEST(handler.closes.size() == 1u);
    BOOST_TEST(svc.wheel().empty());

    config.timeouts.write_timeout = -1ms; // refused as the connection is made, named
    BOOST_CHECK_EXCEPTION(connection_liveness(svc, config, handler), config_error, [](const config_error& e) {
        return std::string(e.what()).find("timeouts.write_timeout") != std::string::npos;
    });
}
