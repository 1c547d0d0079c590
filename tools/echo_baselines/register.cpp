// register.cpp — plugs the benchmarks' baselines into echo_server as --timers asio (one steady_timer
// per connection per concern) and --timers none (no liveness: the floor), through the example's
// timing registry (echo/timing.hpp). Linked into echo_server as an object: the registration runs
// before main, and the example's sources never name these baselines. The session, its protocol and
// its connection are the example's and the library's; only the liveness differs.
#include "liveness.hpp"

#include "echo/session.hpp"
#include "echo/timing.hpp"

#include <utility>

namespace echo::baselines {
namespace {

template <class Liveness>
struct starter {
    template <class Stream>
    static void start(worker& w, Stream stream, const asio::ip::address& peer) {
        session<Stream, Liveness>::start_with(w, std::move(stream), peer, Liveness::factory(w));
    }
    static timing make(std::string name, std::string help, bool scales) {
        return {std::move(name), std::move(help), scales, &start<core_socket>, &start<strand_socket>,
                &start<heartwheel::net::tls_socket>};
    }
};

// One initialiser, so that --help lists them in this order.
[[maybe_unused]] const bool registered =
    register_timing(starter<asio_liveness>::make("asio", "one steady_timer per connection per concern", false)) &&
    register_timing(starter<no_liveness>::make(
        "none", "no liveness at all (timeouts and heartbeats off whatever else says: a benchmark floor)",
        true)); // nothing to scale: accepted with scaled timeouts, as with none at all

} // namespace
} // namespace echo::baselines
