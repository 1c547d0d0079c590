// heartwheel/beast/detail/ws_upgrade.hpp — the WebSocket opening handshake's server side, for
// heartwheel/beast/websocket.hpp: whether a request is an upgrade RFC 6455 4.2.1 accepts, and the
// answer — 101 with its Sec-WebSocket-Accept, or 400 (426 with the version spoken here) naming what
// was wrong. Beast parses the request and writes the answer; nothing here holds state.
#ifndef HEARTWHEEL_BEAST_DETAIL_WS_UPGRADE_HPP
#define HEARTWHEEL_BEAST_DETAIL_WS_UPGRADE_HPP

#include <heartwheel/net/websocket/ws_frames.hpp>

#include <heartwheel/asio.hpp>

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/rfc7230.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/websocket/error.hpp>
#include <boost/beast/websocket/rfc6455.hpp>

#include <memory>
#include <string_view>

namespace heartwheel::ws::detail {

namespace websocket = boost::beast::websocket;

// RFC 6455 4.2.1: GET, HTTP/1.1, Host, Upgrade: websocket, Connection: upgrade, a key of 16 bytes
// in base64, version 13 (another version: 426 with the one spoken here).
inline error_code check_upgrade(const websocket::request_type& req) {
    namespace http = boost::beast::http;
    using e = websocket::error;
    if (req.version() != 11) return e::bad_http_version;
    if (req.method() != http::verb::get) return e::bad_method;
    if (req.find(http::field::host) == req.end()) return e::no_host;
    if (!http::token_list(req[http::field::connection]).exists("upgrade")) return e::no_connection_upgrade;
    if (!http::token_list(req[http::field::upgrade]).exists("websocket")) return e::no_upgrade_websocket;
    const auto key = req[http::field::sec_websocket_key];
    if (key.empty()) return e::no_sec_key;
    if (!net::ws_key_valid(std::string_view(key.data(), key.size()))) return e::bad_sec_key;
    const auto version = req[http::field::sec_websocket_version];
    if (version.empty()) return e::no_sec_version;
    if (version != "13") return e::bad_sec_version;
    return {};
}
inline std::unique_ptr<boost::beast::http::response<boost::beast::http::string_body>> answer_upgrade(const websocket::request_type& req,
                                                                                                   error_code refused) {
    namespace http = boost::beast::http;
    auto res = std::make_unique<http::response<http::string_body>>();
    res->version(11);
    if (!refused) {
        const auto key = req[http::field::sec_websocket_key];
        res->result(http::status::switching_protocols);
        res->set(http::field::upgrade, "websocket");
        res->set(http::field::connection, "Upgrade");
        res->set(http::field::sec_websocket_accept, net::ws_accept_key(std::string_view(key.data(), key.size())));
        return res;
    }
    res->result(refused == websocket::error::bad_sec_version ? http::status::upgrade_required : http::status::bad_request);
    if (refused == websocket::error::bad_sec_version) res->set(http::field::sec_websocket_version, "13");
    res->set(http::field::connection, "close");
    res->set(http::field::content_type, "text/plain");
    res->body() = refused.message() + "\n";
    res->prepare_payload();
    return res;
}

} // namespace heartwheel::ws::detail

#endif
