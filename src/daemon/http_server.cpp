// Connection handling under hard limits: a bounded worker pool that answers 503
// when full, a byte budget and deadline per request, nonblocking I/O with
// MSG_NOSIGNAL, TLS via OpenSSL, and a lingering close so refusals are read.
#include "hotline/util.hpp"
#include "http_server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <fmt/format.h>
#include <mutex>
#include <thread>
#include <vector>

#include "serve_config.hpp"

namespace hotline::daemon {

namespace {

int remaining_ms(double deadline) {
    double left = deadline - monotonic_seconds();
    return left <= 0 ? 0 : int(left * 1000) + 1;
}

enum class Limit { kNone, kTooLarge, kTimeout };

// One connection's byte stream, plain or TLS, with per-request budget and deadlines.
class GuardedStream final : public httplib::Stream {
public:
    GuardedStream(int fd, SSL* ssl, const HttpLimits& l) : fd_(fd), ssl_(ssl), limits_(l) {}

    void begin_request(double read_timeout) {
        used_ = 0;
        limit_ = Limit::kNone;
        read_deadline_ = monotonic_seconds() + read_timeout;
        write_deadline_ = 0;
        wrote_ = false;
    }
    Limit limit() const { return limit_; }
    bool wrote() const { return wrote_; }
    bool buffered() const { return pos_ < len_ || (ssl_ && SSL_pending(ssl_) > 0); }

    bool is_readable() const override {
        if (buffered()) return true;
        pollfd p{fd_, POLLIN, 0};
        return poll(&p, 1, remaining_ms(read_deadline_)) > 0;
    }
    bool is_writable() const override {
        pollfd p{fd_, POLLOUT, 0};
        return poll(&p, 1, int(limits_.write_timeout * 1000)) > 0 && !(p.revents & (POLLERR | POLLHUP));
    }

    ssize_t read(char* ptr, size_t size) override {
        if (limit_ != Limit::kNone) return -1;
        if (pos_ == len_) {
            ssize_t n = fill();
            if (n <= 0) return n;
        }
        std::size_t take = std::min(size, len_ - pos_);
        if (used_ + take > limits_.max_request_bytes) {
            limit_ = Limit::kTooLarge;
            return -1;
        }
        std::memcpy(ptr, buf_ + pos_, take);
        pos_ += take;
        used_ += take;
        return ssize_t(take);
    }

    ssize_t write(const char* ptr, size_t size) override {
        if (write_deadline_ == 0) write_deadline_ = monotonic_seconds() + limits_.write_timeout;
        std::size_t off = 0;
        while (off < size) {
            ssize_t n;
            int want = POLLOUT;
            if (ssl_) {
                ERR_clear_error();
                int r = SSL_write(ssl_, ptr + off, int(std::min<std::size_t>(size - off, 1 << 20)));
                if (r > 0) {
                    n = r;
                } else {
                    int e = SSL_get_error(ssl_, r);
                    if (e == SSL_ERROR_WANT_READ) want = POLLIN;
                    else if (e != SSL_ERROR_WANT_WRITE) return -1;
                    n = -1;
                }
            } else {
                n = ::send(fd_, ptr + off, size - off, MSG_NOSIGNAL);
                if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return -1;
            }
            if (n > 0) {
                off += std::size_t(n);
                wrote_ = true;
                continue;
            }
            pollfd p{fd_, short(want), 0};
            if (poll(&p, 1, remaining_ms(write_deadline_)) <= 0) return -1;
        }
        return ssize_t(size);
    }

    void get_remote_ip_and_port(std::string& ip, int& port) const override { addr(true, ip, port); }
    void get_local_ip_and_port(std::string& ip, int& port) const override { addr(false, ip, port); }
    socket_t socket() const override { return fd_; }

