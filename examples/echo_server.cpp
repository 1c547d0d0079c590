// echo_server — the heartwheel echo/heartbeat server. See docs/echo_server.md.
// Exit codes: 0 after a clean stop, 1 on a runtime failure (port in use, bad certificate), 2 on
// invalid flags or config.
#include "echo/options.hpp"
#include "echo/server.hpp"

#include <csignal>
#include <iostream>

int main(int argc, char** argv) {
    // A closed stdout (`echo_server --stats-interval 200 | head -1`) must not kill the server: the
    // stats line that cannot be written is dropped (std::cout's failbit), serving goes on.
    std::signal(SIGPIPE, SIG_IGN);
    echo::server_options options;
    try {
        options = echo::parse_server_options(argc, argv);
    } catch (const echo::help_requested& h) {
        std::cout << h.text;
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "echo_server: " << e.what() << '\n';
        return 2;
    }
    try {
        echo::server s(options);
        return s.run(std::cout);
    } catch (const echo::startup_error& e) {
        std::cerr << "echo_server: " << e.what() << '\n';
        return 1;
    } catch (const std::exception& e) {
        std::cerr << "echo_server: fatal: " << e.what() << '\n';
        return 1;
    }
}
