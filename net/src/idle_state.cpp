// idle_state.cpp — wiring three activity timers to one idle handler.
#include <heartwheel/net/idle_state.hpp>

namespace heartwheel::net {

const char* to_string(idle_kind k) noexcept {
    switch (k) {
    case idle_kind::reader: return "reader-idle";
    case idle_kind::writer: return "writer-idle";
    case idle_kind::all: return "all-idle";
    }
    return "idle";
}

idle_state::idle_state(timer_service& svc, const idle_policy& policy, handler on_idle,
                       const overload_policy* overload, timeout_scale* scale)
    : svc_(svc), policy_(policy), on_idle_(std::move(on_idle)),
      reader_(svc, this, [](void* self, bool first) { static_cast<idle_state*>(self)->on_idle_({idle_kind::reader, first}); }),
      writer_(svc, this, [](void* self, bool first) { static_cast<idle_state*>(self)->on_idle_({idle_kind::writer, first}); }),
      all_(svc, this, [](void* self, bool first) { static_cast<idle_state*>(self)->on_idle_({idle_kind::all, first}); }) {
    policy_.validate();
    const time_point now = svc_.stamp();
    const overload_policy none;
    const overload_policy& o = overload ? *overload : none;
    reader_.start(policy_.reader_idle, o.reader_idle, scale, now);
    writer_.start(policy_.writer_idle, o.writer_idle, scale, now);
    all_.start(policy_.all_idle, o.all_idle, scale, now);
}

void idle_state::stop() noexcept {
    reader_.stop();
    writer_.stop();
    all_.stop();
}

} // namespace heartwheel::net
