// options.cpp — one table of option specs per binary drives CLI11 (flags), toml++ (the --config file)
// and validation, so a flag and its config key can never disagree about names, ranges or defaults.
#include "options.hpp"

#include <CLI/CLI.hpp>
#include <toml++/toml.h>

#include <charconv>
#include <functional>
#include <map>
#include <sstream>

namespace echo {
namespace {

constexpr std::int64_t year_ms = 365LL * 24 * 3600 * 1000;

struct spec {
    std::string flag;    ///< without dashes: "reader-idle"
    std::string help;
    std::string def;     ///< default, as text
    bool is_switch = false;
    std::function<void(const std::string& value, const std::string& who)> apply;
};

[[noreturn]] void bad(const std::string& who, const std::string& value, const std::string& accepted) {
    throw usage_error(who + ": invalid value '" + value + "': accepted " + accepted);
}

std::int64_t to_int(const std::string& v, const std::string& who, std::int64_t lo, std::int64_t hi, const char* unit) {
    std::int64_t out = 0;
    const auto* end = v.data() + v.size();
    auto [p, ec] = std::from_chars(v.data(), end, out);
    const std::string accepted = std::to_string(lo) + ".." + std::to_string(hi) + unit;
    if (ec != std::errc{} || p != end || out < lo || out > hi) bad(who, v, accepted);
    return out;
}

double to_double(const std::string& v, const std::string& who, double lo, double hi) {
    std::ostringstream range;
    range << lo << ".." << hi;
    try {
        std::size_t used = 0;
        const double d = std::stod(v, &used);
        if (used != v.size() || !(d >= lo && d <= hi)) bad(who, v, range.str());
        return d;
    } catch (const std::logic_error&) {
        bad(who, v, range.str());
    }
}

bool to_bool(const std::string& v, const std::string& who) {
    if (v == "yes" || v == "true" || v == "1" || v == "on") return true;
    if (v == "no" || v == "false" || v == "0" || v == "off") return false;
    bad(who, v, "yes or no");
}

spec ms_opt(std::string flag, std::string help, std::int64_t& target, std::int64_t lo = 0, std::int64_t hi = year_ms) {
    return {flag, help, std::to_string(target), false,
            [&target, lo, hi](const std::string& v, const std::string& who) { target = to_int(v, who, lo, hi, " (milliseconds)"); }};
}
spec dur_opt(std::string flag, std::string help, std::chrono::milliseconds& target, std::int64_t lo = 0, std::int64_t hi = year_ms) {
    return {flag, help, std::to_string(target.count()), false,
            [&target, lo, hi](const std::string& v, const std::string& who) {
                target = std::chrono::milliseconds(to_int(v, who, lo, hi, " (milliseconds)"));
            }};
}
template <class T>
spec count_opt(std::string flag, std::string help, T& target, std::int64_t lo, std::int64_t hi, const char* unit = "") {
    return {flag, help, std::to_string(target), false,
            [&target, lo, hi, unit](const std::string& v, const std::string& who) { target = static_cast<T>(to_int(v, who, lo, hi, unit)); }};
}
spec frac_opt(std::string flag, std::string help, double& target, double lo, double hi) {
    std::ostringstream d;
    d << target;
    return {flag, help, d.str(), false,
            [&target, lo, hi](const std::string& v, const std::string& who) { target = to_double(v, who, lo, hi); }};
}
spec yesno_opt(std::string flag, std::string help, bool& target) {
    return {flag, help, target ? "yes" : "no", false,
            [&target](const std::string& v, const std::string& who) { target = to_bool(v, who); }};
}
spec switch_opt(std::string flag, std::string help, bool& target) {
    return {flag, help, "off", true, [&target](const std::string& v, const std::string& who) { target = to_bool(v, who); }};
}
spec text_opt(std::string flag, std::string help, std::string& target) {
    return {flag, help, target, false, [&target](const std::string& v, const std::string&) { target = v; }};
}
spec endpoint_opt(std::string flag, std::string help, endpoint_spec& target) {
    return {flag, help, target.text(), false,
            [&target](const std::string& v, const std::string& who) { target = parse_endpoint(v, who); }};
}

std::string key_of(const std::string& flag) {
    std::string k = flag;
    for (auto& c : k)
        if (c == '-') c = '_';
    return k;
}

std::string toml_text(const toml::node& n) {
    if (auto s = n.value_exact<std::string>()) return *s;
    if (auto b = n.value_exact<bool>()) return *b ? "true" : "false";
    std::ostringstream os;
    n.visit([&os](const auto& v) { os << v; });
    return os.str();
}

/// Runs CLI11 over the specs, then fills what the command line did not give from --config.
void parse(const std::string& name, const std::string& about, std::vector<spec>& specs, int argc, const char* const* argv) {
    CLI::App app(about, name);
    app.get_formatter()->column_width(34);
    std::map<std::string, std::string> given;
    std::map<std::string, bool> switches;
    std::string config_path;
    app.add_option("--config", config_path, "TOML file with any of these options (keys use '_' for '-')");
    for (auto& s : specs) {
        if (s.is_switch) {
            app.add_flag("--" + s.flag, switches[s.flag], s.help);
        } else {
            app.add_option("--" + s.flag, given[s.flag], s.help)->default_str(s.def)->type_name("");
        }
    }
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
        throw help_requested{app.help()};
    } catch (const CLI::ParseError& e) {
        throw usage_error(e.what());
    }
    toml::table file;
    if (!config_path.empty()) {
        try {
            file = toml::parse_file(config_path);
        } catch (const toml::parse_error& e) {
            std::ostringstream os;
            os << "--config " << config_path << ": invalid TOML at line " << e.source().begin.line << ": " << e.description();
            throw usage_error(os.str());
        }
        for (const auto& [k, v] : file) {
            bool known = false;
            for (const auto& s : specs) known = known || key_of(s.flag) == k.str();
            if (!known) throw usage_error("--config " + config_path + ": unknown key '" + std::string(k.str()) + "'");
        }
    }
    for (auto& s : specs) {
        const auto* opt = app.get_option_no_throw("--" + s.flag);
        const bool on_cli = opt != nullptr && opt->count() > 0;
        if (on_cli) {
            s.apply(s.is_switch ? "true" : given[s.flag], "--" + s.flag);
        } else if (auto* node = file.get(key_of(s.flag))) {
            s.apply(toml_text(*node), key_of(s.flag) + " (in " + config_path + ")");
        }
    }
}

/// Maps a policy field named by config_error to the flag that sets it.
std::string flag_for(const std::string& field) {
    static const std::map<std::string, std::string> names = {
        {"heartbeat.timeout", "--heartbeat-timeout"}, {"heartbeat.interval", "--heartbeat-interval"},
        {"heartbeat.misses", "--heartbeat-misses"},   {"heartbeat.jitter", "--heartbeat-jitter"},
        {"backoff.max", "--backoff-max"},             {"backoff.initial", "--backoff-initial"},
        {"backoff.min_connect_timeout", "--connect-timeout"}};
    auto it = names.find(field);
    return it == names.end() ? field : it->second;
}

void validate_policies(const heartwheel::net::liveness_config& c) {
    try {
        c.validate();
    } catch (const heartwheel::net::config_error& e) {
        std::string msg = e.what();
        const auto pos = msg.find(e.field());
        if (pos != std::string::npos) msg.replace(pos, e.field().size(), flag_for(e.field()));
        for (const char* f : {"heartbeat.interval"})
            if (auto p = msg.find(f); p != std::string::npos) msg.replace(p, std::string(f).size(), flag_for(f));
        throw usage_error(msg);
    }
}

} // namespace

