// kv_policy.hpp — a knob of kv_server's own, described as the library's are: `[kv]` in its --config
// file beside the library's tables, `--max-commands` on its command line, validated with the rest and
// named in errors as they are. The whole of an application's extension: this struct, its description
// and its slot; kv_server registers it by naming the slot in its configuration's type,
// `net::configuration<kv_slot>` (heartwheel/net/config/liveness_config.hpp).
#ifndef HEARTWHEEL_EXAMPLES_KV_POLICY_HPP
#define HEARTWHEEL_EXAMPLES_KV_POLICY_HPP

#include <heartwheel/net/config/policy_description.hpp>

#include <cstdint>
#include <string>

struct kv_policy {
    /// Commands a connection may send; after the last one is answered it is closed `max-commands`
    /// (a client is made to reconnect now and then, as HTTP's keepalive_requests does). 0: no limit.
    std::uint32_t max_commands = 0;

    void validate(const std::string& prefix = "kv") const { heartwheel::net::validate_policy(description(), this, prefix); }
    static const heartwheel::net::policy_description& description() {
        static const heartwheel::net::field_description fields[] = {heartwheel::net::off_at_zero(
            heartwheel::net::field<&kv_policy::max_commands>("max_commands", 0, 1'000'000'000,
                                                             "commands per connection; after the last answer: `BYE max-commands`"))};
        static const heartwheel::net::policy_description d{"kv", fields};
        return d;
    }
};

/// Its place in the configuration: `config.kv`.
struct kv_slot {
    kv_policy kv;
    kv_policy& policy() noexcept { return kv; }
};

#endif
