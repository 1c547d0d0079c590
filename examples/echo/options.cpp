// options.cpp — one table of option specs per binary drives CLI11 (flags), the --config file's keys
// and validation, so a flag and its config key can never disagree about names, ranges or defaults.
// Options that set a liveness policy name its field: their values are parsed here, range-checked by
// heartwheel::net's validate(), and its errors are reported with the flag or key the user wrote.
#include "options.hpp"
#include "timing.hpp"

#include <asio/ip/address.hpp>
#include <asio/ip/address_v4.hpp>

#include <heartwheel/net/config/liveness_toml.hpp>

#include <CLI/CLI.hpp>

#include <charconv>
#include <functional>
#include <map>
#include <sstream>

namespace echo {
namespace {

namespace net = heartwheel::net;
using std::chrono::milliseconds;

constexpr std::int64_t year_ms = 365LL * 24 * 3600 * 1000;

/// A value as given: command-line text, or a TOML node's type and text.
struct raw_value {
    enum kind { cli, toml_string, toml_integer, toml_float, toml_bool, toml_other } from = cli;
    std::string text;
};

struct spec {
    std::string flag;  ///< without dashes: "reader-idle"
    std::string help;
    std::string def;   ///< default, as text
    std::string field; ///< the liveness field it sets ("idle.reader_idle"), empty for the binary's own
    bool is_switch = false;
    std::function<void(const raw_value& value, const std::string& who)> apply;
};

[[noreturn]] void bad(const std::string& who, const std::string& value, const std::string& accepted) {
    throw usage_error(who + ": invalid value '" + value + "': accepted " + accepted);
}

void need(const raw_value& v, const std::string& who, std::initializer_list<raw_value::kind> kinds, const char* accepted) {
    if (v.from == raw_value::cli) return;
    for (auto k : kinds)
        if (v.from == k) return;
    bad(who, v.text, accepted);
}

std::int64_t to_int(const raw_value& v, const std::string& who, std::int64_t lo, std::int64_t hi, const char* unit) {
    need(v, who, {raw_value::toml_integer}, "an integer");
    std::int64_t out = 0;
    const auto* end = v.text.data() + v.text.size();
    auto [p, ec] = std::from_chars(v.text.data(), end, out);
    const std::string accepted = std::to_string(lo) + ".." + std::to_string(hi) + unit;
    if (ec != std::errc{} || p != end || out < lo || out > hi) bad(who, v.text, accepted);
    return out;
}

bool to_bool(const raw_value& v, const std::string& who) {
    need(v, who, {raw_value::toml_bool, raw_value::toml_string}, "yes or no (true or false)");
    const auto& t = v.text;
    if (t == "yes" || t == "true" || t == "1" || t == "on") return true;
    if (t == "no" || t == "false" || t == "0" || t == "off") return false;
    bad(who, t, "yes or no");
}

/// A duration: on the command line a bare number is milliseconds; in TOML an integer is
/// milliseconds and a string must carry its unit (so `reader_idle = "100"` is refused).
milliseconds to_duration(const raw_value& v, const std::string& who) {
    try {
        switch (v.from) {
        case raw_value::cli: return net::parse_duration(v.text, who, milliseconds(1));
        case raw_value::toml_string: return net::parse_duration(v.text, who, milliseconds(0));
        case raw_value::toml_integer: return net::parse_duration(v.text, who, milliseconds(1));
        default: break;
        }
    } catch (const net::config_error& e) {
        throw usage_error(e.what());
    }
    bad(who, v.text, "a duration: an integer number of milliseconds, or a string with a unit (\"500ms\", \"30s\", \"2m\")");
}

// --- spec makers: the binary's own options carry their range; liveness ones leave it to net -------
spec own_ms(std::string flag, std::string help, std::int64_t& target, std::int64_t lo = 0, std::int64_t hi = year_ms) {
    return {flag, help, std::to_string(target), "", false, [&target, lo, hi](const raw_value& v, const std::string& who) {
                const auto ms = to_duration(v, who).count();
                if (ms < lo || ms > hi)
                    bad(who, v.text, std::to_string(lo) + ".." + std::to_string(hi) + " (milliseconds, or with a unit)");
                target = ms;
            }};
}
template <class T>
spec own_count(std::string flag, std::string help, T& target, std::int64_t lo, std::int64_t hi, const char* unit = "") {
    return {flag, help, std::to_string(target), "", false, [&target, lo, hi, unit](const raw_value& v, const std::string& who) {
                target = static_cast<T>(to_int(v, who, lo, hi, unit));
            }};
}
/// A count that may also be "auto" (server_options::auto_share): its default, derived from other options.
spec share_opt(std::string flag, std::string help, std::size_t& target) {
    return {flag, help, "auto", "", false, [&target](const raw_value& v, const std::string& who) {
                if (v.text == "auto") {
                    target = server_options::auto_share;
                    return;
                }
                if (v.from == raw_value::toml_string) bad(who, v.text, "an integer 0..10000000, or \"auto\"");
                target = static_cast<std::size_t>(to_int(v, who, 0, 10'000'000, " (or auto)"));
            }};
}
/// An option that sets a liveness field (`field`: "idle.reader_idle", "overload.reader_idle_min"): how
/// it is written, its default and its range come from the field's description (net::find_field);
/// `help` is what this binary says about it. A TOML value's type is checked against the field's kind.
spec live(std::string flag, std::string field, std::string help, net::liveness_config& l) {
    const net::config_field f = net::find_field(l, field);
    if (!f) throw std::logic_error("echo options: no liveness field " + field);
    return {flag, help, f.text(), field, false, [f](const raw_value& v, const std::string& who) {
                using k = net::field_kind;
                switch (f.is_min ? k::duration : f.field->kind) {
                case k::duration:
                case k::seconds:
                    need(v, who, {raw_value::toml_string, raw_value::toml_integer},
                         "a duration: an integer number of milliseconds, or a string with a unit (\"500ms\", \"30s\", \"2m\")");
                    break;
                case k::count: need(v, who, {raw_value::toml_integer}, "an integer"); break;
                case k::number: need(v, who, {raw_value::toml_integer, raw_value::toml_float}, "a number"); break;
                case k::size: need(v, who, {raw_value::toml_string, raw_value::toml_integer}, "a size: bytes, or with a unit (\"8MiB\")"); break;
                case k::flag: need(v, who, {raw_value::toml_bool}, "true or false"); break;
                case k::choice: need(v, who, {raw_value::toml_string}, "a string"); break;
                }
                try {
                    f.set(v.text, who, v.from != raw_value::toml_string);
                } catch (const net::config_error& e) {
                    throw usage_error(e.what());
                }
            }};
}
spec yesno_opt(std::string flag, std::string help, bool& target) {
    return {flag, help, target ? "yes" : "no", "", false,
            [&target](const raw_value& v, const std::string& who) { target = to_bool(v, who); }};
}
spec switch_opt(std::string flag, std::string help, bool& target) {
    return {flag, help, "off", "", true, [&target](const raw_value& v, const std::string& who) { target = to_bool(v, who); }};
}
spec text_opt(std::string flag, std::string help, std::string& target) {
    return {flag, help, target, "", false, [&target](const raw_value& v, const std::string& who) {
                need(v, who, {raw_value::toml_string}, "a string");
                target = v.text;
            }};
}
spec endpoint_opt(std::string flag, std::string help, endpoint_spec& target) {
    return {flag, help, target.text(), "", false, [&target](const raw_value& v, const std::string& who) {
                need(v, who, {raw_value::toml_string}, "a string \"HOST:PORT\"");
                target = parse_endpoint(v.text, who);
            }};
}

std::string key_of(const std::string& flag) {
    std::string k = flag;
    for (auto& c : k)
        if (c == '-') c = '_';
    return k;
}

raw_value raw_of(const toml::node& n) {
    raw_value v;
    if (auto s = n.value_exact<std::string>()) return {raw_value::toml_string, *s};
    if (auto b = n.value_exact<bool>()) return {raw_value::toml_bool, *b ? "true" : "false"};
    if (auto i = n.value_exact<std::int64_t>()) return {raw_value::toml_integer, std::to_string(*i)};
    std::ostringstream os;
    n.visit([&os](const auto& x) { os << x; });
    return {n.is_floating_point() ? raw_value::toml_float : raw_value::toml_other, os.str()};
}

/// Who set each liveness field ("--reader-idle", "reader_idle (in f.toml)", "heartbeat.interval (in
/// f.toml)"), so net's validation errors name what the user wrote.
using field_sources = std::map<std::string, std::string>;

/// Runs CLI11 over the specs, then fills what the command line did not give from --config: its
/// liveness tables through net's loader, then its keys. Returns who set each liveness field.
field_sources parse(const std::string& name, const std::string& about, std::vector<spec>& specs,
                    net::liveness_config& live, int argc, const char* const* argv) {
    CLI::App app(about, name);
    app.get_formatter()->column_width(34);
    std::map<std::string, std::string> given;
    std::map<std::string, bool> switches;
    std::string config_path;
    app.add_option("--config", config_path,
                   "TOML file: any of these options (keys use '_' for '-') and liveness tables ([heartbeat], [idle], ...)");
    for (auto& s : specs) {
        if (s.is_switch) app.add_flag("--" + s.flag, switches[s.flag], s.help);
        else app.add_option("--" + s.flag, given[s.flag], s.help)->default_str(s.def)->type_name("");
    }
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
        throw help_requested{app.help()};
    } catch (const CLI::ParseError& e) {
        throw usage_error(e.what());
    }
    field_sources sources;
    toml::table file;
    if (app.get_option("--config")->count() > 0) {
        try {
            const std::string text = net::read_config_file(config_path, "--config");
            try {
                file = toml::parse(text, config_path);
            } catch (const toml::parse_error& e) {
                std::ostringstream os;
                os << "--config " << config_path << ": invalid TOML at line " << e.source().begin.line << ": " << e.description();
                throw usage_error(os.str());
            }
            std::vector<std::string> own; // the binary's own keys, one per flag
            for (const auto& s : specs) own.push_back(key_of(s.flag));
            net::apply_liveness_tables(live, file, config_path, own);
        } catch (const net::config_error& e) {
            throw usage_error(e.what());
        }
        for (const auto& [k, v] : file) {
            const std::string key(k.str());
            if (net::is_liveness_table(key)) {
                for (const auto& [field, _] : *v.as_table())
                    sources[key + "." + std::string(field.str())] = key + "." + std::string(field.str()) + " (in " + config_path + ")";
                continue;
            }
        }
    }
    for (auto& s : specs) {
        const auto* opt = app.get_option_no_throw("--" + s.flag);
        std::string who;
        if (opt != nullptr && opt->count() > 0) {
            who = "--" + s.flag;
            s.apply({raw_value::cli, s.is_switch ? "true" : given[s.flag]}, who);
        } else if (auto* node = file.get(key_of(s.flag))) {
            who = key_of(s.flag) + " (in " + config_path + ")";
            s.apply(raw_of(*node), who);
        }
        if (!who.empty() && !s.field.empty()) sources[s.field] = who;
    }
    return sources;
}

/// Validates the liveness policies; a config_error becomes a usage_error naming the flags or keys.
void validate_policies(const net::liveness_config& c, const field_sources& sources) {
    try {
        c.validate();
    } catch (const net::config_error& e) {
        std::string msg = e.what();
        const bool given = sources.count(e.field()) > 0;
        if (msg.rfind(e.field(), 0) == 0) msg.replace(0, e.field().size(), given ? sources.at(e.field()) : e.field() + " (default)");
        for (const auto& [field, who] : sources) // other fields the message mentions
            if (field != e.field())
                if (auto p = msg.find(field + ","); p != std::string::npos) msg.replace(p, field.size(), who);
        throw usage_error(msg);
    }
}

/// Each policy derives what was not given from what was (backoff.max alone lowers backoff.initial).
void derive(net::liveness_config& l, const field_sources& sources) {
    l.for_each_policy([&sources](const net::policy_description& d, void* p) {
        if (!d.derive) return;
        std::uint64_t given = 0;
        for (std::size_t i = 0; i < d.fields.size(); ++i)
            if (sources.count(std::string(d.table) + "." + d.fields[i].name)) given |= std::uint64_t{1} << i;
        d.derive(p, given);
    });
}

} // namespace

