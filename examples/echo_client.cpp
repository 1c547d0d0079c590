// echo_client — connections, requests, pings and reconnects against echo_server; also the load
// generator of the end-to-end benchmark. Prints one JSON object as the last line of stdout.
// Exit codes: 0 done, 1 runtime failure, 2 invalid flags.
#include "echo/client.hpp"
#include "echo/options.hpp"

#include <csignal>
#include <iostream>

int main(int argc, char** argv) {
    std::signal(SIGPIPE, SIG_IGN); // a closed stdout or a reset peer is an error to handle, not a death

    echo::client_options options;
    try {
        options = echo::parse_client_options(argc, argv);
    } catch (const echo::help_requested& h) {
        std::cout << h.text;
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "echo_client: " << e.what() << '\n';
        return 2;
    }
    try {
        echo::load_client client(options);
        return client.run(std::cout, std::cerr);
    } catch (const std::exception& e) {
        std::cerr << "echo_client: " << e.what() << '\n';
        return 1;
    }
}
