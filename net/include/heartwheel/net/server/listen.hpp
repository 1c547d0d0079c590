// heartwheel/net/server/listen.hpp — a listening socket from "HOST:PORT", with errors that name the address.
//
// What every server's main() writes before it can accept: parse the address, open, set
// SO_REUSEADDR (a restarted server can bind while its old connections linger in TIME_WAIT),
// optionally SO_REUSEPORT (one listener per thread, the kernel spreading connections), bind, listen
// with the system's backlog. Addresses are numeric (IPv4 "127.0.0.1:7000", IPv6 "[::1]:7000"); port
// 0 picks a free port (read it back from local_endpoint()). A bad address is a config_error naming
// the field and the accepted form; a failure to listen a listen_error naming the address and the
// system's reason (address in use, permission denied).
#ifndef HEARTWHEEL_NET_LISTEN_HPP
#define HEARTWHEEL_NET_LISTEN_HPP

#include <heartwheel/net/policies/policies.hpp>

#include <heartwheel/asio.hpp>

#include <stdexcept>
#include <string>
#include <string_view>

namespace heartwheel::net {

/// Opening, binding or listening failed: what() names the address and the reason.
class listen_error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct listen_options {
    bool reuse_port = false; ///< SO_REUSEPORT: several listeners on one address (Linux spreads connections)
    int backlog = asio::socket_base::max_listen_connections;
};

/// "HOST:PORT" with a numeric host (IPv6 in brackets) and PORT 0..65535; throws config_error naming
/// `field` (the flag or key the text came from) otherwise.
asio::ip::tcp::endpoint parse_endpoint(std::string_view host_port, const std::string& field = "listen");

/// "HOST:PORT", an IPv6 host in brackets: what parse_endpoint reads (and what a server prints after
/// "listening on ").
std::string endpoint_text(const asio::ip::tcp::endpoint& endpoint);

/// A socket listening on `endpoint`; throws listen_error naming `endpoint` and the reason.
asio::ip::tcp::acceptor listen(const asio::any_io_executor& ex, const asio::ip::tcp::endpoint& endpoint,
                               const listen_options& options = {});

/// listen(ex, parse_endpoint(host_port)).
asio::ip::tcp::acceptor listen(const asio::any_io_executor& ex, std::string_view host_port,
                               const listen_options& options = {});

} // namespace heartwheel::net

#endif
