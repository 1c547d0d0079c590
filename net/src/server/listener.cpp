// listener.cpp — see listener.hpp.
#include <heartwheel/net/server/listener.hpp>
#include <heartwheel/net/server/handover.hpp>
#include <heartwheel/net/policies/policies.hpp>

#include <sys/resource.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <iostream>

namespace heartwheel::net {
namespace {

int open_spare() noexcept { return ::open("/dev/null", O_RDONLY | O_CLOEXEC); }

// "BYE busy\n" -> "BYE busy": the refusal as a log line shows it.
std::string shown(std::string_view bytes) {
    while (!bytes.empty() && (bytes.back() == '\n' || bytes.back() == '\r')) bytes.remove_suffix(1);
    return std::string(bytes);
}

} // namespace

close_reason busy_reason() {
    static const close_reason r = define_close_reason("busy");
    return r;
}

std::size_t raise_descriptor_limit() noexcept {
    rlimit lim{};
    if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return 0;
    if (lim.rlim_cur < lim.rlim_max) {
        rlimit raised = lim;
        raised.rlim_cur = lim.rlim_max;
        if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) lim = raised;
    }
    return lim.rlim_cur == RLIM_INFINITY ? 0 : static_cast<std::size_t>(lim.rlim_cur);
}

// The socket: a predecessor's (handover), systemd's, or bound here; the predecessor is told only once
// this listener is whole (until then a failure leaves it serving).
listener::listener(const asio::any_io_executor& ex, const asio::ip::tcp::endpoint& endpoint, listener_options options)
    : listener(asio::ip::tcp::acceptor(ex), std::move(options)) {
    inherited_listeners inherited;
    if (!options_.handover.empty()) inherited = inherited_listeners::take(options_.handover);
    if (auto taken = inherited.claim(ex, endpoint)) {
        acceptor_ = std::move(*taken);
    } else if (!inherited.empty()) {
        throw listen_error("handover " + options_.handover + ": the process serving it listens on no socket for " +
                           endpoint_text(endpoint) + " (it serves on)");
    } else if (auto activated = options_.inherit ? inherited_listeners::claim_systemd(ex, endpoint) : std::nullopt) {
        acceptor_ = std::move(*activated);
    } else {
        acceptor_ = listen(ex, endpoint, options_.listen);
    }
    if (!options_.handover.empty())
        handover_ = std::make_unique<handover_server>(
            ex, options_.handover, [this] { return std::vector<int>{acceptor_.native_handle()}; }, [this] { handed_over(); });
    inherited.confirm(); // the predecessor stops accepting and drains
}

void listener::handed_over() {
    say("a new process took the listening socket (handover " + options_.handover + "); accepting stops here");
    close();
    if (auto f = on_handed_over_) f();
}

listener::listener(asio::ip::tcp::acceptor acceptor, listener_options options)
    : options_(std::move(options)), acceptor_(std::move(acceptor)), pause_(acceptor_.get_executor()),
      ready_signal_(acceptor_.get_executor()) {
    if (options_.admission_poll.count() < 1 || options_.admission_poll.count() > 1000)
        throw config_error("admission_poll", std::to_string(options_.admission_poll.count()) + "ms", "1ms to 1s");
    options_.proxy.validate();
    if (options_.admission.enabled()) admission_ = std::make_shared<admission>(options_.admission); // validates
    if (options_.raise_descriptor_limit) raise_descriptor_limit();
    spare_ = open_spare();
}

listener::~listener() {
    handover_.reset();           // its calls into this listener end here
    options_.counters = nullptr; // what counts may be gone already: only close() counts
    options_.on_refused = nullptr;
    close_intake(); // the header reads' handlers see `finished` and touch nothing else
    if (spare_ >= 0) ::close(spare_);
}

void listener::close() noexcept {
    error_code ignored;
    if (handover_) handover_->close(); // nothing to hand over any more (a successor's path is not touched)
    acceptor_.close(ignored);
    pause_.cancel();
    close_intake();
}

void listener::close_fd(int fd) noexcept {
    ::close(fd);
}

void listener::refuse_at_limit(int fd) {
    refuse(fd);
    refused_at_limit_.fetch_add(1, std::memory_order_relaxed);
}

asio::ip::tcp::endpoint listener::local_endpoint() const {
    return acceptor_.local_endpoint();
}

