// timing.cpp — the registry of timings other than the wheel (see timing.hpp).
#include "timing.hpp"

#include <stdexcept>
#include <vector>

namespace echo {
namespace {

std::vector<timing>& registry() {
    static std::vector<timing> all; // made on first use: safe from any static initialiser
    return all;
}

} // namespace

bool register_timing(timing t) {
    if (t.name == "wheel" || find_timing(t.name))
        throw std::logic_error("echo: a timing named '" + t.name + "' is registered twice");
    if (!t.start_plain || !t.start_pooled || !t.start_tls)
        throw std::logic_error("echo: timing '" + t.name + "' cannot start every kind of session");
    registry().push_back(std::move(t));
    return true;
}

const timing* find_timing(std::string_view name) {
    for (const timing& t : registry())
        if (t.name == name) return &t;
    return nullptr;
}

std::string timing_choices(bool with_help) {
    const auto& all = registry();
    std::string text = "wheel";
    for (std::size_t i = 0; i < all.size(); ++i) {
        const bool last = i + 1 == all.size();
        text += (last ? (with_help ? ", or " : " or ") : ", ") + all[i].name;
        if (with_help) text += " for " + all[i].help;
    }
    return text;
}

} // namespace echo
