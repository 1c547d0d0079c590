// output_settings.cpp — an output's limits resolved once per options and thread, shared by the
// connections made with them; see detail/output_settings.hpp.
#include <heartwheel/net/detail/output_settings.hpp>

#include <memory>

namespace heartwheel::net::detail {

// The settings compare every member of the output policy (its operator==) and of the queue limits:
// these sizes fail the build when either grows, so that whoever adds a member compares it here too.
static_assert(sizeof(output_policy) == 4 * sizeof(std::size_t) + sizeof(milliseconds),
              "compare every member");
static_assert(sizeof(write_queue_limits) == 2 * sizeof(std::size_t), "compare every member");

output_settings_ref intern_output(const connection_options& o) {
    thread_local recent_refs<output_settings> recent;
    const write_queue_limits q = o.queue();
    if (output_settings_ref found = recent.find([&](const output_settings& s) {
            return s.output == o.output && s.queue.chunk_bytes == q.chunk_bytes && s.queue.keep_capacity == q.keep_capacity;
        });
        found.get())
        return found;
    o.output.validate();
    auto s = std::make_unique<output_settings>();
    s->output = o.output;
    s->queue = q;
    output_settings_ref made(s.release());
    recent.put(made);
    return made;
}

} // namespace heartwheel::net::detail
