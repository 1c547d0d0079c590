// heartwheel/net/config/liveness_config.hpp — all policies of a connection in one struct, loadable from TOML.
//
// liveness_config is the list of registered policies: one slot per policy (a slot names its member,
// `config.idle`), each policy described once (policy_description.hpp). Everything generic walks the
// list: validate(), the TOML loader, find_field() for applications' flags, scales() and knob_table().
// Adding a policy is one header (its struct, description and slot; timeout_policy.hpp) plus its slot
// in the list below; a slot that names a runtime has it run on every connection (policy_runtime.hpp).
//
// A TOML document has one table per policy, keys as the struct fields:
//   [idle]       reader_idle = "30s"
//   [heartbeat]  interval = "10s"   timeout = 5000   misses = 3   jitter = 0.1
//   [backoff]    strategy = "decorrelated"   max = "2m"
//   [overload]   threshold = 0.8   reader_idle_min = "5s"   max_age_min = "25%"
//   [output]     hard_limit = "8MiB"   soft_limit = "2MiB"   soft_limit_time = "10s"
//   [connection] linger = "2s"   activity = "messages"   close_on_idle = true
// A scalable timeout's minimum is `[overload] <field>_min`, a member of the timeout's own policy.
// A duration is a string with a unit ("500ms", "30s", "2m", "1h") or an integer in the field's unit:
// milliseconds, except keepalive.idle and keepalive.interval (seconds). A string without a unit, a
// number where a string belongs, unknown tables or keys and out-of-range values raise config_error
// naming the key and the source. Tables not present keep their defaults (or the values already in
// the struct, for apply_liveness_tables in liveness_toml.hpp, which also reads the tables out of a
// larger document of the application's own). A policy may derive fields not given from those given
// (setting backoff.max alone lowers backoff.initial to it when the default initial is larger).
// Reading TOML is heartwheel/net/config/liveness_toml.hpp's (parse_liveness_config, load_liveness_config;
// target heartwheel::toml, which brings toml++): this header and the policies need no TOML library.
#ifndef HEARTWHEEL_NET_LIVENESS_CONFIG_HPP
#define HEARTWHEEL_NET_LIVENESS_CONFIG_HPP

#include <heartwheel/net/connection/connection_policy.hpp>
#include <heartwheel/net/policies/policies.hpp>
#include <heartwheel/net/policies/timeout_policy.hpp>

#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace heartwheel::net {

/// A list of policy slots. for_each_policy(f) calls f(description, policy) for each, in order.
template <class... Slots>
struct policy_set : Slots... {
    /// T<Slots...>: a type built from the same list (connection_liveness's policy_runtimes).
    template <template <class...> class T> using with_slots = T<Slots...>;
    /// The policy in slot S.
    template <class S> const auto& policy_of() const noexcept {
        return const_cast<S&>(static_cast<const S&>(*this)).policy();
    }
    template <class F> void for_each_policy(F&& f) { (visit<Slots>(f), ...); }
    template <class F> void for_each_policy(F&& f) const {
        const_cast<policy_set*>(this)->for_each_policy(
            [&f](const policy_description& d, void* p) { f(d, static_cast<const void*>(p)); });
    }

private:
    template <class S, class F> void visit(F& f) {
        auto& p = static_cast<S&>(*this).policy();
        f(std::remove_reference_t<decltype(p)>::description(), static_cast<void*>(&p));
    }
};

/// Every policy of a connection; the order is the tables', the docs' and the error messages'.
struct liveness_config : policy_set<idle_slot, heartbeat_slot, request_slot, backoff_slot, limits_slot, keepalive_slot,
                                    overload_slot, connection_slot, output_slot, timeouts_slot> {
    /// Every policy's own validation (its description), in order.
    void validate() const;
    /// Whether any scalable timeout has a minimum (the overload scale matters).
    bool scales() const noexcept;
};

