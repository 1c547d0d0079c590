// close_reason.cpp — built-in names and the registry of application reasons.
#include <heartwheel/net/connection/close_reason.hpp>

#include <array>
#include <atomic>
#include <mutex>
#include <stdexcept>
#include <string>

namespace heartwheel::net {
namespace {

// Names are written once, before the count that publishes them (release); readers load the count
// (acquire) and read only names below it, so to_string needs no lock.
struct registry {
    std::mutex define;
    std::array<std::string, max_close_reasons> names;
    std::atomic<std::size_t> count{builtin_close_reasons};
};

registry& reg() {
    static registry r;
    return r;
}

} // namespace

close_reason define_close_reason(std::string_view name) {
    for (std::size_t i = 0; i < builtin_close_reasons; ++i)
        if (name == builtin_reasons[i].name) return builtin_reasons[i].reason;
    registry& r = reg();
    std::lock_guard<std::mutex> lock(r.define);
    const std::size_t n = r.count.load(std::memory_order_relaxed);
    for (std::size_t i = builtin_close_reasons; i < n; ++i)
        if (r.names[i] == name) return static_cast<close_reason>(i);
    if (n >= max_close_reasons)
        throw std::length_error("define_close_reason: more than " + std::to_string(max_close_reasons) + " reasons");
    r.names[n] = std::string(name);
    r.count.store(n + 1, std::memory_order_release);
    return static_cast<close_reason>(n);
}

std::size_t close_reason_count() noexcept { return reg().count.load(std::memory_order_acquire); }

const char* to_string(close_reason r) noexcept {
    const auto i = static_cast<std::size_t>(r);
    if (i < builtin_close_reasons) return builtin_reasons[i].name;
    if (i < close_reason_count()) return reg().names[i].c_str();
    return "unknown";
}

} // namespace heartwheel::net
