// heartwheel/net/detail/output_settings.hpp — the limits a connection's byte_output judges by (its
// [output] bound and its queue's chunking), kept once and shared by the connections made with equal
// options, as a liveness's settings are (detail/liveness_settings.hpp): an idle connection's output
// then holds a pointer to them and no state of its own (byte_output.hpp).
//
// Invariants: settings never change once made, and are validated when made; intern_output() returns
// the ones made before on this thread from equal options if it remembers them (the last few).
#ifndef HEARTWHEEL_NET_DETAIL_OUTPUT_SETTINGS_HPP
#define HEARTWHEEL_NET_DETAIL_OUTPUT_SETTINGS_HPP

#include <heartwheel/net/connection/connection_context.hpp>
#include <heartwheel/net/connection/write_queue.hpp>
#include <heartwheel/net/detail/counted_ref.hpp>

#include <atomic>
#include <cstddef>

namespace heartwheel::net::detail {

struct output_settings {
    output_policy output;
    write_queue_limits queue;
    mutable std::atomic<std::size_t> refs{0};
};
using output_settings_ref = counted_ref<output_settings>;

/// The settings of `o`'s output bound and queue limits (validated: config_error naming the field).
output_settings_ref intern_output(const connection_options& o);

} // namespace heartwheel::net::detail

#endif
