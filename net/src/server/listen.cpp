// listen.cpp — see listen.hpp.
#include <heartwheel/net/server/listen.hpp>

#include <sys/socket.h>

#include <charconv>

namespace heartwheel::net {

asio::ip::tcp::endpoint parse_endpoint(std::string_view text, const std::string& field) {
    static const char* const accepted = "HOST:PORT with a numeric HOST (IPv6 in brackets: [::1]:7000) and PORT 0..65535";
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos || colon == 0) throw config_error(field, std::string(text), accepted, "not an address");
    std::string_view host = text.substr(0, colon);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    const std::string_view port_text = text.substr(colon + 1);
    unsigned port = 0;
    const auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (ec != std::errc() || end != port_text.data() + port_text.size() || port_text.empty() || port > 65535)
        throw config_error(field, std::string(text), accepted, "not a port");
    error_code bad;
    const auto address = asio::ip::make_address(std::string(host), bad);
    if (bad) throw config_error(field, std::string(text), accepted, "not a numeric address");
    return {address, static_cast<unsigned short>(port)};
}

asio::ip::tcp::acceptor listen(const asio::any_io_executor& ex, const asio::ip::tcp::endpoint& endpoint,
                               const listen_options& options) {
    asio::ip::tcp::acceptor a(ex);
    error_code ec;
    a.open(endpoint.protocol(), ec);
    if (!ec) a.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec && options.reuse_port) {
        const int on = 1;
        if (::setsockopt(a.native_handle(), SOL_SOCKET, SO_REUSEPORT, &on, sizeof on) != 0)
            ec = error_code(errno, asio::error::get_system_category());
    }
    if (!ec) a.bind(endpoint, ec);
    if (!ec) a.listen(options.backlog, ec);
    if (ec) {
        throw listen_error("cannot listen on " + endpoint_text(endpoint) + ": " + ec.message());
    }
    return a;
}

std::string endpoint_text(const asio::ip::tcp::endpoint& ep) {
    const auto host = ep.address().to_string();
    return (ep.address().is_v6() ? "[" + host + "]" : host) + ":" + std::to_string(ep.port());
}

asio::ip::tcp::acceptor listen(const asio::any_io_executor& ex, std::string_view host_port, const listen_options& options) {
    return listen(ex, parse_endpoint(host_port), options);
}

} // namespace heartwheel::net
