// heartwheel/net/timeout_policy.hpp — read and write timeouts that close the connection with
// errc::timed_out (Netty's ReadTimeoutHandler and WriteTimeoutHandler).
//
// A policy as one unit: the struct, its description (fields, units, ranges, help; the read timeout
// scales under overload and closes read-timeout) and its slot, the member liveness_config gives it
// (`config.timeouts`). Registered by one line in liveness_config.hpp; from the description come its
// validation, its TOML table `[timeouts]` (and `[overload] read_timeout_min`), the applications'
// flags and the docs' table. connection_liveness runs it (read_timeout_, write_timeout_).
#ifndef HEARTWHEEL_NET_TIMEOUT_POLICY_HPP
#define HEARTWHEEL_NET_TIMEOUT_POLICY_HPP

#include <heartwheel/net/policies.hpp>

namespace heartwheel::net {

struct timeout_policy {
    milliseconds read_timeout{0};  ///< close if nothing is read for this long (0 disables)
    milliseconds write_timeout{0}; ///< close if a write makes no progress for this long (0 disables)
    scaled_min read_timeout_min;   ///< under overload (`[overload] read_timeout_min`)

    void validate(const std::string& prefix = "timeouts") const { validate_policy(description(), this, prefix); }
    static const policy_description& description() {
        static const field_description fields[] = {
            scalable<&timeout_policy::read_timeout_min>(
                off_at_zero(field<&timeout_policy::read_timeout>(
                    "read_timeout", 0, year_ms,
                    "close with `read-timeout` after this long without receiving a byte (any byte counts, unlike "
                    "`reader_idle` in the example server, which counts data lines)")),
                close_reason::read_timeout),
            off_at_zero(field<&timeout_policy::write_timeout>("write_timeout", 0, year_ms,
                                                              "close with `write-timeout` when a write makes no progress"))};
        static const policy_description d{"timeouts", fields};
        return d;
    }
};

/// Its place in liveness_config: `config.timeouts`.
struct timeouts_slot {
    timeout_policy timeouts;
    timeout_policy& policy() noexcept { return timeouts; }
};

} // namespace heartwheel::net

#endif
