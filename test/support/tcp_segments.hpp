// tcp_segments.hpp — how many TCP segments a socket has sent or received (Linux TCP_INFO), for
// tests that check what goes on the wire. Defined in its own file: glibc's struct tcp_info lacks the
// field and <linux/tcp.h> clashes with <netinet/tcp.h>, which Asio includes.
#ifndef HEARTWHEEL_TEST_TCP_SEGMENTS_HPP
#define HEARTWHEEL_TEST_TCP_SEGMENTS_HPP

#include <cstdint>

/// Segments sent on the connected TCP socket `fd` so far (data, FIN and pure acknowledgements);
/// throws std::system_error if TCP_INFO fails.
std::uint32_t tcp_segments_sent(int fd);
/// Segments received on it so far (tcpi_segs_in); throws as tcp_segments_sent does.
std::uint32_t tcp_segments_received(int fd);

#endif
