// error.cpp — messages for heartwheel::errc.
#include <heartwheel/error.hpp>

#include <string>

namespace heartwheel {
namespace {

class category final : public std::error_category {
public:
    const char* name() const noexcept override { return "heartwheel"; }
    std::string message(int value) const override {
        switch (static_cast<errc>(value)) {
        case errc::wheel_full: return "timer wheel is full (max_pending reached)";
        case errc::wheel_stopped: return "timer wheel is stopped";
        }
        return "unknown heartwheel error";
    }
};

} // namespace

const std::error_category& heartwheel_category() noexcept {
    static const category instance;
    return instance;
}

} // namespace heartwheel
