// child_pipe.hpp — what the side-by-side benchmarks that fork their clients share (ws_idle,
// http_idle): the server process's own figures (RSS, CPU, voluntary context switches), a descriptor
// limit raised for 10,000 sockets, and the clients' process with the line-at-a-time pipes the two
// processes talk over (forked_clients).
#ifndef HEARTWHEEL_BENCH_CHILD_PIPE_HPP
#define HEARTWHEEL_BENCH_CHILD_PIPE_HPP

#include <poll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <stdexcept>
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

/// In the clients' process: the server's next line, running `io` (the clients' connections) in
/// slices of 20 ms while it waits.
template <class IoContext>
std::string next_word(IoContext& io, int from_parent) {
    for (;;) {
        io.run_for(std::chrono::milliseconds(20));
        pollfd p{from_parent, POLLIN, 0};
        if (::poll(&p, 1, 0) > 0) return read_line(from_parent);
    }
}

/// The clients' process, forked before anything of Asio exists in the server's (an epoll set shared
/// across a fork would let one side's deregistrations remove the other's). The child waits for the
/// server's port (give_port), runs clients(port, to_server_fd, from_server_fd) and exits with its
/// result; the server says lines to it (say) and hears its lines while running its own loop (hear).
class forked_clients {
public:
    template <class Clients>
    explicit forked_clients(Clients&& clients) {
        int down[2], up[2];
        if (::pipe(down) != 0 || ::pipe(up) != 0) throw std::runtime_error("pipe failed");
        std::fflush(stdout); // nothing buffered is printed twice
        pid_ = ::fork();
        if (pid_ < 0) throw std::runtime_error("fork failed");
        if (pid_ == 0) {
            ::close(down[1]);
            ::close(up[0]);
            const auto port = static_cast<unsigned short>(std::stoi(read_line(down[0])));
            ::_exit(clients(port, up[1], down[0]));
        }
        ::close(down[0]);
        ::close(up[1]);
        to_ = down[1];
        from_ = up[0];
    }
    forked_clients(const forked_clients&) = delete;
    forked_clients& operator=(const forked_clients&) = delete;
    ~forked_clients() {
        ::close(to_);
        ::close(from_);
    }

    void give_port(unsigned short port) { say(std::to_string(port)); }
    void say(const std::string& line) { write_all(to_, line + "\n"); }
    /// Runs `io` in short slices until the clients say a line, and returns it.
    template <class IoContext>
    std::string hear(IoContext& io) {
        for (pollfd p{from_, POLLIN, 0}; ::poll(&p, 1, 0) <= 0;) io.run_for(std::chrono::milliseconds(5));
        return read_line(from_);
    }
    /// Waits for the clients' process to end; its exit status.
    int wait() {
        int status = 0;
        ::waitpid(pid_, &status, 0);
        return status;
    }

private:
    pid_t pid_ = -1;
    int to_ = -1, from_ = -1;
};

} // namespace bench

#endif
