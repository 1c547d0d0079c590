// handover.cpp — the listening sockets passed from an old process to a new one (SCM_RIGHTS), and
// systemd's; see handover.hpp. The new process's side is synchronous (it runs once, at start, before
// anything is served); the old process's is a small state machine on its io_context, one successor
// at a time, each step bounded by a deadline.
#include <heartwheel/net/server/handover.hpp>

#if defined(HEARTWHEEL_BOOST_ASIO)
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/write.hpp>
#else
#include <asio/local/stream_protocol.hpp>
#include <asio/read_until.hpp>
#include <asio/write.hpp>
#endif

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <mutex>

namespace heartwheel::net {
namespace {

constexpr const char* request_line = "heartwheel-handover 1\n";
constexpr const char* taken_line = "taken\n";
constexpr std::size_t max_listeners = 16;
constexpr std::chrono::seconds step_deadline{5};

[[noreturn]] void fail(const std::string& path, const std::string& why) {
    throw listen_error("handover " + path + ": " + why);
}

std::string errno_text(int e) { return std::strerror(e); }

bool is_listening_stream(int fd) {
    int type = 0, listening = 0;
    socklen_t len = sizeof type;
    if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM) return false;
    len = sizeof listening;
    return ::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) == 0 && listening != 0;
}

sockaddr_un unix_address(const std::string& path) {
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    if (path.empty() || path.size() >= sizeof a.sun_path) fail(path, "a path of 1.." + std::to_string(sizeof a.sun_path - 1) + " bytes");
    std::memcpy(a.sun_path, path.data(), path.size());
    return a;
}

// Closes a descriptor on every path out.
struct fd_guard {
    int fd = -1;
    ~fd_guard() {
        if (fd >= 0) ::close(fd);
    }
};

} // namespace

// --- the new process -----------------------------------------------------------------------------

inherited_listeners& inherited_listeners::operator=(inherited_listeners&& other) noexcept {
    if (this != &other) {
        for (int fd : fds_) ::close(fd);
        if (channel_ >= 0) ::close(channel_);
        fds_ = std::move(other.fds_);
        channel_ = other.channel_;
        path_ = std::move(other.path_);
        other.fds_.clear();
        other.channel_ = -1;
    }
    return *this;
}

inherited_listeners::~inherited_listeners() {
    for (int fd : fds_) ::close(fd);
    if (channel_ >= 0) ::close(channel_);
}

void inherited_listeners::confirm() {
    if (channel_ < 0) return;
    fd_guard s{channel_};
    channel_ = -1;
    const std::size_t taken_size = std::strlen(taken_line);
    if (::send(s.fd, taken_line, taken_size, MSG_NOSIGNAL) != static_cast<ssize_t>(taken_size))
        fail(path_, "confirming: " + errno_text(errno)); // the old process serves on
}

inherited_listeners inherited_listeners::take(const std::string& path, std::chrono::milliseconds timeout) {
    const sockaddr_un address = unix_address(path);
    fd_guard s{::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)};
    if (s.fd < 0) fail(path, "socket: " + errno_text(errno));
    timeval tv{};
    tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
    tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
    ::setsockopt(s.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(s.fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (::connect(s.fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
        if (errno == ENOENT || errno == ECONNREFUSED) return {}; // nobody serves it: a first start
        fail(path, "connect: " + errno_text(errno));
    }
    const std::size_t request_size = std::strlen(request_line);
    if (::send(s.fd, request_line, request_size, MSG_NOSIGNAL) != static_cast<ssize_t>(request_size))
        fail(path, "sending the request: " + errno_text(errno));

    // The answer's line and its descriptors, which ride with its first bytes.
    inherited_listeners got;
    std::string line;
    while (line.find('\n') == std::string::npos && line.size() < 128) {
        char data[128];
        alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * max_listeners)];
        iovec iov{data, sizeof data};
        msghdr msg{};
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control;
        msg.msg_controllen = sizeof control;
        const ssize_t n = ::recvmsg(s.fd, &msg, MSG_CMSG_CLOEXEC);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            fail(path, "no answer within " + std::to_string(timeout.count()) + " ms");
        if (n < 0) fail(path, "receiving: " + errno_text(errno));
        for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c))
            if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
                const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                for (std::size_t i = 0; i < count; ++i) {
                    int fd = -1;
                    std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
                    got.fds_.push_back(fd);
                }
            }
        if ((msg.msg_flags & MSG_CTRUNC) != 0) fail(path, "more descriptors than " + std::to_string(max_listeners));
        if (n == 0) fail(path, "the serving process closed without an answer");
        line.append(data, static_cast<std::size_t>(n));
    }
    line = line.substr(0, line.find('\n'));
    const std::string prefix = "heartwheel-listeners ";
    if (line.rfind(prefix, 0) != 0) fail(path, "refused: " + line);
    if (line.substr(prefix.size()) != std::to_string(got.fds_.size()))
        fail(path, "announced '" + line + "' with " + std::to_string(got.fds_.size()) + " descriptors");
    for (int fd : got.fds_)
        if (!is_listening_stream(fd)) fail(path, "a descriptor handed over is not a listening stream socket");
    got.channel_ = s.fd; // confirm() says "taken" on it
    s.fd = -1;
    got.path_ = path;
    return got;
}