std::string listener::local_address() const { return endpoint_text(local_endpoint()); }

void listener::say(const std::string& line) {
    if (options_.log) options_.log(line);
    else std::cerr << options_.name << ": " << line << std::endl;
}

listener::outcome listener::judge(const error_code& ec) {
    if (!ec) {
        accepted_.fetch_add(1, std::memory_order_relaxed);
        probed_ = false;
        if (in_episode_) {
            in_episode_ = false;
            say("accepting again (" + std::to_string(std::exchange(episode_refused_, 0)) +
                " refused meanwhile at the descriptor limit)");
        }
        return outcome::accepted;
    }
    if (ec == asio::error::operation_aborted || ec == asio::error::bad_descriptor || !acceptor_.is_open())
        return outcome::closed;
    // Failures of one connection, not of accepting (accept(2): treat them like EAGAIN).
    switch (ec.value()) {
    case ECONNABORTED: case EPROTO: case ENETDOWN: case ENOPROTOOPT: case EHOSTDOWN: case ENONET:
    case EHOSTUNREACH: case EOPNOTSUPP: case ENETUNREACH: case EINTR: case EAGAIN: case ETIMEDOUT:
        if (ec.category() == asio::error::get_system_category()) return outcome::retry_now;
        break;
    default: break;
    }
    const bool descriptors = ec == asio::error::no_descriptors || ec.value() == ENFILE;
    const bool exhausted = descriptors || ec == asio::error::no_buffer_space || ec == asio::error::no_memory;
    // The failure may be older than the room: a completion queued while another handler closed
    // sockets. A descriptor beside the spare means the next accept would succeed: try it once,
    // rather than refuse a peer there is room for.
    if (descriptors && !std::exchange(probed_, false)) {
        const int probe = open_spare();
        if (probe >= 0) {
            ::close(probe);
            probed_ = true;
            return outcome::retry_now;
        }
    }
    if (!in_episode_) {
        in_episode_ = true;
        if (exhausted)
            say("accept: " + ec.message() + "; refusing new connections" +
                (options_.refusal.empty() ? "" : " with " + shown(options_.refusal)) + " until descriptors free up");
        else
            say("accept: " + ec.message() + "; retrying every " + std::to_string(options_.pause.count()) + " ms");
    }
    if (exhausted) refuse_waiting();
    return exhausted ? outcome::exhausted : outcome::failed;
}

bool listener::must_wait() {
    if (!admission_ || !acceptor_.is_open()) return false;
    if (admission_->limits().refuse_at_limit || admission_->room_for_connection()) {
        waiting_ = false;
        return false;
    }
    if (!waiting_) {
        waiting_ = true;
        waits_.fetch_add(1, std::memory_order_relaxed);
    }
    const auto now = admission::clock::now();
    admission_->check_stalled(now); // newcomers wait: a handshake whose peer says nothing holds a place
    // Sockets accepted a second ago and still not connections were dropped without dropped():
    // their places must not hold accepting up for good.
    if (admission_->reserved() > 0 && now - last_reserved_ > std::chrono::seconds(1)) admission_->forget_reservations();
    return true;
}

void listener::refuse(int fd) {
    if (!options_.refusal.empty()) {
        const ssize_t sent = ::send(fd, options_.refusal.data(), options_.refusal.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        (void)sent;
    }
    closed_here(busy_reason());
}

void listener::closed_here(close_reason r) {
    if (options_.counters) options_.counters->closed(r);
    if (options_.on_refused) options_.on_refused(r);
}

// The backlog's connections, one at a time on the spare descriptor: accepted, told, closed. Bounded
// per pause, so that a flood of connects cannot keep the thread here.
void listener::at_capacity() noexcept {
    if (admission_) admission_->check_stalled(admission::clock::now());
}

void listener::refuse_waiting() {
    at_capacity(); // out of descriptors: a silent handshake holds one
    if (spare_ < 0) spare_ = open_spare();
    for (int i = 0; i < 256 && spare_ >= 0; ++i) {
        ::close(spare_);
        const int fd = ::accept4(acceptor_.native_handle(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            refuse(fd);
            ::close(fd);
            refused_.fetch_add(1, std::memory_order_relaxed);
            ++episode_refused_;
        }
        spare_ = open_spare();
        if (fd < 0) break; // the backlog is empty (EAGAIN), or still no room
    }
}

} // namespace heartwheel::net