    // TLS handshake within the read deadline.
    bool handshake() {
        while (true) {
            ERR_clear_error();
            int r = SSL_accept(ssl_);
            if (r == 1) return true;
            int e = SSL_get_error(ssl_, r);
            short want = e == SSL_ERROR_WANT_READ ? POLLIN : e == SSL_ERROR_WANT_WRITE ? POLLOUT : 0;
            if (!want) return false;
            pollfd p{fd_, want, 0};
            if (poll(&p, 1, remaining_ms(read_deadline_)) <= 0) return false;
        }
    }

private:
    ssize_t fill() {
        pos_ = len_ = 0;
        while (true) {
            ssize_t n;
            int want = POLLIN;
            if (ssl_) {
                ERR_clear_error();
                int r = SSL_read(ssl_, buf_, int(sizeof buf_));
                if (r > 0) {
                    n = r;
                } else {
                    int e = SSL_get_error(ssl_, r);
                    if (e == SSL_ERROR_ZERO_RETURN) return 0;
                    if (e == SSL_ERROR_WANT_WRITE) want = POLLOUT;
                    else if (e != SSL_ERROR_WANT_READ) return -1;
                    n = -1;
                }
            } else {
                n = ::recv(fd_, buf_, sizeof buf_, 0);
                if (n == 0) return 0;
                if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return -1;
            }
            if (n > 0) {
                len_ = std::size_t(n);
                return n;
            }
            pollfd p{fd_, short(want), 0};
            int pr = poll(&p, 1, remaining_ms(read_deadline_));
            if (pr == 0) {
                limit_ = Limit::kTimeout;
                return -1;
            }
            if (pr < 0 && errno != EINTR) return -1;
        }
    }

    void addr(bool peer, std::string& ip, int& port) const {
        sockaddr_storage ss{};
        socklen_t len = sizeof ss;
        int r = peer ? getpeername(fd_, reinterpret_cast<sockaddr*>(&ss), &len)
                     : getsockname(fd_, reinterpret_cast<sockaddr*>(&ss), &len);
        ip.clear();
        port = 0;
        if (r != 0) return;
        char buf[INET6_ADDRSTRLEN] = {};
        if (ss.ss_family == AF_INET) {
            auto* a = reinterpret_cast<sockaddr_in*>(&ss);
            inet_ntop(AF_INET, &a->sin_addr, buf, sizeof buf);
            port = ntohs(a->sin_port);
        } else if (ss.ss_family == AF_INET6) {
            auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
            inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof buf);
            port = ntohs(a->sin6_port);
        }
        ip = buf;
    }

    int fd_;
    SSL* ssl_;
    const HttpLimits& limits_;
    char buf_[4096];
    std::size_t pos_ = 0, len_ = 0, used_ = 0;
    Limit limit_ = Limit::kNone;
    double read_deadline_ = 0, write_deadline_ = 0;
    bool wrote_ = false;
};

// What the routing hooks need to know about the connection they run on.
struct ConnState {
    GuardedStream* stream = nullptr;
    bool close_after = false;  // a malformed request: do not read another from this peer
};
thread_local ConnState* t_conn = nullptr;
thread_local bool t_shed = false;

// Fixed workers and a bounded queue.  A connection that finds both full is handed
// (on the accepting thread, without blocking it) to the Rejector.
class BoundedPool final : public httplib::TaskQueue {
public:
    BoundedPool(int workers, int queued, std::atomic<std::size_t>& pending)
        : queued_(std::size_t(queued)), pending_(pending) {
        for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { work(); });
    }
    ~BoundedPool() override { shutdown(); }

    void enqueue(std::function<void()> fn) override {
        {
            std::lock_guard<std::mutex> lk(mu_);
            if (!stop_ && jobs_.size() < idle_ + queued_) {
                jobs_.push_back({std::move(fn), monotonic_seconds()});
                pending_ = jobs_.size();
                cv_.notify_one();
                return;
            }
        }
        t_shed = true;
        fn();
        t_shed = false;
    }