inherited_listeners inherited_listeners::from_systemd() {
    const char* pid = std::getenv("LISTEN_PID");
    const char* count = std::getenv("LISTEN_FDS");
    if (pid == nullptr || count == nullptr || std::strtol(pid, nullptr, 10) != static_cast<long>(::getpid())) return {};
    const long n = std::strtol(count, nullptr, 10);
    ::unsetenv("LISTEN_PID");
    ::unsetenv("LISTEN_FDS");
    ::unsetenv("LISTEN_FDNAMES");
    std::vector<int> fds;
    constexpr int first = 3; // SD_LISTEN_FDS_START
    for (int fd = first; fd < first + static_cast<int>(std::clamp(n, 0L, 1024L)); ++fd) {
        if (!is_listening_stream(fd)) continue; // not ours to judge (a datagram socket, a FIFO): left alone
        ::fcntl(fd, F_SETFD, FD_CLOEXEC);
        fds.push_back(fd);
    }
    return inherited_listeners(std::move(fds));
}

std::optional<asio::ip::tcp::acceptor> inherited_listeners::claim_systemd(const asio::any_io_executor& ex,
                                                                         const asio::ip::tcp::endpoint& endpoint) {
    static std::mutex guard;
    static inherited_listeners activated = from_systemd(); // once per process; unclaimed ones stay open
    std::lock_guard<std::mutex> lock(guard);
    return activated.claim(ex, endpoint);
}

std::optional<asio::ip::tcp::acceptor> inherited_listeners::claim(const asio::any_io_executor& ex,
                                                                  const asio::ip::tcp::endpoint& endpoint) {
    for (auto it = fds_.begin(); it != fds_.end(); ++it) {
        asio::ip::tcp::endpoint bound;
        socklen_t len = static_cast<socklen_t>(bound.capacity());
        if (::getsockname(*it, bound.data(), &len) != 0) continue;
        if (bound.data()->sa_family != AF_INET && bound.data()->sa_family != AF_INET6) continue;
        bound.resize(len);
        if (bound.address() != endpoint.address() || (endpoint.port() != 0 && bound.port() != endpoint.port())) continue;
        const int fd = *it;
        fds_.erase(it);
        error_code ec;
        asio::ip::tcp::acceptor a(ex);
        a.assign(bound.protocol(), fd, ec);
        if (ec) {
            ::close(fd);
            throw listen_error("an inherited socket listening on " + bound.address().to_string() + ":" +
                               std::to_string(bound.port()) + ": " + ec.message());
        }
        return a;
    }
    return std::nullopt;
}

// --- the old process -----------------------------------------------------------------------------

struct handover_server::state : std::enable_shared_from_this<state> {
    using unix_socket = asio::local::stream_protocol::socket;

    state(const asio::any_io_executor& ex, std::string p, std::function<std::vector<int>()> g, std::function<void()> d)
        : acceptor(ex), path(std::move(p)), give(std::move(g)), given(std::move(d)) {}

    asio::local::stream_protocol::acceptor acceptor;
    std::string path;
    std::function<std::vector<int>()> give;
    std::function<void()> given;
    dev_t device = 0;
    ino_t inode = 0;
    bool serving = false; // a successor is being served (one at a time)
    bool handed = false;
    bool closed = false;  // close() ran: an exchange in flight hands nothing and calls nobody

    // One successor's exchange: its request, our descriptors, its "taken".
    struct exchange {
        exchange(const asio::any_io_executor& ex) : socket(ex), deadline(ex) {}
        unix_socket socket;
        asio::steady_timer deadline;
        std::string in;
    };

    void accept() {
        auto x = std::make_shared<exchange>(acceptor.get_executor());
        acceptor.async_accept(x->socket, [self = shared_from_this(), x](error_code ec) {
            if (ec) return; // closed
            self->begin(x);
            if (!self->handed) self->accept();
        });
    }

    void begin(const std::shared_ptr<exchange>& x) {
        if (serving || handed) return refuse(x, "busy"); // one successor at a time
        serving = true;
        x->deadline.expires_after(step_deadline);
        x->deadline.async_wait([x](error_code ec) {
            if (ec) return;
            error_code ignored;
            x->socket.close(ignored);
        });
        asio::async_read_until(x->socket, asio::dynamic_buffer(x->in, 256), '\n',
                               [self = shared_from_this(), x](error_code ec, std::size_t n) {
                                   if (ec || x->in.substr(0, n) != request_line) return self->end(x, "unknown request");
                                   x->in.erase(0, n);
                                   self->send(x);
                               });
    }

