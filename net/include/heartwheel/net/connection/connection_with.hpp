// heartwheel/net/connection/connection_with.hpp — a connection and its application's handler in one heap block.
//
// The idea: a server's session (the application's connection_handler) and its net::connection live
// and die together — the connection keeps its handler until it is closed, the session speaks through
// its connection — yet made apart they are two heap blocks, two shared_ptr control blocks, an
// enable_shared_from_this in each and a two-word pointer from one to the other. At a million idle
// connections that is tens of megabytes. make_connection_with makes both in one block: the handler is
// built by a factory given the connection (it keeps a reference: its connection outlives it), and the
// shared_ptr it returns, and the one the connection keeps while open, share that block's count.
//
//   struct session : net::connection_handler {
//       explicit session(net::connection<tcp::socket>& c) : c(c) {}
//       void send_ping() override { c.send("PING\n"); }
//       std::shared_ptr<session> self() { return {c.shared_from_this(), this}; } // keep-alive for handlers
//       net::connection<tcp::socket>& c;
//   };
//   auto s = net::make_connection_with<net::connection<tcp::socket>>(
//       [](net::connection<tcp::socket>& c) { return session(c); }, std::move(socket), ctx);
//
// Invariants: the handler is made after its connection and destroyed before it (its destructor may
// still use the connection); the connection holds the handler — so the block — until it is closed
// (or its io_context shuts down), as it holds a handler made apart; after that the block lives while
// anything else holds the handler, the connection or one of its pending operations.
#ifndef HEARTWHEEL_NET_CONNECTION_WITH_HPP
#define HEARTWHEEL_NET_CONNECTION_WITH_HPP

#include <heartwheel/net/connection/connection_handler.hpp>

#include <memory>
#include <type_traits>
#include <utility>

namespace heartwheel::net {

namespace detail {
/// The block: the connection, then its handler.
template <class Connection, class Handler>
class connection_with final : public Connection {
public:
    template <class MakeHandler, class... Args>
    explicit connection_with(MakeHandler& make_handler, Args&&... args)
        : Connection(std::forward<Args>(args)...), handler(make_handler(static_cast<Connection&>(*this))) {}
    Handler handler;
};
} // namespace detail

/// Makes a `Connection` from `args` (its constructor's, without the handler) and its handler
/// `make_handler(connection&)` — returned by value: a prvalue, so it need not be movable — in one
/// heap block; the connection holds the handler until it is closed. Returns the handler.
template <class Connection, class MakeHandler, class... Args>
auto make_connection_with(MakeHandler&& make_handler, Args&&... args) {
    using handler_type = std::invoke_result_t<MakeHandler&, Connection&>;
    static_assert(std::is_base_of_v<connection_handler, handler_type>,
                  "make_connection_with: the factory must return a net::connection_handler by value");
    auto block = std::make_shared<detail::connection_with<Connection, handler_type>>(make_handler, std::forward<Args>(args)...);
    std::shared_ptr<handler_type> handler(block, &block->handler);
    block->set_handler(handler);
    return handler;
}

} // namespace heartwheel::net

#endif