    void shutdown() override {
        {
            std::lock_guard<std::mutex> lk(mu_);
            if (stop_ && threads_.empty()) return;
            stop_ = true;
        }
        cv_.notify_all();
        for (auto& t : threads_) t.join();
        threads_.clear();
    }

private:
    // A connection that waited past kQueueDeadlineSeconds, or that is still queued
    // when the server stops, is handed to the Rejector (503, no worker time): slow
    // clients ahead of it must not make it wait without bound, nor delay SIGTERM.
    void work() {
        while (true) {
            Job job;
            bool reject = false;
            {
                std::unique_lock<std::mutex> lk(mu_);
                ++idle_;
                cv_.wait(lk, [&] { return stop_ || !jobs_.empty(); });
                --idle_;
                if (jobs_.empty()) return;  // stopping and drained
                job = std::move(jobs_.front());
                jobs_.pop_front();
                pending_ = jobs_.size();
                reject = stop_ || monotonic_seconds() - job.queued_at > kQueueDeadlineSeconds;
            }
            t_shed = reject;
            job.fn();
            t_shed = false;
        }
    }

    static constexpr double kQueueDeadlineSeconds = 1.0;
    struct Job {
        std::function<void()> fn;
        double queued_at = 0;
    };

    std::size_t queued_;
    std::atomic<std::size_t>& pending_;
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<Job> jobs_;
    std::vector<std::thread> threads_;
    std::size_t idle_ = 0;
    bool stop_ = false;
};


}  // namespace

// One thread multiplexing refused connections: over TLS finish the handshake
// first (nonblocking, with its own deadline), then read the request head (bounded
// bytes and time), answer 503 with Retry-After, half-close, drain, close.  It holds
// at most kMaxPlain connections, or kMaxTls when serving TLS (each of those holds an
// SSL session and costs this thread a handshake); beyond that a connection is
// closed unanswered.  Every state has a deadline, so a silent or slow client holds
// a slot for a few seconds at most.
class Rejector {
public:
    Rejector(HttpRejections& rej, std::size_t max_bytes, SSL_CTX* tls)
        : rej_(rej), max_bytes_(max_bytes), tls_(tls), cap_(tls ? kMaxTls : kMaxPlain) {
        if (pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) wake_[0] = wake_[1] = -1;
        thread_ = std::thread([this] { loop(); });
    }
    ~Rejector() {
        stop_ = true;
        poke();
        thread_.join();
        for (auto& c : conns_) finish(c);
        for (int fd : incoming_) ::close(fd);
        if (wake_[0] >= 0) ::close(wake_[0]);
        if (wake_[1] >= 0) ::close(wake_[1]);
    }

    // Called on the accepting thread or a worker: never blocks, never does TLS work.
    void take(int fd) {
        ++rej_.busy;
        {
            std::lock_guard<std::mutex> lk(mu_);
            if (count_ < cap_ && wake_[1] >= 0) {
                ++count_;
                incoming_.push_back(fd);
                poke();
                return;
            }
        }
        ::close(fd);
    }

    static constexpr std::size_t kMaxPlain = 256;
    static constexpr std::size_t kMaxTls = 128;
    static constexpr double kHandshakeSeconds = 2.0;
    static constexpr double kReadSeconds = 1.0;
    static constexpr double kWriteSeconds = 1.0;
    static constexpr double kDrainSeconds = 0.5;

private:
    enum class State { kHandshake, kReading, kWriting, kDraining };
    struct Conn {
        int fd = -1;
        SSL* ssl = nullptr;
        State state = State::kReading;
        double deadline = 0;
        short want = POLLIN;
        std::string head;  // last bytes of the request, to find its end
        std::size_t got = 0, sent = 0, drained = 0;
    };
    enum : ssize_t { kWouldBlock = -1, kFailed = -2 };

    void poke() {
        char b = 1;
        if (wake_[1] >= 0) [[maybe_unused]] auto r = ::write(wake_[1], &b, 1);
    }

    static void finish(Conn& c) {
        if (c.ssl) SSL_free(c.ssl);
        ::close(c.fd);
        c.ssl = nullptr;
        c.fd = -1;
    }

