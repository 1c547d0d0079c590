// separate_asio — heartwheel with Asio compiled into heartwheel::asio: the definition is imposed
// because the parent asked for it, and the driver and a connection work against that compiled Asio.
#include <heartwheel/asio_wheel.hpp>
#include <heartwheel/net/connection/connection.hpp>

#include <asio/io_context.hpp>

#include <chrono>
#include <iostream>
#include <memory>

#if !defined(ASIO_SEPARATE_COMPILATION)
#error "HEARTWHEEL_ASIO_SEPARATE_COMPILATION=ON must make ASIO_SEPARATE_COMPILATION a usage requirement"
#endif

int main() {
    using namespace std::chrono_literals;
    using tcp = asio::ip::tcp;
    asio::io_context io;
    heartwheel::asio_wheel wheel(io.get_executor());
    heartwheel::net::liveness_config cfg;
    cfg.idle.reader_idle = 30ms;
    heartwheel::net::liveness_counters counters;
    heartwheel::net::connection_context ctx(wheel, cfg, &counters);
    tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
    tcp::socket peer(io);
    peer.connect(acceptor.local_endpoint());
    auto c = std::make_shared<heartwheel::net::connection<tcp::socket>>(acceptor.accept(), ctx);
    io.run_for(2s);
    if (!c->closed() || c->reason() != heartwheel::net::close_reason::reader_idle) return 1;
    std::cout << "separate_asio: a connection on compiled Asio closed its silent peer as reader-idle\n";
}
