// drain.cpp — the drain's close reason; the drain itself is a template (drain.hpp).
#include <heartwheel/net/server/drain.hpp>

namespace heartwheel::net {

close_reason draining_reason() {
    static const close_reason r = define_close_reason("draining");
    return r;
}

} // namespace heartwheel::net