    // Moves bytes over the connection's stream: >0 moved, 0 end of stream,
    // kWouldBlock (c.want says what to wait for) or kFailed.
    static ssize_t io(Conn& c, bool out, char* buf, std::size_t len) {
        if (c.ssl) {
            ERR_clear_error();
            int r = out ? SSL_write(c.ssl, buf, int(len)) : SSL_read(c.ssl, buf, int(len));
            if (r > 0) return r;
            switch (SSL_get_error(c.ssl, r)) {
                case SSL_ERROR_ZERO_RETURN: return 0;
                case SSL_ERROR_WANT_READ: c.want = POLLIN; return kWouldBlock;
                case SSL_ERROR_WANT_WRITE: c.want = POLLOUT; return kWouldBlock;
                default: return kFailed;
            }
        }
        ssize_t n = out ? ::send(c.fd, buf, len, MSG_NOSIGNAL) : ::recv(c.fd, buf, len, 0);
        if (n >= 0) return n;
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
            c.want = out ? POLLOUT : POLLIN;
            return kWouldBlock;
        }
        return kFailed;
    }

    // What one state's step left: go on now, wait for the socket, or close.
    enum class Step { kAgain, kWait, kDone };
    static Step wait_if(bool keep) { return keep ? Step::kWait : Step::kDone; }

    Step handshake(Conn& c, double now) {
        ERR_clear_error();
        int r = SSL_accept(c.ssl);
        if (r == 1) {
            c.state = State::kReading;
            c.deadline = now + kReadSeconds;
            c.want = POLLIN;
            return Step::kAgain;
        }
        int e = SSL_get_error(c.ssl, r);
        if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) return Step::kDone;
        c.want = e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
        // Nothing can be answered before the handshake: past its deadline, close.
        return wait_if(now < c.deadline);
    }

    Step read_request(Conn& c, double now) {
        char buf[2048];
        ssize_t n = io(c, false, buf, sizeof buf);
        if (n > 0) {
            c.got += std::size_t(n);
            c.head.append(buf, std::size_t(n));
            if (c.head.size() > 8) c.head.erase(0, c.head.size() - 8);
        }
        if (n == kFailed) return Step::kDone;
        bool head_done = c.head.find("\r\n\r\n") != std::string::npos || c.got > max_bytes_;
        if (n == 0 || head_done || (n == kWouldBlock && now >= c.deadline)) {
            c.state = State::kWriting;
            c.deadline = now + kWriteSeconds;
            return Step::kAgain;
        }
        return n == kWouldBlock ? Step::kWait : Step::kAgain;
    }

    Step write_response(Conn& c, double now) {
        static const std::string kResponse =
            "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
            "Content-Length: 24\r\nRetry-After: 1\r\nConnection: close\r\n\r\n503 Service Unavailable\n";
        // A retried SSL_write must repeat the same arguments: without partial
        // writes `sent` stays 0 until the whole response is out.
        ssize_t n = io(c, true, const_cast<char*>(kResponse.data()) + c.sent, kResponse.size() - c.sent);
        if (n <= 0) return wait_if(n == kWouldBlock && now < c.deadline);
        c.sent += std::size_t(n);
        if (c.sent < kResponse.size()) return Step::kAgain;
        if (c.ssl) SSL_shutdown(c.ssl);  // close_notify; its answer is not awaited
        ::shutdown(c.fd, SHUT_WR);
        c.state = State::kDraining;
        c.deadline = now + kDrainSeconds;
        c.want = POLLIN;
        return Step::kAgain;
    }

    // Raw bytes: whatever the peer still sends is discarded, TLS or not.
    Step drain(Conn& c, double now) {
        char buf[4096];
        ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
        if (n > 0) {
            c.drained += std::size_t(n);
            return c.drained > (256u << 10) ? Step::kDone : Step::kAgain;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return wait_if(now < c.deadline);
        return Step::kDone;
    }

    // Advances one connection as far as it goes without blocking; false when it is done.
    bool step(Conn& c, double now) {
        while (true) {
            Step s = Step::kDone;
            switch (c.state) {
                case State::kHandshake: s = handshake(c, now); break;
                case State::kReading: s = read_request(c, now); break;
                case State::kWriting: s = write_response(c, now); break;
                case State::kDraining: s = drain(c, now); break;
            }
            if (s != Step::kAgain) return s == Step::kWait;
        }
    }

    void admit(int fd, double now) {
        Conn c;
        c.fd = fd;
        if (!tls_) {
            c.deadline = now + kReadSeconds;
            conns_.push_back(std::move(c));
            return;
        }
        SSL* ssl = SSL_new(tls_);
        if (!ssl || SSL_set_fd(ssl, fd) != 1) {
            if (ssl) SSL_free(ssl);
            ::close(fd);
            std::lock_guard<std::mutex> lk(mu_);
            --count_;
            return;
        }
        // Hold the 16 KB record buffers only while a record is in flight, and issue no
        // session tickets: a refused connection is not worth resuming.
        SSL_set_mode(ssl, SSL_MODE_RELEASE_BUFFERS);
        SSL_set_num_tickets(ssl, 0);
        c.ssl = ssl;
        c.state = State::kHandshake;
        c.deadline = now + kHandshakeSeconds;
        conns_.push_back(std::move(c));
    }

    void loop() {
        std::vector<pollfd> pfds;
        std::vector<int> fresh;
        while (!stop_) {
            {
                std::lock_guard<std::mutex> lk(mu_);
                fresh.swap(incoming_);
            }
            for (int fd : fresh) admit(fd, monotonic_seconds());
            fresh.clear();
            pfds.assign(1, pollfd{wake_[0], POLLIN, 0});
            double next = monotonic_seconds() + 1.0;
            for (auto& c : conns_) {
                pfds.push_back({c.fd, c.want, 0});
                next = std::min(next, c.deadline);
            }
            poll(pfds.data(), pfds.size(), remaining_ms(next));
            if (pfds[0].revents & POLLIN) {
                char sink[64];
                while (::read(wake_[0], sink, sizeof sink) > 0) {
                }
            }
            double now = monotonic_seconds();
            std::size_t closed = 0;
            for (std::size_t i = 0; i < conns_.size(); ++i) {
                Conn& c = conns_[i];
                if ((pfds[i + 1].revents || now >= c.deadline) && !step(c, now)) {
                    finish(c);
                    ++closed;
                }
            }
            if (closed) {
                conns_.erase(std::remove_if(conns_.begin(), conns_.end(), [](auto& c) { return c.fd < 0; }),
                             conns_.end());
                std::lock_guard<std::mutex> lk(mu_);
                count_ -= closed;
            }
        }
    }

    HttpRejections& rej_;
    std::size_t max_bytes_;
    SSL_CTX* tls_;
    std::size_t cap_;
    int wake_[2] = {-1, -1};
    std::thread thread_;
    std::atomic<bool> stop_{false};
    std::mutex mu_;
    std::vector<int> incoming_;
    std::size_t count_ = 0;  // incoming_ + conns_
    std::vector<Conn> conns_;
};

