// echo_config_fuzz.cpp — echo_server's and echo_client's --config parsing. The input is a config
// file's text, given as a --config file to both option parsers. Each must either accept it or reject
// it with its own error type (config_error / usage_error, which name the key and the accepted range);
// anything else — another exception, a crash, a sanitizer report — is a bug. (The library's loader
// alone: fuzz/config_fuzz.cpp.)
#include "echo/options.hpp"
#include "fuzz_check.hpp"

#include <heartwheel/net/config/liveness_config.hpp>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <unistd.h>

namespace {

const std::string& config_path() {
    static const std::string path = "/tmp/heartwheel-config-fuzz-" + std::to_string(::getpid()) + ".toml";
    return path;
}

template <class Parse>
void expect_clean(Parse parse, const char* what) {
    try {
        parse();
    } catch (const heartwheel::net::config_error& e) {
        FUZZ_CHECK(e.what()[0] != '\0', what);
    } catch (const echo::usage_error& e) {
        FUZZ_CHECK(e.what()[0] != '\0', what);
    } catch (const echo::help_requested&) {
        FUZZ_CHECK(false, "help without --help");
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: unexpected exception: %s\n", what, e.what());
        std::abort();
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    {
        std::ofstream out(config_path(), std::ios::binary | std::ios::trunc);
        out << text;
    }
    const char* server_argv[] = {"echo_server", "--config", config_path().c_str()};
    expect_clean([&] { echo::parse_server_options(3, server_argv); }, "echo_server --config");
    const char* client_argv[] = {"echo_client", "--config", config_path().c_str()};
    expect_clean([&] { echo::parse_client_options(3, client_argv); }, "echo_client --config");
    return 0;
}
