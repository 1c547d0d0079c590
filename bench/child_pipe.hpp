// child_pipe.hpp — what the side-by-side benchmarks that fork their clients share (ws_idle,
// http_idle): the server process's own figures (RSS, CPU, voluntary context switches), a descriptor
// limit raised for 10,000 sockets, and the line-at-a-time pipe the two processes talk over.
#ifndef HEARTWHEEL_BENCH_CHILD_PIPE_HPP
#define HEARTWHEEL_BENCH_CHILD_PIPE_HPP

#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <string>

namespace bench {

/// This process's resident set, KiB.
inline long rss_kib() {
    std::ifstream f("/proc/self/status");
    for (std::string line; std::getline(f, line);)
        if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
    return 0;
}
/// User + system CPU of this process, seconds.
inline double cpu_seconds() {
    rusage u{};
    ::getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}
/// Voluntary context switches so far: each is a sleep ended by something due or arriving.
inline long voluntary_switches() {
    rusage u{};
    ::getrusage(RUSAGE_SELF, &u);
    return u.ru_nvcsw;
}
inline void raise_fd_limit() {
    rlimit l{};
    ::getrlimit(RLIMIT_NOFILE, &l);
    l.rlim_cur = l.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &l);
}
inline void write_all(int fd, const std::string& s) {
    for (std::size_t done = 0; done < s.size();) {
        const auto n = ::write(fd, s.data() + done, s.size() - done);
        if (n <= 0) return;
        done += static_cast<std::size_t>(n);
    }
}
/// One line from `fd`, without its newline (blocking).
inline std::string read_line(int fd) {
    std::string s;
    char c = 0;
    while (::read(fd, &c, 1) == 1 && c != '\n') s += c;
    return s;
}

} // namespace bench

#endif