namespace {

const char* reason_phrase(int status) {
    switch (status) {
        case 400: return "Bad Request";
        case 401: return "Unauthorized";
        case 404: return "Not Found";
        case 405: return "Method Not Allowed";
        case 408: return "Request Timeout";
        case 413: return "Payload Too Large";
        case 414: return "URI Too Long";
        case 431: return "Request Header Fields Too Large";
        case 503: return "Service Unavailable";
        default: return "Error";
    }
}

// Half-close, then read what the peer still sends for a moment, so it sees our
// answer instead of a reset caused by unread request bytes.
void lingering_close(int fd, SSL* ssl) {
    if (ssl) {
        SSL_shutdown(ssl);
        SSL_free(ssl);
    }
    ::shutdown(fd, SHUT_WR);
    double deadline = monotonic_seconds() + 0.5;
    std::size_t drained = 0;
    char sink[4096];
    while (drained < (256u << 10)) {
        pollfd p{fd, POLLIN, 0};
        if (poll(&p, 1, remaining_ms(deadline)) <= 0) break;
        ssize_t n = ::recv(fd, sink, sizeof sink, 0);
        if (n <= 0 && !(n < 0 && errno == EINTR)) break;
        if (n > 0) drained += std::size_t(n);
    }
    ::close(fd);
}

// Idle between requests: gives the worker up early when `give_up` says so
// (the server stops, or other connections are waiting).
template <class GiveUp>
bool wait_for_next_request(GuardedStream& strm, socket_t sock, double keep_alive_timeout, GiveUp give_up) {
    double deadline = monotonic_seconds() + keep_alive_timeout;
    bool ready = strm.buffered();
    while (!ready && monotonic_seconds() < deadline) {
        if (give_up()) break;
        pollfd p{sock, POLLIN, 0};
        int r = poll(&p, 1, std::min(remaining_ms(deadline), 100));
        if (r < 0 && errno != EINTR) break;
        ready = r > 0;
    }
    return ready;
}

void answer_limit_breach(GuardedStream& strm, HttpRejections& rejections) {
    int status = strm.limit() == Limit::kTooLarge ? 431 : 408;
    if (status == 431) ++rejections.too_large;
    else ++rejections.timeout;
    std::string body = fmt::format("{} {}\n", status, reason_phrase(status));
    std::string resp = fmt::format(
        "HTTP/1.1 {} {}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n"
        "Connection: close\r\n\r\n{}",
        status, reason_phrase(status), body.size(), body);
    strm.write(resp.data(), resp.size());
}

}  // namespace

