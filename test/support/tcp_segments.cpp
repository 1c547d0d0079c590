// tcp_segments.cpp — see tcp_segments.hpp. Includes <linux/tcp.h> only, never <netinet/tcp.h>.
#include "tcp_segments.hpp"

#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <system_error>

namespace {
tcp_info info_of(int fd) {
    tcp_info info{};
    socklen_t len = sizeof info;
    if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0)
        throw std::system_error(errno, std::system_category(), "getsockopt(TCP_INFO)");
    return info;
}
} // namespace

std::uint32_t tcp_segments_sent(int fd) { return info_of(fd).tcpi_segs_out; }
std::uint32_t tcp_segments_received(int fd) { return info_of(fd).tcpi_segs_in; }
