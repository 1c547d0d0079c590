// asio_impl.cpp — with HEARTWHEEL_ASIO_SEPARATE_COMPILATION, the one translation unit that compiles
// Asio and its ssl (standalone or Boost, as heartwheel/asio.hpp chooses), so the rest of the program
// only parses declarations.
#include <heartwheel/asio_ssl.hpp>
#if defined(HEARTWHEEL_BOOST_ASIO)
#include <boost/asio/impl/src.hpp>
#include <boost/asio/ssl/impl/src.hpp>
#else
#include <asio/impl/src.hpp>
#include <asio/ssl/impl/src.hpp>
#endif