std::map<std::string, std::uint64_t> HttpRejections::snapshot() const {
    return {{"busy", busy.load()},
            {"method", method.load()},
            {"auth", auth.load()},
            {"too_large", too_large.load()},
            {"timeout", timeout.load()},
            {"bad_request", bad_request.load()},
            {"tls_handshake", tls_handshake.load()}};
}

TlsContext::~TlsContext() {
    if (ctx_) SSL_CTX_free(ctx_);
}

std::string TlsContext::load(const std::string& cert_pem, const std::string& key_pem) {
    auto fail = [&](const std::string& what) {
        unsigned long e = ERR_get_error();
        char buf[256] = {};
        if (e) ERR_error_string_n(e, buf, sizeof buf);
        ERR_clear_error();
        return what + (e ? std::string(": ") + buf : std::string());
    };
    ctx_ = SSL_CTX_new(TLS_server_method());
    if (!ctx_) return fail("TLS: cannot create a context");
    SSL_CTX_set_min_proto_version(ctx_, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx_, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
    if (SSL_CTX_use_certificate_chain_file(ctx_, cert_pem.c_str()) != 1)
        return fail("TLS: cannot load certificate " + cert_pem);
    if (SSL_CTX_use_PrivateKey_file(ctx_, key_pem.c_str(), SSL_FILETYPE_PEM) != 1)
        return fail("TLS: cannot load private key " + key_pem);
    if (SSL_CTX_check_private_key(ctx_) != 1) return fail("TLS: key does not match the certificate");
    return {};
}

GuardedServer::GuardedServer(const HttpLimits& limits, HttpRejections& rejections, SSL_CTX* tls)
    : limits_(limits), rejections_(rejections), tls_(tls),
      rejector_(std::make_unique<Rejector>(rejections, limits.max_request_bytes, tls)) {
    new_task_queue = [this] { return new BoundedPool(limits_.workers, limits_.queued, pending_); };
    set_payload_max_length(limits_.max_request_bytes);
    // Only the Keep-Alive response header reads these; our loop enforces them.
    set_keep_alive_max_count(std::size_t(limits_.max_requests_per_connection));
    set_keep_alive_timeout(time_t(limits_.keep_alive_timeout));

    set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
        auto text = [&](int status) {
            // The request body (if any) was not read: this connection is done.
            if (t_conn) t_conn->close_after = true;
            res.set_header("Connection", "close");
            res.status = status;
            res.set_content(fmt::format("{} {}\n", status, reason_phrase(status)), "text/plain; charset=utf-8");
        };
        if (req.method != "GET" && req.method != "HEAD") {
            ++rejections_.method;
            text(405);
            res.set_header("Allow", "GET, HEAD");
            return HandlerResponse::Handled;
        }
        if (!auth_users_.empty() && !check_basic_auth(req.get_header_value("Authorization"), auth_users_)) {
            ++rejections_.auth;
            text(401);
            res.set_header("WWW-Authenticate", "Basic realm=\"hotline\", charset=\"UTF-8\"");
            return HandlerResponse::Handled;
        }
        return HandlerResponse::Unhandled;
    });

    // Requests httplib could not parse arrive here as 400/413/414: name the cause.
    set_error_handler(HandlerWithResponse([this](const httplib::Request&, httplib::Response& res) {
        int s = res.status;
        if (s != 400 && s != 413 && s != 414) return HandlerResponse::Unhandled;
        Limit lim = t_conn && t_conn->stream ? t_conn->stream->limit() : Limit::kNone;
        if (lim == Limit::kTooLarge || s == 413 || s == 414) {
            ++rejections_.too_large;
            if (s == 400) res.status = 431;
        } else if (lim == Limit::kTimeout) {
            ++rejections_.timeout;
            res.status = 408;
        } else {
            ++rejections_.bad_request;
        }
        if (t_conn) t_conn->close_after = true;
        res.set_header("Connection", "close");
        res.set_content(fmt::format("{} {}\n", res.status, reason_phrase(res.status)), "text/plain; charset=utf-8");
        return HandlerResponse::Handled;
    }));
}

