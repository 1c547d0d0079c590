// liveness_config.cpp — the whole configuration's validation (each policy's, then the checks between
// them), the backoff strategy names, and reading a config file's text. TOML is liveness_toml.cpp's
// (heartwheel::toml): nothing here needs toml++.
#include <heartwheel/net/liveness_config.hpp>

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <tuple>

namespace heartwheel::net {

backoff_strategy parse_backoff_strategy(std::string_view name, const std::string& field) {
    if (name == "grpc") return backoff_strategy::grpc;
    if (name == "full") return backoff_strategy::full;
    if (name == "equal") return backoff_strategy::equal;
    if (name == "decorrelated") return backoff_strategy::decorrelated;
    throw config_error(field, std::string(name), "grpc, full, equal or decorrelated", "not valid");
}

const char* to_string(backoff_strategy s) noexcept {
    switch (s) {
    case backoff_strategy::grpc: return "grpc";
    case backoff_strategy::full: return "full";
    case backoff_strategy::equal: return "equal";
    case backoff_strategy::decorrelated: return "decorrelated";
    }
    return "grpc";
}

void liveness_config::validate() const {
    idle.validate();
    timeouts.validate();
    heartbeat.validate();
    request.validate();
    backoff.validate();
    limits.validate();
    keepalive.validate();
    overload.validate();
    output.validate();
    // An absolute min above the timeout it scales is a mistake (it would never scale).
    const std::tuple<const char*, const char*, const scaled_min*, milliseconds> scaled[] = {
        {"overload.reader_idle_min", "idle.reader_idle", &overload.reader_idle, idle.reader_idle},
        {"overload.writer_idle_min", "idle.writer_idle", &overload.writer_idle, idle.writer_idle},
        {"overload.all_idle_min", "idle.all_idle", &overload.all_idle, idle.all_idle},
        {"overload.read_timeout_min", "timeouts.read_timeout", &overload.read_timeout, timeouts.read_timeout},
        {"overload.handshake_timeout_min", "limits.handshake_timeout", &overload.handshake_timeout, limits.handshake_timeout},
        {"overload.max_age_min", "limits.max_age", &overload.max_age, limits.max_age}};
    for (const auto& [field, max_field, m, max] : scaled)
        if (m->min.count() > 0 && max.count() > 0 && m->min > max)
            throw config_error(field, std::to_string(m->min.count()) + " ms",
                               "1.." + std::to_string(max.count()) + " ms (at most " + max_field + ", which is " +
                                   std::to_string(max.count()) + " ms), or a percentage");
}

std::string read_config_file(const std::string& path, const std::string& what) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
        throw config_error(what, what + " " + path + ": cannot read the file: " + std::strerror(errno));
    if (S_ISDIR(st.st_mode)) throw config_error(what, what + " " + path + ": is a directory, not a TOML file");
    if (!S_ISREG(st.st_mode))
        throw config_error(what, what + " " + path + ": is not a regular file (a device, pipe or socket), not a TOML file");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw config_error(what, what + " " + path + ": cannot read the file: " + std::strerror(errno));
    std::stringstream ss;
    ss << in.rdbuf();
    std::string text = ss.str();
    if (text.find_first_not_of(" \t\r\n") == std::string::npos)
        throw config_error(what, what + " " + path + ": the file is empty (no settings); give a TOML file with at least one key");
    return text;
}

} // namespace heartwheel::net
