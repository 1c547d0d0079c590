// heartwheel/net/policies/timeout_policy.hpp — read and write timeouts that close the connection with
// errc::timed_out (Netty's ReadTimeoutHandler and WriteTimeoutHandler).
//
// A policy as one unit: the struct, its description (fields, units, ranges, help; the read timeout
// scales under overload and closes read-timeout), its runtime on a connection and its slot, the member
// liveness_config gives it (`config.timeouts`) and the runtime it names. Registered by one line in
// liveness_config.hpp; from the description come its validation, its TOML table `[timeouts]` (and
// `[overload] read_timeout_min`), the applications' flags and the docs' table; from the slot, a
// timeout_runtime on every connection fed its reads and writes (policy_runtime.hpp).
//
// The runtime holds a timer only while its timeout can fire: the read timeout's for the connection's
// life, the write timeout's while a write is queued — made when one starts, freed when the output
// drains, so an idle connection that wrote before (every heartbeat's ping is a write) holds none.
// With the read timeout off (the default) and no write queued it is two null pointers. Each timer
// is an activity_timer touched by the connection's one stamp per read or write: the read timeout
// expires after read_timeout without a byte (put off while the peer's bytes wait unread), the write
// timeout after write_timeout without progress while data is queued (on by default; a write the
// socket takes at once is never started as a pending write — detail/io_op.hpp — so only one that
// waits starts a watch, as nginx arms send_timeout). The policy is the hooks' argument (the
// liveness's shared settings, policy_runtime.hpp): none of it is kept here. A watch freed at a drain
// is kept for the thread's next one (at most watch_cache_size per thread, whatever the connections).
#ifndef HEARTWHEEL_NET_TIMEOUT_POLICY_HPP
#define HEARTWHEEL_NET_TIMEOUT_POLICY_HPP

#include <heartwheel/net/policies/activity_timer.hpp>
#include <heartwheel/net/policies/policies.hpp>
#include <heartwheel/net/policies/policy_runtime.hpp>

#include <cstddef>
#include <memory>

namespace heartwheel::net {

struct timeout_policy {
    milliseconds read_timeout{0};  ///< close if nothing is read for this long (0 disables)
    /// Close if a write makes no progress for this long (0 disables). On by default: once a server
    /// stops a non-reader's reads for its output, the idle judgements wait for the unread input, so
    /// with no heartbeat and an output under its bounds nothing else would close it, whatever server
    /// embeds the library (nginx's send_timeout is 60 s; 30 s here, as the echo server always used).
    milliseconds write_timeout{30000};
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

/// The read and write timeouts of one connection.
class timeout_runtime : public policy_runtime<timeout_runtime> {
public:
    timeout_runtime(policy_host& host, const timeout_policy& p);
    timeout_runtime(const timeout_runtime&) = delete;
    timeout_runtime& operator=(const timeout_runtime&) = delete;
    ~timeout_runtime();

    void on_read(policy_host&, const timeout_policy&, time_point stamp) {
        if (read_) read_->timer.touch(stamp);
    }
    void on_write_started(policy_host& host, const timeout_policy& p);
    void on_write_progress(policy_host&, const timeout_policy&, time_point stamp) {
        if (write_) write_->timer.touch(stamp);
    }
    void on_write_complete(policy_host&, const timeout_policy&, time_point stamp, bool drained) {
        if (!write_) return;
        if (drained) write_.reset(); // nothing queued: nothing to time, and nothing held while idle
        else write_->timer.touch(stamp);
    }
    void stop() noexcept;

private:
    /// One timeout's timer and what it closes with. Its memory comes from a small per-thread cache of
    /// freed watches (timeout_policy.cpp): a write burst's timer costs a pointer pop, not malloc and
    /// free, and an idle connection still holds none.
    struct watch final : activity_timer::listener {
        watch(policy_host& h, close_reason r) : host(&h), reason(r), timer(*this) {}
        static void* operator new(std::size_t size);
        static void operator delete(void* p) noexcept;
        timer_scheduler& scheduler() const noexcept override { return host->scheduler(); }
        void on_expired(activity_timer&, bool) override { host->close_for(reason); } // last: may destroy *this
        bool put_off(const activity_timer&) override { return reason == close_reason::read_timeout && host->input_waiting(); }

        policy_host* host;
        close_reason reason;
        activity_timer timer;
    };
    std::unique_ptr<watch> read_;            ///< while the read timeout is on
    std::unique_ptr<watch> write_;           ///< while a write is queued and the write timeout is on
};

/// How many freed watches a thread keeps for reuse (each ~96 bytes): what the thread holds, not each
/// connection.
inline constexpr std::size_t watch_cache_size = 64;

/// Its place in liveness_config: `config.timeouts`, run on each connection by a timeout_runtime.
struct timeouts_slot {
    timeout_policy timeouts;
    timeout_policy& policy() noexcept { return timeouts; }
    using runtime = timeout_runtime;
};

} // namespace heartwheel::net

#endif
