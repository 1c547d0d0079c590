// policy_description_test.cpp — the policies' descriptions drive validation, the TOML loader,
// find_field() and the docs' table of knobs: each check walks every registered policy, so a policy
// added to liveness_config is covered without a line here.
#define BOOST_TEST_MODULE policy_description
#include <boost/test/unit_test.hpp>

#include <heartwheel/net/config/liveness_toml.hpp>

#include <fstream>
#include <sstream>

using namespace heartwheel::net;

namespace {

// A field's default value as a TOML value of the type its kind asks for.
std::string toml_value(const field_description& f, double v) {
    switch (f.kind) {
    case field_kind::duration:
    case field_kind::seconds: return v == 0 ? "0" : '"' + field_text(f, v) + '"'; // a TOML string carries its unit
    case field_kind::size:
    case field_kind::choice: return '"' + field_text(f, v) + '"';
    case field_kind::number: {
        std::ostringstream os;
        os.precision(17);
        os << v;
        const std::string t = os.str();
        return t.find_first_of(".e") == std::string::npos ? t + ".0" : t;
    }
    default: return field_text(f, v);
    }
}

template <class F> void each_field(liveness_config& c, F f) {
    c.for_each_policy([&](const policy_description& d, void* p) {
        for (const auto& fd : d.fields) f(d, fd, p);
    });
}

} // namespace

BOOST_AUTO_TEST_CASE(every_field_round_trips_through_toml) {
    liveness_config defaults;
    std::size_t fields = 0;
    each_field(defaults, [&](const policy_description& d, const field_description& f, void* p) {
        const std::string text = std::string("[") + d.table + "]\n" + f.name + " = " + toml_value(f, f.get(p)) + "\n";
        liveness_config loaded;
        BOOST_TEST_CONTEXT(text) {
            apply_liveness_tables(loaded, toml::parse(text), "t.toml");
            const auto got = find_field(loaded, std::string(d.table) + "." + f.name);
            BOOST_TEST_REQUIRE(static_cast<bool>(got));
            BOOST_TEST(got.field->get(got.at) == f.get(p));
        }
        ++fields;
    });
    BOOST_TEST(fields >= 30u);
}

BOOST_AUTO_TEST_CASE(a_value_past_its_described_range_is_refused_naming_the_field) {
    liveness_config base;
    base.heartbeat.interval = std::chrono::seconds(1); // so that the heartbeat's timeout is judged
    std::size_t refused = 0;
    each_field(base, [&](const policy_description& d, const field_description& f, void* p) {
        if (f.kind == field_kind::flag || (f.applies && !f.applies(p))) return;
        const double old = f.get(p);
        for (const double bad : {f.hi + 1, f.lo - 1}) {
            if (bad < 0 && f.kind != field_kind::duration && f.kind != field_kind::number) continue; // unsigned storage
            f.set(p, bad);
            const std::string name = std::string(d.table) + "." + f.name;
            BOOST_TEST_CONTEXT(name << " = " << bad) {
                try {
                    base.validate();
                    BOOST_ERROR("accepted");
                } catch (const config_error& e) {
                    BOOST_TEST(e.field() == name);
                    BOOST_TEST(std::string(e.what()).find(range_text(f)) != std::string::npos, e.what());
                    ++refused;
                }
            }
            f.set(p, old);
        }
    });
    BOOST_TEST(refused >= 30u);
    BOOST_CHECK_NO_THROW(base.validate());
}