    void send(const std::shared_ptr<exchange>& x) {
        if (closed) return end(x, "closing");
        std::vector<int> fds = give ? give() : std::vector<int>{};
        if (fds.size() > max_listeners) return end(x, "too many listeners");
        std::vector<int> copies;
        for (int fd : fds) {
            const int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
            if (copy < 0) {
                for (int c : copies) ::close(c);
                return end(x, "dup: " + errno_text(errno));
            }
            copies.push_back(copy);
        }
        const std::string line = "heartwheel-listeners " + std::to_string(copies.size()) + "\n";
        alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * max_listeners)] = {};
        iovec iov{const_cast<char*>(line.data()), line.size()};
        msghdr msg{};
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        if (!copies.empty()) {
            msg.msg_control = control;
            msg.msg_controllen = CMSG_SPACE(sizeof(int) * copies.size());
            cmsghdr* c = CMSG_FIRSTHDR(&msg);
            c->cmsg_level = SOL_SOCKET;
            c->cmsg_type = SCM_RIGHTS;
            c->cmsg_len = CMSG_LEN(sizeof(int) * copies.size());
            std::memcpy(CMSG_DATA(c), copies.data(), sizeof(int) * copies.size());
        }
        // A fresh Unix socket's buffer takes one short line at once; a partial send is a failure.
        const ssize_t sent = ::sendmsg(x->socket.native_handle(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
        for (int c : copies) ::close(c); // in flight, the kernel holds them
        if (sent != static_cast<ssize_t>(line.size())) return end(x, "sendmsg failed");
        asio::async_read_until(x->socket, asio::dynamic_buffer(x->in, 256), '\n',
                               [self = shared_from_this(), x](error_code ec, std::size_t n) {
                                   // Without "taken" the successor may not hold them: keep serving.
                                   if (ec || x->in.substr(0, n) != taken_line || self->closed) return self->end(x, "");
                                   self->handed = true;
                                   self->inode = 0; // the path is the successor's now: never removed here
                                   self->end(x, "");
                                   error_code ignored;
                                   self->acceptor.close(ignored); // one handover per process
                                   const auto then = std::move(self->given); // it may close() this server
                                   self->given = nullptr;
                                   if (then) then();
                               });
    }

    void refuse(const std::shared_ptr<exchange>& x, const std::string& why) {
        auto line = std::make_shared<std::string>("heartwheel-refused " + why + "\n");
        asio::async_write(x->socket, asio::buffer(*line), [x, line](error_code, std::size_t) {
            error_code ignored;
            x->socket.close(ignored);
        });
    }

    void end(const std::shared_ptr<exchange>& x, const std::string& why) {
        serving = false;
        x->deadline.cancel();
        if (!why.empty() && x->socket.is_open()) return refuse(x, why);
        error_code ignored;
        x->socket.close(ignored);
    }

    bool still_ours() const {
        struct stat st{};
        return ::stat(path.c_str(), &st) == 0 && st.st_dev == device && st.st_ino == inode;
    }
};

handover_server::handover_server(const asio::any_io_executor& ex, std::string path, std::function<std::vector<int>()> give,
                                 std::function<void()> given)
    : state_(std::make_shared<state>(ex, std::move(path), std::move(give), std::move(given))) {
    const std::string& p = state_->path;
    (void)unix_address(p); // its length
    struct stat st{};
    if (::lstat(p.c_str(), &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) fail(p, "exists and is not a socket (not removed)");
        ::unlink(p.c_str()); // a predecessor's, or a stale one: its successor is this process
    }
    error_code ec;
    state_->acceptor.open(asio::local::stream_protocol(), ec);
    if (!ec) state_->acceptor.bind(asio::local::stream_protocol::endpoint(p), ec);
    if (!ec) state_->acceptor.listen(4, ec);
    if (ec) fail(p, ec.message());
    if (::stat(p.c_str(), &st) == 0) {
        state_->device = st.st_dev;
        state_->inode = st.st_ino;
    }
    state_->accept();
}

handover_server::~handover_server() { close(); }

void handover_server::close() noexcept {
    if (state_->closed) return;
    state_->closed = true;
    state_->give = nullptr; // what they call may be gone once this object is
    state_->given = nullptr;
    error_code ignored;
    state_->acceptor.close(ignored);
    if (state_->inode != 0 && state_->still_ours()) ::unlink(state_->path.c_str());
    state_->inode = 0;
}

const std::string& handover_server::path() const noexcept { return state_->path; }

bool handover_server::handed_over() const noexcept { return state_->handed; }

} // namespace heartwheel::net