/// A described policy and where it is: what the generic walks take (the TOML loader, flags, the
/// knob table), whichever configuration the policy belongs to.
struct policy_ref {
    const policy_description* description;
    void* policy;
};
using policy_refs = std::vector<policy_ref>;
/// Every policy of `c` (a liveness_config or a configuration<...>), in its order.
template <class Config>
policy_refs policies_of(Config& c) {
    policy_refs out;
    c.for_each_policy([&out](const policy_description& d, void* p) { out.push_back({&d, p}); });
    return out;
}

/// The connection's configuration extended with tables of a framing layer or an application: each
/// `Extra` a slot like the built-in ones (`struct http_slot { http_policy http; http_policy& policy(); }`,
/// heartwheel/beast/http.hpp), so that `config.http` sits beside `config.idle` and is loaded from the
/// same TOML file ([http]), validated with the rest, set from flags by name (find_field,
/// parse_field_flag) and listed by knob_table. It is a liveness_config: a connection_context takes it
/// as one (the extra tables are their layer's to apply).
template <class... Extra>
struct configuration : liveness_config, Extra... {
    template <class F> void for_each_policy(F&& f) {
        liveness_config::for_each_policy(f);
        (visit<Extra>(f), ...);
    }
    template <class F> void for_each_policy(F&& f) const {
        const_cast<configuration*>(this)->for_each_policy(
            [&f](const policy_description& d, void* p) { f(d, static_cast<const void*>(p)); });
    }
    /// Every table's own validation, in order (config_error naming table.field).
    void validate() const {
        for_each_policy([](const policy_description& d, const void* p) { validate_policy(d, p, d.table); });
    }

private:
    template <class S, class F> void visit(F& f) {
        auto& p = static_cast<S&>(*this).policy();
        f(std::remove_reference_t<decltype(p)>::description(), static_cast<void*>(&p));
    }
};

/// One field of a liveness_config found by name: "idle.reader_idle", or a scalable timeout's
/// minimum, "overload.reader_idle_min". Empty (false) when there is none.
struct config_field {
    const policy_description* policy = nullptr;
    const field_description* field = nullptr;
    void* at = nullptr; ///< the policy struct in the config
    bool is_min = false;

    explicit operator bool() const noexcept { return field != nullptr; }
    /// The current value in its text form ("30s", "8MiB", "inbound", "25%", "off").
    std::string text() const;
    /// Parses `text` (parse_field; a minimum also takes "N%") and stores it; config_error names `who`.
    void set(std::string_view text, const std::string& who, bool bare_integers) const;
};
config_field find_field(const policy_refs& c, std::string_view name);
config_field find_field(liveness_config& c, std::string_view name);

/// A command-line flag that sets a described field: {"--header-timeout", "http.header_timeout"}.
struct field_flag {
    std::string_view flag;
    std::string_view field;
};
/// When argv[i] is one of `flags`: parses the next argument as its field's description says (a bare
/// number in the field's unit, or with a unit: "30s", "8MiB"), checks the field's own range, stores it,
/// moves i past the value and returns true; config_error naming the flag and the range otherwise.
/// False when argv[i] is none of them. (The rules between fields are the configuration's validate().)
bool parse_field_flag(int argc, const char* const* argv, int& i, const policy_refs& config,
                      std::initializer_list<field_flag> flags);
/// One help line per flag: its value's form, its field's help, default and range.
std::string field_flags_help(const policy_refs& config, std::initializer_list<field_flag> flags);

/// The docs' table of knobs: one Markdown row per field and per scalable minimum, from the
/// descriptions and the policies `defaults` refers to (a default-constructed configuration).
std::string knob_table(const policy_refs& defaults);
/// The connection's own (docs/liveness.md): a default liveness_config's.
std::string knob_table();

/// The text of a config file. Raises config_error (field `what`) with a message naming the path when
/// it does not exist, cannot be read, is a directory, a device or anything but a regular file, or is
/// empty (an empty config is almost always a mistake: a truncated or wrong file).
std::string read_config_file(const std::string& path, const std::string& what = "config");


} // namespace heartwheel::net

#endif
