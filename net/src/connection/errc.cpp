// errc.cpp — messages for heartwheel::net::errc.
#include <heartwheel/net/connection/errc.hpp>

#include <string>

namespace heartwheel::net {
namespace {

class category final : public std::error_category {
public:
    const char* name() const noexcept override { return "heartwheel.net"; }
    std::string message(int value) const override {
        switch (static_cast<errc>(value)) {
        case errc::timed_out: return "timed out (closed by a liveness policy)";
        case errc::connection_closed: return "connection closed";
        case errc::duplicate_request: return "request id already outstanding";
        case errc::parked: return "parked by its server while idle";
        }
        return "unknown heartwheel.net error";
    }
};

} // namespace

const std::error_category& net_category() noexcept {
    static const category instance;
    return instance;
}

} // namespace heartwheel::net