endpoint_spec parse_endpoint(const std::string& text, const std::string& who) {
    const auto colon = text.rfind(':');
    if (colon == std::string::npos || colon == 0) bad(who, text, "HOST:PORT with PORT 0..65535");
    endpoint_spec e;
    e.host = text.substr(0, colon);
    if (e.host.size() > 2 && e.host.front() == '[' && e.host.back() == ']') e.host = e.host.substr(1, e.host.size() - 2);
    e.port = static_cast<std::uint16_t>(to_int(text.substr(colon + 1), who, 0, 65535, " (port)"));
    return e;
}

server_options parse_server_options(int argc, const char* const* argv) {
    server_options o;
    auto& l = o.live;
    l.heartbeat.timeout = std::chrono::milliseconds(10000);
    l.timeouts.write_timeout = std::chrono::milliseconds(30000);
    std::string timers = "wheel", metrics;
    std::int64_t max_age = 0;
    std::vector<spec> specs = {
        endpoint_opt("listen", "address to listen on; port 0 picks a free port", o.listen),
        dur_opt("reader-idle", "close after this long without a data line (0 = off)", l.idle.reader_idle),
        dur_opt("writer-idle", "close after this long without writing (0 = off)", l.idle.writer_idle),
        dur_opt("all-idle", "close after this long without reading or writing (0 = off)", l.idle.all_idle),
        dur_opt("heartbeat-interval", "send PING after this long with nothing sent (0 = off)", l.heartbeat.interval),
        dur_opt("heartbeat-timeout", "a PING with nothing received within this is a miss", l.heartbeat.timeout),
        count_opt("heartbeat-misses", "close after this many consecutive misses", l.heartbeat.misses, 1, 1000),
        frac_opt("heartbeat-jitter", "randomize each interval by up to this fraction", l.heartbeat.jitter, 0.0, 0.5),
        dur_opt("write-timeout", "close when a write makes no progress for this long (0 = off)", l.timeouts.write_timeout),
        ms_opt("tick", "the timing wheel's tick", o.tick_ms, 1, 1000),
        count_opt("threads", "io_context threads, one wheel each", o.threads, 1, 256),
        text_opt("timers", "wheel, or asio for one steady_timer per connection per concern", timers),
        count_opt("max-line", "longest line in bytes before the newline", o.max_line, 1, 16 * 1024 * 1024, " (bytes)"),
        count_opt("max-connections", "beyond this a new connection gets BYE busy", o.max_connections, 1, 10'000'000),
        ms_opt("max-age", "close connections older than this, with ±10% jitter (0 = off)", max_age),
        switch_opt("tls", "serve TLS (needs --cert and --key)", o.tls),
        text_opt("cert", "PEM certificate chain for --tls", o.cert),
        text_opt("key", "PEM private key for --tls", o.key),
        dur_opt("handshake-timeout", "TLS handshake must finish within this (0 = off)", l.limits.handshake_timeout),
        ms_opt("stats-interval", "print a line of counters this often (0 = off)", o.stats_interval_ms),
        text_opt("metrics", "serve Prometheus text at http://HOST:PORT/metrics", metrics),
        ms_opt("shutdown-grace", "on SIGINT/SIGTERM, how long connections get to say BYE", o.shutdown_grace_ms, 0, 60000),
    };
    parse("echo_server", "heartwheel echo/heartbeat server", specs, argc, argv);
    if (timers == "wheel") o.timers = timer_mode::wheel;
    else if (timers == "asio") o.timers = timer_mode::asio;
    else bad("--timers", timers, "wheel or asio");
    if (!metrics.empty()) o.metrics = parse_endpoint(metrics, "--metrics");
    l.limits.max_age = std::chrono::milliseconds(max_age);
    if (o.tls && (o.cert.empty() || o.key.empty())) throw usage_error("--tls: --cert FILE and --key FILE are required");
    if (!o.tls && (!o.cert.empty() || !o.key.empty())) throw usage_error("--cert/--key: only valid with --tls");
    validate_policies(l);
    return o;
}

