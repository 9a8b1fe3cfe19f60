#include "server/http_front.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <httplib.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <unordered_map>

#include "core/error.h"
#include "server/api_error.h"
#include "server/http_transport.h"

namespace duet::server {
namespace {

using Clock = std::chrono::steady_clock;
constexpr Clock::time_point kNever = Clock::time_point::max();
constexpr size_t kRecvChunk = 16384;
constexpr int kScanIntervalMs = 50;       // deadline checks at least this often
constexpr int kOverCapDeadlineMs = 1000;  // an over-cap connection's head must come within this
constexpr int kListenBacklog = 1024;      // pending connections the kernel queues
constexpr int kAcceptPauseMs = 100;       // accepting resumes this long after running out of fds
// A connection answered for the last time is shut down for writing and its input drained for
// at most this long before it is closed: closing with unread input would send a reset that
// can destroy the response before the client reads it (nginx's lingering close).
constexpr int kLingerMs = 1000;

thread_local CurrentRequest t_current;

std::string reason(int status) {
    switch (status) {
        case 400:
            return "Bad Request";
        case 408:
            return "Request Timeout";
        case 413:
            return "Payload Too Large";
        case 431:
            return "Request Header Fields Too Large";
        case 503:
            return "Service Unavailable";
        default:
            return "Error";
    }
}

std::string error_type(int status) { return status == 503 ? "server_error" : "invalid_request_error"; }

void addr_of(const sockaddr_storage& a, std::string& ip, int& port) {
    char host[INET6_ADDRSTRLEN] = {0};
    if (a.ss_family == AF_INET) {
        const auto* s = reinterpret_cast<const sockaddr_in*>(&a);
        ::inet_ntop(AF_INET, &s->sin_addr, host, sizeof host);
        port = ntohs(s->sin_port);
    } else if (a.ss_family == AF_INET6) {
        const auto* s = reinterpret_cast<const sockaddr_in6*>(&a);
        ::inet_ntop(AF_INET6, &s->sin6_addr, host, sizeof host);
        port = ntohs(s->sin6_port);
    }
    ip = host;
}

int remaining_ms(Clock::time_point deadline) {
    if (deadline == kNever) return -1;
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    return ms <= 0 ? 0 : int(std::min<int64_t>(ms, 1 << 30));
}

}  // namespace

std::string front_error_response(int status, const std::string& message) {
    const std::string body = ApiError(status, error_type(status), message).to_json().dump();
    return fmt::format(
        "HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: "
        "close\r\n\r\n{}",
        status, reason(status), body.size(), body);
}

const CurrentRequest& current_request() { return t_current; }

bool client_gone() {
    const int fd = t_current.fd;
    if (fd < 0) return false;
    pollfd p{fd, POLLIN | POLLRDHUP, 0};
    if (::poll(&p, 1, 0) <= 0) return false;
    if (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) return true;
    char c;
    return ::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;  // orderly close (pipelined data is not)
}

bool server_stopping() { return t_current.stopping && t_current.stopping->load(); }

// One connection: its socket, the bytes read and not yet consumed, and its deadlines.
struct HttpFront::Conn {
    int fd = -1;
    bool over_cap = false;  // answered 503 once its head is in
    std::string buf;        // input not yet consumed by a request
    RequestHead head;       // state COMPLETE once the head is in
    size_t served = 0;      // requests answered on this connection
    bool closing = false;   // answered for the last time: input is drained until EOF or linger_deadline
    Clock::time_point idle_deadline = kNever, head_deadline = kNever, body_deadline = kNever, linger_deadline = kNever;
    std::string remote_ip, local_ip;
    int remote_port = 0, local_port = 0;

    size_t request_bytes() const { return head.head_bytes + size_t(head.content_length.value_or(0)); }
};

// The stream a worker's httplib::Server::process_request reads and writes: first the bytes
// the front read, then (chunked bodies only) the socket within the body deadline.
class ConnStream : public httplib::Stream {
  public:
    ConnStream(HttpFront::Conn& c, const FrontLimits& l) : c_(c), l_(l) {}

