// Must not compile: a connection over asio::ssl::stream without <heartwheel/net/tls/ssl_stream.hpp> would
// treat TLS as plain bytes (no decrypted-bytes check, no probe read); it is refused by name instead.
#include <heartwheel/net/connection/connection.hpp>

#include <asio/ssl/stream.hpp>

#include <memory>

using tls = asio::ssl::stream<asio::ip::tcp::socket>;
bool closed(const std::shared_ptr<heartwheel::net::connection<tls>>& c) { return c->closed(); }