GuardedServer::~GuardedServer() = default;

void GuardedServer::raise_backlog(int backlog) {
    socket_t s = svr_sock_;
    if (s != INVALID_SOCKET) ::listen(s, backlog);
}

void GuardedServer::require_basic_auth(std::vector<AuthUser> users) { auth_users_ = std::move(users); }

bool GuardedServer::process_and_close_socket(socket_t sock) {
    int fl = fcntl(sock, F_GETFL);
    if (fl >= 0) fcntl(sock, F_SETFL, fl | O_NONBLOCK);
    if (t_shed) {
        rejector_->take(sock);
        return true;
    }
    ConnState st;
    SSL* ssl = nullptr;
    if (tls_) {
        ssl = SSL_new(tls_);
        if (!ssl || SSL_set_fd(ssl, sock) != 1) {
            if (ssl) SSL_free(ssl);
            ::close(sock);
            return false;
        }
    }
    GuardedStream strm(sock, ssl, limits_);
    st.stream = &strm;
    t_conn = &st;
    double read_timeout = limits_.read_timeout;

    bool ok = true;
    strm.begin_request(read_timeout);
    if (ssl && !strm.handshake()) {
        ++rejections_.tls_handshake;
        ok = false;
    }
    for (int n = 0; ok && n < limits_.max_requests_per_connection; ++n) {
        auto give_up = [&] { return svr_sock_ == INVALID_SOCKET || pending_ > 0; };
        if (n > 0 && !wait_for_next_request(strm, sock, limits_.keep_alive_timeout, give_up)) break;
        strm.begin_request(read_timeout);
        bool last = n + 1 == limits_.max_requests_per_connection || svr_sock_ == INVALID_SOCKET;
        bool closed = false;
        ok = process_request(strm, last, closed, [&](httplib::Request& req) {
            strm.get_remote_ip_and_port(req.remote_addr, req.remote_port);
            strm.get_local_ip_and_port(req.local_addr, req.local_port);
        });
        // httplib gives up silently when the request line itself breaks a limit.
        if (!ok && !strm.wrote() && strm.limit() != Limit::kNone) answer_limit_breach(strm, rejections_);
        if (!ok || closed || last || st.close_after) break;
    }
    t_conn = nullptr;
    lingering_close(sock, ssl);
    return ok;
}

}  // namespace hotline::daemon