endpoint_spec parse_endpoint(const std::string& text, const std::string& who) {
    const auto colon = text.rfind(':');
    if (colon == std::string::npos || colon == 0) bad(who, text, "HOST:PORT with PORT 0..65535");
    endpoint_spec e;
    e.host = text.substr(0, colon);
    if (e.host.size() > 2 && e.host.front() == '[' && e.host.back() == ']') e.host = e.host.substr(1, e.host.size() - 2);
    e.port = static_cast<std::uint16_t>(to_int({raw_value::cli, text.substr(colon + 1)}, who, 0, 65535, " (port)"));
    return e;
}

server_options parse_server_options(int argc, const char* const* argv) {
    server_options o;
    auto& l = o.live;
    l.connection.activity = net::reader_activity::messages; // a data line is activity, a PONG is not
    std::string metrics;
    std::string proxy_from = net::to_string(o.proxy.trusted);
    std::int64_t proxy_timeout_ms = o.proxy.timeout.count();
    std::vector<spec> specs = {
        endpoint_opt("listen", "address to listen on; port 0 picks a free port", o.listen),
        live("reader-idle", "idle.reader_idle", "close after this long without a data line (0 = off)", l),
        live("writer-idle", "idle.writer_idle", "close after this long without writing (0 = off)", l),
        live("all-idle", "idle.all_idle", "close after this long without reading or writing (0 = off)", l),
        live("heartbeat-interval", "heartbeat.interval", "send PING after this long of silence (--heartbeat-trigger; 0 = off)", l),
        live("heartbeat-trigger", "heartbeat.trigger",
                     "the silence a PING follows: inbound (nothing received) or outbound (nothing sent)", l),
        live("heartbeat-timeout", "heartbeat.timeout", "a PING with nothing received within this is a miss", l),
        live("heartbeat-misses", "heartbeat.misses", "close after this many consecutive misses", l),
        live("heartbeat-jitter", "heartbeat.jitter", "randomize each interval by up to this fraction", l),
        live("heartbeat-rtt-factor", "heartbeat.rtt_factor",
                  "judge a ping no earlier than this many smoothed RTTs (srtt + 4 rttvar) after it (0 = off)", l),
        live("read-timeout", "timeouts.read_timeout", "close after this long without receiving a byte (0 = off)", l),
        live("write-timeout", "timeouts.write_timeout", "close when a write makes no progress for this long (0 = off)", l),
        own_ms("tick", "the timing wheel's tick", o.tick_ms, 1, 1000),
        own_count("threads", "io_context threads, one wheel each", o.threads, 1, 256),
        own_count("io-threads", "instead of --threads: one io_context run by this many threads, a strand and a wheel "
                  "per thread (the thread-pool model; 0 = off)", o.io_threads, 0, 256),
        text_opt("timers", timing_choices(true), o.timers),
        own_count("max-line", "longest line in bytes before the newline", o.max_line, 1, 16 * 1024 * 1024, " (bytes)"),
        own_count("max-connections", "beyond this a new connection gets BYE busy", o.max_connections, 1, 10'000'000),
        share_opt("source-share", "connections one address may hold before the rest is its excess: excess does not "
                  "count towards overload, and at --max-connections a newcomer from an address within its share "
                  "displaces the newest connection of the address furthest over it, closed over-share (auto = a tenth "
                  "of --max-connections; 0 = off)",
                  o.source_share),
        live("max-age", "limits.max_age", "close connections older than this, with ±10% jitter (0 = off)", l),
        live("output-high-water", "output.high_water", "stop reading a connection with more than this queued for it", l),
        live("output-low-water", "output.low_water", "read it again at or below this", l),
        live("output-hard-limit", "output.hard_limit", "close slow-consumer at once past this queued (0 = off)", l),
        live("output-soft-limit", "output.soft_limit", "close slow-consumer above this for --output-soft-limit-time (0 = off)", l),
        live("output-soft-limit-time", "output.soft_limit_time", "how long a connection may stay above --output-soft-limit", l),
        switch_opt("tls", "serve TLS (needs --cert and --key)", o.tls),
        text_opt("cert", "PEM certificate chain for --tls", o.cert),
        text_opt("key", "PEM private key for --tls", o.key),
        text_opt("tls-ciphers", "TLS 1.2 cipher suites, OpenSSL syntax (TLS 1.2 or later only)", o.tls_policy.ciphers),
        text_opt("tls-groups", "key-exchange groups, OpenSSL syntax (no finite-field groups by default: they cost the server "
                               "hundreds of times more CPU per handshake)", o.tls_policy.groups),
        yesno_opt("tls-lean", "after a TLS 1.3 handshake, drop OpenSSL's per-connection state (~14 KiB) and protect the "
                              "records from the traffic secrets (net::enable_lean_records; no session tickets)",
                  o.tls_policy.lean_records),
        live("handshake-timeout", "limits.handshake_timeout", "TLS handshake must finish within this (0 = off)", l),
        own_count("max-handshakes", "TLS handshakes in progress at once, at most half of --max-connections (a handshake "
                  "takes a place when its peer first speaks); beyond, they queue for one (0 = off)", o.max_handshakes, 0, 10'000'000),
        own_ms("handshake-stall", "a handshake this old with no ClientHello read and nothing unread is closed handshake-shed "
               "while it holds what others wait for (a connection place at the limit, a handshake place)",
               o.handshake_stall_ms, 1, 60'000),
        own_count("max-handshakes-per-source", "TLS handshakes in progress at once from one address; beyond, a new one is "
                  "closed busy (0 = off)", o.handshakes.max_pending_per_source, 0, 10'000'000),
        own_count("handshake-rate-per-source", "TLS handshakes one address may start per second (a second's burst); beyond, "
                  "closed busy (0 = off)", o.handshakes.per_source_rate, 0, 1'000'000, " (per second)"),
        switch_opt("proxy-protocol", "every connection starts with a PROXY header (v1 or v2) naming its client, from "
                   "--proxy-from; any other is closed proxy-untrusted, -missing, -malformed, -oversized or -timeout", o.proxy.enabled),
        text_opt("proxy-from", "the balancers' address ranges trusted to send a PROXY header (CIDR,CIDR...)", proxy_from),
        own_ms("proxy-timeout", "a PROXY header must be whole within this after the accept", proxy_timeout_ms, 10, 60'000),
        live("overload-threshold", "overload.threshold",
                  "scale the timeouts given a --*-min once connections or descriptors in use pass this fraction of their limit", l),
        live("reader-idle-min", "overload.reader_idle_min", "under full overload --reader-idle shrinks to this (ms, or N% of it)", l),
        live("writer-idle-min", "overload.writer_idle_min", "likewise for --writer-idle", l),
        live("all-idle-min", "overload.all_idle_min", "likewise for --all-idle", l),
        live("read-timeout-min", "overload.read_timeout_min", "likewise for --read-timeout", l),
        live("handshake-timeout-min", "overload.handshake_timeout_min", "likewise for --handshake-timeout", l),
        live("max-age-min", "overload.max_age_min", "likewise for --max-age", l),
        own_ms("stats-interval", "print a line of counters this often (0 = off)", o.stats_interval_ms),
        text_opt("metrics", "serve Prometheus text at http://HOST:PORT/metrics", metrics),
        own_ms("drain-window", "on the first SIGINT/SIGTERM, ask connections to leave (BYE draining <ms>) spread over this "
               "long, then shut down; a second signal shuts down at once (0 = no drain)", o.drain_window_ms, 0, 600'000),
        own_ms("shutdown-grace", "on SIGINT/SIGTERM, how long connections get to say BYE", o.shutdown_grace_ms, 0, 60000),
        switch_opt("reuse-port", "SO_REUSEPORT: several server processes may listen on the same port", o.reuse_port),
        text_opt("handover", "a Unix socket path: take the listening socket (its queued connects with it) from the "
                             "process serving it, which then drains, and serve it for the next one: a restart that "
                             "refuses no connect (off when empty)", o.handover),
    };
    const auto sources = parse("echo_server", "heartwheel echo/heartbeat server", specs, l, argc, argv);
    if (o.timers != "wheel") {
        const timing* t = find_timing(o.timers);
        if (!t) bad("--timers", o.timers, timing_choices(false));
        if (!t->scales && l.scales())
            throw usage_error("--timers " + o.timers + ": scaled timeouts (--*-min, [overload]) need --timers wheel (" +
                              o.timers + " has none)");
    }
    if (o.io_threads > 0 && o.threads > 1)
        throw usage_error("--io-threads " + std::to_string(o.io_threads) + " and --threads " + std::to_string(o.threads) +
                          " choose two threading models: give one of them");
    if (!metrics.empty()) o.metrics = parse_endpoint(metrics, "--metrics");
    try {
        o.proxy.trusted = net::parse_cidrs(proxy_from, "--proxy-from");
    } catch (const net::config_error& e) {
        throw usage_error(e.what());
    }
    o.proxy.timeout = milliseconds(proxy_timeout_ms);
    if (o.tls && (o.cert.empty() || o.key.empty())) throw usage_error("--tls: --cert FILE and --key FILE are required");
    if (!o.tls && (!o.cert.empty() || !o.key.empty())) throw usage_error("--cert/--key: only valid with --tls");
    derive(l, sources);
    validate_policies(l, sources);
    // The echo of one longest line must fit under the slow-consumer limit, or a client sending such
    // lines would be closed by its own echo.
    if (l.output.hard_limit > 0 && o.max_line + 1 > l.output.hard_limit)
        throw usage_error("--max-line " + std::to_string(o.max_line) + " needs --output-hard-limit of at least " +
                          std::to_string(o.max_line + 1) + " bytes (or 0 = off): it is " + net::size_text(l.output.hard_limit) +
                          ", so the echo of one such line would close its client slow-consumer");
    return o;
}

std::vector<std::string> parse_sources(const std::string& text, const std::string& who) {
    const char* accepted = "IP addresses separated by commas, or ranges A-B of IPv4 addresses (at most 65536 in all)";
    std::vector<std::string> out;
    std::size_t at = 0;
    while (at <= text.size()) {
        const std::size_t comma = std::min(text.find(',', at), text.size());
        const std::string item = text.substr(at, comma - at);
        at = comma + 1;
        std::error_code ec;
        const std::size_t dash = item.find('-');
        if (dash == std::string::npos) {
            asio::ip::make_address(item, ec);
            if (ec) bad(who, text, accepted);
            out.push_back(item);
        } else {
            const auto first = asio::ip::make_address_v4(item.substr(0, dash), ec);
            if (ec) bad(who, text, accepted);
            const auto last = asio::ip::make_address_v4(item.substr(dash + 1), ec);
            if (ec || last.to_uint() < first.to_uint() || last.to_uint() - first.to_uint() >= 65536) bad(who, text, accepted);
            for (auto a = first.to_uint(); a <= last.to_uint() && out.size() <= 65536; ++a)
                out.push_back(asio::ip::address_v4(a).to_string());
        }
        if (out.size() > 65536) bad(who, text, accepted);
    }
    return out;
}

client_options parse_client_options(int argc, const char* const* argv) {
    client_options o;
    auto& l = o.live;
    // Liveness on by default, as the server's: a server that stops answering is found by the
    // heartbeat (after inbound silence), one that stops reading by the library's write timeout.
    l.heartbeat.interval = milliseconds(30000);
    std::string source;
    std::vector<spec> specs = {
        endpoint_opt("connect", "server address", o.connect),
        own_count("connections", "connections to open", o.connections, 1, 1'000'000),
        own_ms("send-interval", "send one line per interval per connection (0 = send nothing)", o.send_interval_ms),
        own_count("payload", "bytes per line", o.payload, 1, 1 << 24, " (bytes)"),
        own_ms("duration", "run this long, then print the summary", o.duration_ms, 1),
        yesno_opt("answer-pings", "answer the server's PING lines", o.answer_pings),
        switch_opt("tls", "connect with TLS", o.tls),
        text_opt("ca", "PEM CA file to verify the server with", o.ca),
        switch_opt("insecure", "do not verify the server's certificate", o.insecure),
        live("request-timeout", "request.timeout", "an echo later than this counts as a timeout (0 = off)", l),
        live("reader-idle", "idle.reader_idle", "close (and reconnect) after this long without a byte from the server (0 = off)", l),
        live("heartbeat-interval", "heartbeat.interval", "send PING after this long of silence (--heartbeat-trigger; 0 = off)", l),
        live("heartbeat-trigger", "heartbeat.trigger",
                     "the silence a PING follows: inbound (nothing received) or outbound (nothing sent)", l),
        live("heartbeat-timeout", "heartbeat.timeout", "a PING with nothing received within this is a miss", l),
        live("heartbeat-misses", "heartbeat.misses", "close (and reconnect) after this many consecutive misses", l),
        live("write-timeout", "timeouts.write_timeout",
                "close (and reconnect) when a write makes no progress for this long (0 = off)", l),
        yesno_opt("reconnect", "reconnect with backoff when closed", o.reconnect),
        live("backoff-initial", "backoff.initial", "first reconnect delay", l),
        live("backoff-max", "backoff.max", "largest reconnect delay", l),
        live("backoff-multiplier", "backoff.multiplier", "growth per failure", l),
        live("backoff-jitter", "backoff.jitter", "± fraction for the grpc strategy", l),
        live("backoff-strategy", "backoff.strategy", "grpc, full, equal or decorrelated", l),
        live("stable-after", "backoff.stable_after", "a connection up this long resets the backoff", l),
        live("connect-timeout", "backoff.min_connect_timeout",
                "a connect attempt gets at least this long (grows with the backoff)", l),
        switch_opt("quiet", "no progress line on stderr", o.quiet),
        switch_opt("verbose", "log each connect, close and reconnect wait on stderr", o.verbose),
        own_count("connect-stagger-us", "microseconds between initial connects", o.connect_stagger_us, 0, 1'000'000, " (microseconds)"),
        own_count("connect-window", "at most this many connections in their first attempt at once, the next begun as one "
                  "is established or fails (0 = all)", o.connect_window, 0, 10'000'000),
        own_count("timeline", "count first establishments per this many ms since the start, in the summary's "
                  "\"timeline\" (0 = off)", o.timeline_ms, 0, 60'000, " (ms)"),
        text_opt("source", "connect from these local addresses, round robin (A,B or A-B ranges of IPv4 addresses)", source),
    };
    const auto sources = parse("echo_client", "heartwheel echo/heartbeat client and load generator", specs, l, argc, argv);
    if (o.tls && o.ca.empty() && !o.insecure) throw usage_error("--tls: give --ca FILE or --insecure");
    if (!source.empty()) o.sources = parse_sources(source, "--source");
    derive(l, sources);
    validate_policies(l, sources);
    return o;
}

} // namespace echo
