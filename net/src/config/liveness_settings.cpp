// liveness_settings.cpp — settings resolved once per config and thread, shared by the livenesses made
// from it; see detail/liveness_settings.hpp.
#include <heartwheel/net/detail/liveness_settings.hpp>

#include <memory>

namespace heartwheel::net::detail {
namespace {

// The settings compare what the descriptions describe: a member they do not describe would make
// unequal configs share settings. These sizes fail the build when a built-in policy changes, so that
// whoever changes it checks that its description covers the new member.
static_assert(sizeof(idle_policy) == 3 * sizeof(milliseconds) + 3 * sizeof(scaled_min) + 8, "describe every member");
static_assert(sizeof(heartbeat_policy) == 40, "describe every member");
static_assert(sizeof(request_policy) == 16, "describe every member");
static_assert(sizeof(connection_policy) == 32, "describe every member");
static_assert(sizeof(server_limits) == 2 * sizeof(milliseconds) + 2 * sizeof(scaled_min) + sizeof(double),
              "describe every member");

bool same_policy(const policy_description& d, const void* a, const void* b) noexcept {
    for (const field_description& f : d.fields) {
        if (f.get(a) != f.get(b)) return false;
        if (f.scalable()) {
            const scaled_min &x = f.min_of(a), &y = f.min_of(b);
            if (x.min != y.min || x.fraction != y.fraction) return false;
        }
    }
    return true;
}

/// Every policy of `a` and `b`, field by field.
bool same(const liveness_config& a, const liveness_config& b) noexcept {
    constexpr std::size_t most = 16;
    const void* theirs[most];
    std::size_t n = 0;
    b.for_each_policy([&](const policy_description&, const void* p) {
        if (n < most) theirs[n] = p;
        ++n;
    });
    if (n > most) return false; // (a longer list than this memory: never shared)
    std::size_t i = 0;
    bool equal = true;
    a.for_each_policy([&](const policy_description& d, const void* p) {
        equal = equal && same_policy(d, p, theirs[i]);
        ++i;
    });
    return equal;
}

} // namespace

settings_ref intern(const liveness_config& config, bool scaled) {
    thread_local recent_refs<liveness_settings> recent;
    if (settings_ref found = recent.find([&](const liveness_settings& s) { return s.scaled == scaled && same(s.config, config); });
        found.get())
        return found;
    config.idle.validate();
    config.heartbeat.validate();
    config.request.validate();
    config.limits.validate();
    auto s = std::make_unique<liveness_settings>();
    s->config = config;
    s->scaled = scaled;
    if (scaled) // the close reasons of the timeouts given a min, from the policies' descriptions
        config.for_each_policy([&s](const policy_description& d, const void* p) {
            for (const auto& f : d.fields)
                if (f.scalable() && f.min_of(p).enabled())
                    s->scaled_reasons |= std::uint32_t{1} << static_cast<unsigned>(f.reason);
        });
    settings_ref made(s.release());
    recent.put(made);
    return made;
}

} // namespace heartwheel::net::detail