    bool is_readable() const override { return pos_ < avail() || (c_.head.chunked && wait(POLLIN, l_.io_timeout_ms)); }
    bool is_writable() const override { return wait(POLLOUT, l_.io_timeout_ms); }

    ssize_t read(char* ptr, size_t size) override {
        if (pos_ < avail()) {
            const size_t n = std::min(size, avail() - pos_);
            std::memcpy(ptr, c_.buf.data() + pos_, n);
            pos_ += n;
            return ssize_t(n);
        }
        if (!c_.head.chunked) return 0;  // a Content-Length request ends here
        const int left = remaining_ms(c_.body_deadline);
        if (left == 0 || !wait(POLLIN, std::min(left, l_.io_timeout_ms))) return -1;
        const ssize_t n = ::recv(c_.fd, ptr, size, MSG_DONTWAIT);
        return n < 0 && errno == EAGAIN ? -1 : n;
    }

    ssize_t write(const char* ptr, size_t size) override {
        for (;;) {
            const ssize_t n = ::send(c_.fd, ptr, size, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (n >= 0) return n;
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return -1;
            if (!wait(POLLOUT, l_.io_timeout_ms)) return -1;
        }
    }

    void get_remote_ip_and_port(std::string& ip, int& port) const override { ip = c_.remote_ip, port = c_.remote_port; }
    void get_local_ip_and_port(std::string& ip, int& port) const override { ip = c_.local_ip, port = c_.local_port; }
    socket_t socket() const override { return c_.fd; }

  private:
    // Content-Length requests: exactly their bytes; chunked: whatever the front read.
    size_t avail() const { return c_.head.chunked ? c_.buf.size() : c_.request_bytes(); }
    bool wait(short events, int timeout_ms) const {
        pollfd p{c_.fd, events, 0};
        int r;
        do r = ::poll(&p, 1, timeout_ms);
        while (r < 0 && errno == EINTR);
        return r > 0 && (p.revents & events) && !(p.revents & (POLLERR | POLLNVAL));
    }

    HttpFront::Conn& c_;
    const FrontLimits& l_;
    size_t pos_ = 0;
};

struct HttpFront::Impl {
    FrontLimits limits;
    ProcessRequest process;
    std::function<void(int)> on_refused;
    std::atomic<size_t>& open;
    int listen_fd = -1, epoll_fd = -1, event_fd = -1;
    std::atomic<bool> stopping{false};
    std::unordered_map<int, std::unique_ptr<Conn>> conns;  // front-owned connections (event thread only)
    size_t over_cap = 0;                                   // event thread only
    Clock::time_point listen_paused_until = kNever;        // accept paused (out of descriptors) until then

    std::mutex mu;  // guards jobs, returned, workers_done
    std::condition_variable cv;
    std::deque<std::unique_ptr<Conn>> jobs;      // complete requests for the workers
    std::deque<std::unique_ptr<Conn>> returned;  // keep-alive connections back to the front
    bool workers_done = false;
    std::vector<std::thread> workers;

    Impl(FrontLimits l, ProcessRequest p, std::function<void(int)> oc, std::atomic<size_t>& o)
        : limits(std::move(l)), process(std::move(p)), on_refused(std::move(oc)), open(o) {}

    void wake() {
        const uint64_t one = 1;
        [[maybe_unused]] const ssize_t n = ::write(event_fd, &one, sizeof one);
    }

    void close_conn(std::unique_ptr<Conn> c) {
        ::close(c->fd);
        if (c->over_cap)
            --over_cap;
        else
            open.fetch_sub(1);
    }

    static void start_closing(Conn& c) {
        ::shutdown(c.fd, SHUT_WR);
        c.closing = true;
        std::string().swap(c.buf);
        c.idle_deadline = c.head_deadline = c.body_deadline = kNever;
        c.linger_deadline = Clock::now() + std::chrono::milliseconds(kLingerMs);
    }

