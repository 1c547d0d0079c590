// A Boost.Asio program linked to the standalone-Asio flavour (heartwheel::net): refused at compile
// time, naming the target to link (heartwheel::boost_net), instead of template errors.
#include <boost/asio/io_context.hpp>
#include <heartwheel/net/connection/connection.hpp>

int main() {
    boost::asio::io_context io;
    return 0;
}