BOOST_AUTO_TEST_CASE(each_scalable_timeout_has_its_min_under_overload) {
    std::size_t scalable = 0;
    liveness_config probe;
    each_field(probe, [&](const policy_description& d, const field_description& f, void*) {
        if (!f.scalable()) return;
        ++scalable;
        const std::string key = std::string(f.name) + "_min";
        liveness_config c;
        BOOST_TEST(!c.scales());
        apply_liveness_tables(c, toml::parse("[overload]\n" + key + " = \"50%\"\n"), "t.toml");
        const auto got = find_field(c, "overload." + key);
        BOOST_TEST_REQUIRE(static_cast<bool>(got));
        BOOST_TEST(got.is_min);
        BOOST_TEST(got.policy->table == d.table);
        BOOST_TEST(f.min_of(got.at).fraction == 0.5);
        BOOST_TEST(c.scales());
        BOOST_TEST(got.text() == "50%");
        BOOST_TEST(is_policy_reason(f.reason)); // a close at a scaled timeout completes with timed_out
    });
    BOOST_TEST(scalable == 6u); // reader, writer and all idle; read timeout; handshake; max age
    BOOST_TEST(!find_field(probe, "overload.misses_min")); // not a scalable timeout
    BOOST_TEST(!find_field(probe, "idle.nope"));
}

BOOST_AUTO_TEST_CASE(flags_parse_through_the_description) {
    liveness_config c;
    find_field(c, "idle.reader_idle").set("1500", "--reader-idle", true); // a bare number on a command line
    BOOST_TEST(c.idle.reader_idle.count() == 1500);
    find_field(c, "keepalive.idle").set("2m", "--keepalive-idle", true);
    BOOST_TEST(c.keepalive.idle.count() == 120);
    find_field(c, "output.hard_limit").set("16MiB", "--output-hard-limit", true);
    BOOST_TEST(c.output.hard_limit == 16u << 20);
    find_field(c, "backoff.strategy").set("full", "--backoff-strategy", true);
    BOOST_TEST((c.backoff.strategy == backoff_strategy::full));
    find_field(c, "overload.max_age_min").set("10s", "--max-age-min", true);
    BOOST_TEST(c.limits.max_age_min.min.count() == 10000);
    try {
        find_field(c, "heartbeat.misses").set("0", "--heartbeat-misses", true);
        BOOST_ERROR("accepted");
    } catch (const config_error& e) {
        BOOST_TEST(std::string(e.what()) == "--heartbeat-misses = 0 is out of range: accepted 1..1000");
    }
    try {
        find_field(c, "heartbeat.trigger").set("sideways", "--heartbeat-trigger", true);
        BOOST_ERROR("accepted");
    } catch (const config_error& e) {
        BOOST_TEST(std::string(e.what()) == "--heartbeat-trigger = \"sideways\" is not valid: accepted inbound or outbound");
    }
}

BOOST_AUTO_TEST_CASE(close_reasons_say_which_a_policy_decides) {
    BOOST_TEST(is_policy_reason(close_reason::heartbeat_timeout));
    BOOST_TEST(is_policy_reason(close_reason::max_age));
    BOOST_TEST(!is_policy_reason(close_reason::handshake_failed));
    BOOST_TEST(!is_policy_reason(close_reason::slow_consumer));
    BOOST_TEST(!is_policy_reason(define_close_reason("policy-description-test")));
    for (const auto& r : builtin_reasons) BOOST_TEST((define_close_reason(r.name) == r.reason));
}

// docs/liveness.md's table of knobs is knob_table(), between its markers: a field added, renamed or
// given a new range or default changes the page.
BOOST_AUTO_TEST_CASE(the_docs_table_of_knobs_is_the_descriptions) {
    std::ifstream in(HEARTWHEEL_DOCS_DIR "/liveness.md");
    BOOST_TEST_REQUIRE(static_cast<bool>(in));
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string page = ss.str();
    const std::string begin = "<!-- knobs: generated from the policies' descriptions (knob_table()) -->\n", end = "<!-- /knobs -->";
    const auto a = page.find(begin), b = page.find(end);
    BOOST_TEST_REQUIRE((a != std::string::npos && b != std::string::npos && a < b));
    const std::string table = page.substr(a + begin.size(), b - a - begin.size());
    BOOST_TEST(table == knob_table(), "docs/liveness.md's table differs; it should read:\n" << knob_table());
}