    // Best effort: a short response on a non-blocking socket, then a lingering close.
    void refuse(int fd, int status, const std::string& message) {
        if (on_refused) on_refused(status);
        const std::string r = front_error_response(status, message);
        [[maybe_unused]] const ssize_t n = ::send(fd, r.data(), r.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        start_closing(*conns.at(fd));
    }

    void drop(int fd) {
        ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, fd, nullptr);
        auto it = conns.find(fd);
        std::unique_ptr<Conn> c = std::move(it->second);
        conns.erase(it);
        close_conn(std::move(c));
    }

    void watch(std::unique_ptr<Conn> c) {
        epoll_event ev{};
        ev.events = EPOLLIN | EPOLLRDHUP;
        ev.data.fd = c->fd;
        ::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, c->fd, &ev);
        const int fd = c->fd;
        conns[fd] = std::move(c);
    }

    void accept_all() {
        for (;;) {
            sockaddr_storage ra{};
            socklen_t rl = sizeof ra;
            const int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&ra), &rl, SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (fd < 0 && (errno == EMFILE || errno == ENFILE)) {
                // Out of descriptors: the listening socket stays readable; stop watching it for a
                // while instead of spinning (the kernel keeps the pending connections queued).
                ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, listen_fd, nullptr);
                listen_paused_until = Clock::now() + std::chrono::milliseconds(kAcceptPauseMs);
            }
            if (fd < 0) return;  // EAGAIN: all accepted
            auto c = std::make_unique<Conn>();
            c->fd = fd;
            if (open.load() >= limits.max_connections) {
                if (over_cap >= kOverCapConnections) {
                    ::close(fd);
                    continue;
                }
                c->over_cap = true;
                ++over_cap;
                c->idle_deadline = Clock::now() + std::chrono::milliseconds(kOverCapDeadlineMs);
            } else {
                open.fetch_add(1);
                c->idle_deadline = Clock::now() + std::chrono::milliseconds(limits.idle_timeout_ms);
            }
            addr_of(ra, c->remote_ip, c->remote_port);
            sockaddr_storage la{};
            socklen_t ll = sizeof la;
            if (::getsockname(fd, reinterpret_cast<sockaddr*>(&la), &ll) == 0) addr_of(la, c->local_ip, c->local_port);
            int yes = 1;
            ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);  // SSE tokens go out at once
            watch(std::move(c));
        }
    }

    // New bytes on a front-owned connection: read what the current limits allow, then see
    // whether a request is complete.
    void on_readable(int fd) {
        Conn& c = *conns.at(fd);
        const size_t cap = limits.head.max_head_bytes + limits.max_body_bytes + kRecvChunk;
        bool eof = false;
        char tmp[kRecvChunk];
        if (c.closing) {  // drain and forget
            ssize_t n;
            while ((n = ::recv(fd, tmp, sizeof tmp, 0)) > 0) {
            }
            if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) drop(fd);
            return;
        }
        while (c.buf.size() < cap) {
            const ssize_t n = ::recv(fd, tmp, std::min(sizeof tmp, cap - c.buf.size()), 0);
            if (n > 0) {
                c.buf.append(tmp, size_t(n));
                continue;
            }
            if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) eof = true;
            break;
        }
        advance(fd, eof);
    }

    void advance(int fd, bool eof) {
        Conn& c = *conns.at(fd);
        if (c.head.state != RequestHead::State::COMPLETE) {
            if (c.buf.empty()) {
                if (eof) drop(fd);
                return;
            }
            if (c.head_deadline == kNever)
                c.head_deadline =
                    Clock::now() + std::chrono::milliseconds(c.over_cap ? kOverCapDeadlineMs : limits.head_timeout_ms);
            c.head = check_request_head(c.buf, limits.head);
            if (c.head.state == RequestHead::State::BAD) return refuse(fd, c.head.status, c.head.message);
            if (c.head.state == RequestHead::State::INCOMPLETE) {
                if (eof) drop(fd);
                return;
            }
            if (c.over_cap)
                return refuse(
                    fd, 503,
                    fmt::format("The server has {} connections open, its limit (--max-connections); retry later",
                                limits.max_connections));
            if (c.head.content_length && *c.head.content_length > limits.max_body_bytes)
                return refuse(fd, 413, body_too_large_message(limits.max_body_bytes));
            c.body_deadline = Clock::now() + std::chrono::milliseconds(limits.body_timeout_ms);
            if (c.head.expect_continue && c.buf.size() < c.request_bytes()) {
                static const std::string kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
                [[maybe_unused]] const ssize_t n =
                    ::send(fd, kContinue.data(), kContinue.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
            }
        }
        if (c.head.chunked || c.buf.size() >= c.request_bytes()) return dispatch(fd);
        if (eof) drop(fd);
    }

    void dispatch(int fd) {
        ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, fd, nullptr);
        auto it = conns.find(fd);
        std::unique_ptr<Conn> c = std::move(it->second);
        conns.erase(it);
        c->idle_deadline = c->head_deadline = kNever;
        {
            std::lock_guard<std::mutex> lock(mu);
            jobs.push_back(std::move(c));
        }
        cv.notify_one();
    }

    void take_returned() {
        uint64_t v;
        [[maybe_unused]] const ssize_t n = ::read(event_fd, &v, sizeof v);
        std::deque<std::unique_ptr<Conn>> back;
        {
            std::lock_guard<std::mutex> lock(mu);
            back.swap(returned);
        }
        for (auto& c : back) {
            const int fd = c->fd;
            watch(std::move(c));
            const Conn& back_c = *conns.at(fd);
            if (!back_c.closing && !back_c.buf.empty())
                advance(fd, false);  // a pipelined request already read  // a pipelined request already read
        }
    }

    void check_deadlines() {
        const auto now = Clock::now();
        std::vector<std::pair<int, int>> expired;  // fd, 0 = idle close, 408 = head/body late
        for (const auto& [fd, c] : conns) {
            if (c->closing) {
                if (now >= c->linger_deadline) expired.emplace_back(fd, 0);
            } else if (c->buf.empty() && c->head.state != RequestHead::State::COMPLETE && now >= c->idle_deadline)
                expired.emplace_back(fd, 0);
            else if (now >= c->head_deadline || now >= c->body_deadline)
                expired.emplace_back(fd, 408);
        }
        for (auto [fd, status] : expired) {
            if (status == 0) {
                drop(fd);
                continue;
            }
            const Conn& c = *conns.at(fd);
            const std::string msg =
                c.head.state == RequestHead::State::COMPLETE
                    ? fmt::format("The request body did not arrive within {} ms (--body-timeout-ms)",
                                  limits.body_timeout_ms)
                    : fmt::format("The request head did not arrive within {} ms of its first byte (--head-timeout-ms)",
                                  c.over_cap ? kOverCapDeadlineMs : limits.head_timeout_ms);
            refuse(fd, 408, msg);
        }
    }

    void worker_loop() {
        for (;;) {
            std::unique_ptr<Conn> c;
            {
                std::unique_lock<std::mutex> lock(mu);
                cv.wait(lock, [&] { return !jobs.empty() || workers_done; });
                if (jobs.empty()) return;
                c = std::move(jobs.front());
                jobs.pop_front();
            }
            serve(std::move(c));
        }
    }

    void serve(std::unique_ptr<Conn> c) {
        const bool last = c->served + 1 >= limits.keep_alive_max || c->head.chunked || stopping.load();
        bool closed = false, ok = false;
        {
            ConnStream s(*c, limits);
            t_current = {&c->head, c->fd, &stopping};
            try {
                ok = process(s, last, closed);
            } catch (...) {
                ok = false;
            }
            t_current = {};
        }
        ++c->served;
        if (!ok || closed || last || stopping.load()) {
            start_closing(*c);
        } else {
            c->buf.erase(0, c->request_bytes());
            c->head = RequestHead{};
            c->body_deadline = c->head_deadline = kNever;
            c->idle_deadline = Clock::now() + std::chrono::milliseconds(limits.idle_timeout_ms);
        }
        {
            std::lock_guard<std::mutex> lock(mu);
            returned.push_back(std::move(c));
        }
        wake();
    }

    void loop() {
        epoll_event events[256];
        auto last_scan = Clock::now();
        while (!stopping.load()) {
            const int n = ::epoll_wait(epoll_fd, events, 256, kScanIntervalMs);
            for (int i = 0; i < n; ++i) {
                const int fd = events[i].data.fd;
                if (fd == listen_fd)
                    accept_all();
                else if (fd == event_fd)
                    take_returned();
                else if (conns.count(fd))
                    on_readable(fd);
            }
            if (Clock::now() - last_scan >= std::chrono::milliseconds(kScanIntervalMs)) {
                check_deadlines();
                last_scan = Clock::now();
                if (listen_paused_until != kNever && last_scan >= listen_paused_until) {
                    listen_paused_until = kNever;
                    epoll_event ev{};
                    ev.events = EPOLLIN;
                    ev.data.fd = listen_fd;
                    ::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, listen_fd, &ev);
                }
            }
        }
    }

    void shutdown() {
        ::close(listen_fd);
        listen_fd = -1;
        {
            std::lock_guard<std::mutex> lock(mu);
            workers_done = true;
        }
        cv.notify_all();
        for (auto& t : workers) t.join();
        workers.clear();
        for (auto& [fd, c] : conns) close_conn(std::move(c));
        conns.clear();
        for (auto& c : returned) close_conn(std::move(c));
        returned.clear();
        for (auto& c : jobs) close_conn(std::move(c));
        jobs.clear();
    }
};

