// config_fuzz.cpp — the library's TOML liveness-config loader. Any text must either load (and then the
// policies it returns validate) or be rejected with config_error naming the key and the accepted
// range; anything else — another exception, a crash, a sanitizer report — is a bug. (The echo
// product's --config parsing is fuzzed beside it: examples/echo/fuzz/echo_config_fuzz.cpp.)
#include "fuzz_check.hpp"

#include <heartwheel/net/config/liveness_config.hpp>
#include <heartwheel/net/config/liveness_toml.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    try {
        heartwheel::net::parse_liveness_config(text, "fuzz").validate();
    } catch (const heartwheel::net::config_error& e) {
        FUZZ_CHECK(e.what()[0] != '\0', "liveness config");
    } catch (const std::exception& e) {
        std::fprintf(stderr, "liveness config: unexpected exception: %s\n", e.what());
        std::abort();
    }
    return 0;
}
