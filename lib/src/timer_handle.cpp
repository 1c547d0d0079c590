// timer_handle.cpp — the callback node behind timer_handle; guards against the callback destroying it.
#include <heartwheel/timer_handle.hpp>

namespace heartwheel::detail {

callback_timer::~callback_timer() {
    if (destroyed_ != nullptr) *destroyed_ = true;
}

void callback_timer::on_expire() {
    // The std::function is moved out while it runs: the callback may destroy this node.
    bool destroyed = false;
    destroyed_ = &destroyed;
    auto fn = std::move(fn_);
    struct restore {
        callback_timer* self;
        bool& destroyed;
        std::function<void()>& fn;
        ~restore() {
            if (destroyed) return;
            self->destroyed_ = nullptr;
            self->fn_ = std::move(fn);
        }
    } guard{this, destroyed, fn};
    fn();
}

} // namespace heartwheel::detail