HttpFront::HttpFront(FrontLimits limits, ProcessRequest process, std::function<void(int)> on_refused)
    : impl_(std::make_unique<Impl>(std::move(limits), std::move(process), std::move(on_refused), open_)) {
    impl_->epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
    impl_->event_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (impl_->epoll_fd < 0 || impl_->event_fd < 0) fail("cannot create the HTTP event loop: {}", std::strerror(errno));
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = impl_->event_fd;
    ::epoll_ctl(impl_->epoll_fd, EPOLL_CTL_ADD, impl_->event_fd, &ev);
}

HttpFront::~HttpFront() {
    if (!impl_->workers.empty() || impl_->listen_fd >= 0) impl_->shutdown();
    ::close(impl_->epoll_fd);
    ::close(impl_->event_fd);
}

int HttpFront::bind(const std::string& host, int port) {
    addrinfo hints{}, *res = nullptr;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0 || !res)
        fail("cannot listen on {}:{} (the address cannot be resolved)", host, port);
    int fd = -1;
    for (addrinfo* a = res; a && fd < 0; a = a->ai_next) {
        fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) continue;
        int yes = 1;
        ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
        if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, kListenBacklog) != 0) {
            ::close(fd);
            fd = -1;
        }
    }
    ::freeaddrinfo(res);
    if (fd < 0 && port == 0) fail("cannot listen on {}: no free port", host);
    if (fd < 0) fail("cannot listen on {}:{} (address in use or not available; try another --port)", host, port);
    sockaddr_storage la{};
    socklen_t ll = sizeof la;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&la), &ll);
    std::string ip;
    int bound = 0;
    addr_of(la, ip, bound);
    impl_->listen_fd = fd;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    ::epoll_ctl(impl_->epoll_fd, EPOLL_CTL_ADD, fd, &ev);
    // Workers start here, so that they run when the address is printed.
    for (size_t i = 0; i < std::max<size_t>(1, impl_->limits.worker_threads); ++i)
        impl_->workers.emplace_back([this] { impl_->worker_loop(); });
    return bound;
}

void HttpFront::run() {
    impl_->loop();
    impl_->shutdown();
}

void HttpFront::stop() {
    impl_->stopping.store(true);
    impl_->wake();
}

}  // namespace duet::server