client_options parse_client_options(int argc, const char* const* argv) {
    client_options o;
    std::string strategy = "grpc";
    std::vector<spec> specs = {
        endpoint_opt("connect", "server address", o.connect),
        count_opt("connections", "connections to open", o.connections, 1, 1'000'000),
        ms_opt("send-interval", "send one line per interval per connection (0 = send nothing)", o.send_interval_ms),
        count_opt("payload", "bytes per line", o.payload, 1, 1 << 24, " (bytes)"),
        ms_opt("duration", "run this long, then print the summary", o.duration_ms, 1),
        yesno_opt("answer-pings", "answer the server's PING lines", o.answer_pings),
        switch_opt("tls", "connect with TLS", o.tls),
        text_opt("ca", "PEM CA file to verify the server with", o.ca),
        switch_opt("insecure", "do not verify the server's certificate", o.insecure),
        ms_opt("request-timeout", "an echo later than this counts as a timeout (0 = off)", o.request_timeout_ms),
        yesno_opt("reconnect", "reconnect with backoff when closed", o.reconnect),
        dur_opt("backoff-initial", "first reconnect delay", o.backoff.initial, 1),
        dur_opt("backoff-max", "largest reconnect delay", o.backoff.max, 1),
        frac_opt("backoff-multiplier", "growth per failure", o.backoff.multiplier, 1.0, 10.0),
        frac_opt("backoff-jitter", "± fraction for the grpc strategy", o.backoff.jitter, 0.0, 1.0),
        text_opt("backoff-strategy", "grpc, full, equal or decorrelated", strategy),
        dur_opt("stable-after", "a connection up this long resets the backoff", o.backoff.stable_after),
        dur_opt("connect-timeout", "a connect attempt gets at least this long (grows with the backoff)",
                o.backoff.min_connect_timeout, 1),
        switch_opt("quiet", "no progress line on stderr", o.quiet),
        switch_opt("verbose", "log each connect, close and reconnect wait on stderr", o.verbose),
        count_opt("connect-stagger-us", "microseconds between initial connects", o.connect_stagger_us, 0, 1'000'000, " (microseconds)"),
    };
    parse("echo_client", "heartwheel echo/heartbeat client and load generator", specs, argc, argv);
    if (strategy != "grpc" && strategy != "full" && strategy != "equal" && strategy != "decorrelated")
        bad("--backoff-strategy", strategy, "grpc, full, equal or decorrelated");
    o.backoff.strategy = heartwheel::net::parse_backoff_strategy(strategy, "--backoff-strategy");
    if (o.tls && o.ca.empty() && !o.insecure) throw usage_error("--tls: give --ca FILE or --insecure");
    try {
        o.backoff.validate();
    } catch (const heartwheel::net::config_error& e) {
        std::string msg = e.what();
        msg.replace(0, e.field().size(), flag_for(e.field()));
        throw usage_error(msg);
    }
    return o;
}

} // namespace echo
