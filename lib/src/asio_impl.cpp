// asio_impl.cpp — the one translation unit that compiles standalone Asio and asio::ssl
// (ASIO_SEPARATE_COMPILATION), so the rest of the build only parses declarations.
#include <asio/impl/src.hpp>
#include <asio/ssl/impl/src.hpp>
