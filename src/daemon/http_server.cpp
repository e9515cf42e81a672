// Connection handling under hard limits: one thread reads requests (TLS handshake
// included) for every connection, a bounded worker pool serves complete ones and
// answers 503 when full, a byte budget and deadline per request, nonblocking I/O
// with MSG_NOSIGNAL, TLS via OpenSSL, and a lingering close so refusals are read.
#include "hotline/base/util.hpp"
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

// A connection between requests, passed between the HeadReader and a worker;
// whoever holds it closes it.
struct Connection {
    int fd = -1;
    SSL* ssl = nullptr;      // handshake done once a worker gets it
    std::string ahead;       // bytes read and not yet served
    double deadline = 0;     // the request in `ahead` must be complete by then
    int served = 0;          // requests answered on it
};

namespace {

int remaining_ms(double deadline) {
    double left = deadline - monotonic_seconds();
    return left <= 0 ? 0 : int(left * 1000) + 1;
}

enum class Limit { kNone, kTooLarge, kTimeout };

// One connection's byte stream, plain or TLS, with per-request budget and deadlines.
// It starts with the bytes the HeadReader read ahead, and gives back what it read
// beyond the request (a pipelined next one).  Once the server stops it never waits.
class GuardedStream final : public httplib::Stream {
public:
    GuardedStream(int fd, SSL* ssl, const HttpLimits& l, const std::atomic<bool>& stopping)
        : fd_(fd), ssl_(ssl), limits_(l), stopping_(stopping) {}

    void begin_request(std::string ahead, double read_deadline) {
        buf_ = std::move(ahead);
        pos_ = used_ = 0;
        limit_ = Limit::kNone;
        read_deadline_ = read_deadline;
        write_deadline_ = 0;
        wrote_ = false;
    }
    std::string take_ahead() { return buf_.substr(pos_); }
    Limit limit() const { return limit_; }
    bool wrote() const { return wrote_; }

    bool is_readable() const override {
        if (pos_ < buf_.size() || (ssl_ && SSL_pending(ssl_) > 0)) return true;
        pollfd p{fd_, POLLIN, 0};
        return poll(&p, 1, remaining_ms(read_deadline_)) > 0;
    }
    bool is_writable() const override {
        pollfd p{fd_, POLLOUT, 0};
        return poll(&p, 1, int(limits_.write_timeout * 1000)) > 0 && !(p.revents & (POLLERR | POLLHUP));
    }

    ssize_t read(char* ptr, size_t size) override {
        if (limit_ != Limit::kNone) return -1;
        if (pos_ == buf_.size()) {
            ssize_t n = fill();
            if (n <= 0) return n;
        }
        std::size_t take = std::min(size, buf_.size() - pos_);
        if (used_ + take > limits_.max_request_bytes) {
            limit_ = Limit::kTooLarge;
            return -1;
        }
        std::memcpy(ptr, buf_.data() + pos_, take);
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
            // Stopping: a response the client does not take at once is dropped.
            pollfd p{fd_, short(want), 0};
            if (stopping_ || poll(&p, 1, remaining_ms(write_deadline_)) <= 0) return -1;
        }
        return ssize_t(size);
    }

    void get_remote_ip_and_port(std::string& ip, int& port) const override { addr(true, ip, port); }
    void get_local_ip_and_port(std::string& ip, int& port) const override { addr(false, ip, port); }
    socket_t socket() const override { return fd_; }

private:
    // Reached only when the request was not complete in the read-ahead (its
    // deadline passed, the peer half-closed, or it is over the size cap).
    ssize_t fill() {
        pos_ = 0;
        buf_.resize(4096);
        ssize_t n = fill_raw();
        buf_.resize(n > 0 ? std::size_t(n) : 0);
        return n;
    }

    ssize_t fill_raw() {
        while (true) {
            ssize_t n;
            int want = POLLIN;
            if (ssl_) {
                ERR_clear_error();
                int r = SSL_read(ssl_, buf_.data(), int(buf_.size()));
                if (r > 0) return r;
                int e = SSL_get_error(ssl_, r);
                if (e == SSL_ERROR_ZERO_RETURN) return 0;
                if (e == SSL_ERROR_WANT_WRITE) want = POLLOUT;
                else if (e != SSL_ERROR_WANT_READ) return -1;
                n = -1;
            } else {
                n = ::recv(fd_, buf_.data(), buf_.size(), 0);
                if (n >= 0) return n;
                if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return -1;
            }
            if (stopping_) return -1;
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
    const std::atomic<bool>& stopping_;
    std::string buf_;
    std::size_t pos_ = 0, used_ = 0;
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

}  // namespace

// Fixed workers and a bounded queue of complete requests.  A job that waited past
// kQueueDeadlineSeconds, or is still queued when the pool stops, runs with
// `late` set: it answers 503 at once (no worker time for slow peers ahead of it,
// no wait at SIGTERM).
class BoundedPool {
public:
    using Job = std::function<void(bool late)>;
    BoundedPool(int workers, int queued) : queued_(std::size_t(queued)) {
        for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { work(); });
    }
    ~BoundedPool() { shutdown(); }

    // Never blocks; false when every worker is busy and the queue is full.
    bool try_enqueue(Job fn) {
        std::lock_guard<std::mutex> lk(mu_);
        if (stop_ || jobs_.size() >= idle_ + queued_) return false;
        jobs_.push_back({std::move(fn), monotonic_seconds()});
        cv_.notify_one();
        return true;
    }

    void shutdown() {
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
    void work() {
        while (true) {
            Queued job;
            bool late = false;
            {
                std::unique_lock<std::mutex> lk(mu_);
                ++idle_;
                cv_.wait(lk, [&] { return stop_ || !jobs_.empty(); });
                --idle_;
                if (jobs_.empty()) return;  // stopping and drained
                job = std::move(jobs_.front());
                jobs_.pop_front();
                late = stop_ || monotonic_seconds() - job.queued_at > kQueueDeadlineSeconds;
            }
            job.fn(late);
        }
    }

    static constexpr double kQueueDeadlineSeconds = 1.0;
    struct Queued {
        Job fn;
        double queued_at = 0;
    };

    std::size_t queued_;
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<Queued> jobs_;
    std::vector<std::thread> threads_;
    std::size_t idle_ = 0;
    bool stop_ = false;
};

namespace {

// httplib's accept loop hands each socket to its task queue: this one runs the
// hand-off inline (it only queues the socket for the HeadReader, never blocks) and
// tells the server when the loop has ended, so shutdown starts at once.
class InlineQueue final : public httplib::TaskQueue {
public:
    explicit InlineQueue(std::function<void()> on_shutdown) : on_shutdown_(std::move(on_shutdown)) {}
    void enqueue(std::function<void()> fn) override { fn(); }
    void shutdown() override { on_shutdown_(); }

private:
    std::function<void()> on_shutdown_;
};

// A self-pipe that wakes a poll loop.
struct Waker {
    int fds[2] = {-1, -1};
    Waker() {
        if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) fds[0] = fds[1] = -1;
    }
    ~Waker() {
        if (fds[0] >= 0) ::close(fds[0]);
        if (fds[1] >= 0) ::close(fds[1]);
    }
    bool ok() const { return fds[0] >= 0; }
    void poke() const {
        char b = 1;
        if (fds[1] >= 0) [[maybe_unused]] auto r = ::write(fds[1], &b, 1);
    }
    void drain() const {
        char sink[64];
        while (::read(fds[0], sink, sizeof sink) > 0) {
        }
    }
};

}  // namespace

// One thread multiplexing refused connections: over TLS finish the handshake
// first (nonblocking, with its own deadline), then read the request head (bounded
// bytes and time), answer 503 with Retry-After, half-close, drain, close.  A
// connection whose request was already read starts at the answer; one that was
// answered by a worker comes here only for the lingering close.  It holds
// at most kMaxPlain connections, or kMaxTls when serving TLS (each of those holds an
// SSL session and costs this thread a handshake); beyond that a connection is
// closed unanswered.  Every state has a deadline, so a silent or slow client holds
// a slot for a few seconds at most.
class Rejector {
public:
    Rejector(HttpRejections& rej, std::size_t max_bytes, SSL_CTX* tls)
        : rej_(rej), max_bytes_(max_bytes), tls_(tls), cap_(tls ? kMaxTls : kMaxPlain) {
        thread_ = std::thread([this] { loop(); });
    }
    ~Rejector() {
        stop_ = true;
        wake_.poke();
        thread_.join();
        for (auto& c : conns_) finish(c);
        for (auto& c : incoming_) finish(c);
    }

    // These never block and never do TLS work.  A fresh connection: 503.
    void take(int fd) {
        ++rej_.busy;
        enqueue(make_conn(fd, nullptr, tls_ ? State::kHandshake : State::kReading));
    }
    // A connection (TLS already set up) whose request was read: 503.
    void answer_busy(int fd, SSL* ssl) {
        ++rej_.busy;
        enqueue(make_conn(fd, ssl, State::kWriting));
    }
    // An answered connection: close_notify, half-close, drain, close.
    void linger(int fd, SSL* ssl) {
        if (ssl) {
            SSL_shutdown(ssl);  // its answer is not awaited
            SSL_free(ssl);
        }
        ::shutdown(fd, SHUT_WR);
        enqueue(make_conn(fd, nullptr, State::kDraining));
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

    static Conn make_conn(int fd, SSL* ssl, State state) {
        Conn c;
        c.fd = fd;
        c.ssl = ssl;
        c.state = state;
        return c;
    }

    void enqueue(Conn c) {
        {
            std::lock_guard<std::mutex> lk(mu_);
            if (count_ < cap_ && wake_.ok()) {
                ++count_;
                incoming_.push_back(c);
                wake_.poke();
                return;
            }
        }
        finish(c);
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

    void admit(Conn c, double now) {
        c.want = c.state == State::kWriting ? POLLOUT : POLLIN;
        c.deadline = now + (c.state == State::kWriting  ? kWriteSeconds
                            : c.state == State::kDraining ? kDrainSeconds
                                                          : kReadSeconds);
        if (c.state != State::kHandshake) {
            conns_.push_back(std::move(c));
            return;
        }
        SSL* ssl = SSL_new(tls_);
        if (!ssl || SSL_set_fd(ssl, c.fd) != 1) {
            if (ssl) SSL_free(ssl);
            ::close(c.fd);
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
        std::vector<Conn> fresh;
        while (!stop_) {
            {
                std::lock_guard<std::mutex> lk(mu_);
                fresh.swap(incoming_);
            }
            for (auto& c : fresh) admit(c, monotonic_seconds());
            fresh.clear();
            pfds.assign(1, pollfd{wake_.fds[0], POLLIN, 0});
            double next = monotonic_seconds() + 1.0;
            for (auto& c : conns_) {
                pfds.push_back({c.fd, c.want, 0});
                next = std::min(next, c.deadline);
            }
            poll(pfds.data(), pfds.size(), remaining_ms(next));
            if (pfds[0].revents & POLLIN) wake_.drain();
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
    Waker wake_;
    std::thread thread_;
    std::atomic<bool> stop_{false};
    std::mutex mu_;
    std::vector<Conn> incoming_;
    std::size_t count_ = 0;  // incoming_ + conns_
    std::vector<Conn> conns_;
};

namespace {

// Whether `ahead` holds a whole request: the head up to its blank line, plus the
// body its Content-Length announces, or a chunked body up to its last chunk.
// Anything this misjudges is still bounded by the worker's read deadline.
bool request_complete(const std::string& ahead, std::size_t max_bytes) {
    std::size_t end = ahead.find("\r\n\r\n");
    if (end == std::string::npos) return false;
    std::string head = ahead.substr(0, end + 2);
    std::transform(head.begin(), head.end(), head.begin(), [](unsigned char ch) { return char(std::tolower(ch)); });
    std::size_t body = ahead.size() - (end + 4);
    if (head.find("\r\ntransfer-encoding:") != std::string::npos)
        return ahead.size() >= end + 9 && ahead.compare(ahead.size() - 5, 5, "0\r\n\r\n") == 0;
    std::size_t at = head.find("\r\ncontent-length:");
    if (at == std::string::npos) return true;
    char* stop = nullptr;
    unsigned long long length = std::strtoull(head.c_str() + at + 17, &stop, 10);
    // An unreadable or oversized length is the worker's to refuse.
    return stop == head.c_str() + at + 17 || length > max_bytes || body >= length;
}

}  // namespace

// Reads requests for every connection on one thread with nonblocking I/O (the
// TLS handshake included), so a worker only gets a connection whose request is
// complete or already decided: over the size cap, past its deadline (408), or cut
// short by the peer (400).  Slow or silent clients therefore hold a slot here,
// not a worker.  At most max_connections connections (new, being read, or idle
// between keep-alive requests); stop() closes them all at once.
class HeadReader {
public:
    using Ready = std::function<void(Connection&&)>;

    HeadReader(const HttpLimits& limits, SSL_CTX* tls, HttpRejections& rej, Ready ready)
        : limits_(limits), tls_(tls), rej_(rej), ready_(std::move(ready)) {
        thread_ = std::thread([this] { loop(); });
    }
    ~HeadReader() { stop(); }

    // False when full or stopped: the caller keeps the socket.
    bool admit_new(int fd) {
        Connection c;
        c.fd = fd;
        c.deadline = monotonic_seconds() + limits_.read_timeout;
        return enqueue({std::move(c), tls_ ? Phase::kHandshake : Phase::kReading}, true);
    }
    // A connection between keep-alive requests; false when full or stopped (the
    // caller keeps it).
    bool admit_idle(Connection& c) {
        bool idle = c.ahead.empty();
        c.deadline = monotonic_seconds() + (idle ? limits_.keep_alive_timeout : limits_.read_timeout);
        return enqueue({std::move(c), idle ? Phase::kIdle : Phase::kReading}, false);
    }

    void stop() {
        {
            std::lock_guard<std::mutex> lk(mu_);
            if (stop_) return;
            stop_ = true;
        }
        wake_.poke();
        thread_.join();
        for (auto& e : entries_) close_entry(e);
        for (auto& e : incoming_) close_entry(e);
    }

private:
    enum class Phase { kHandshake, kIdle, kReading };
    struct Entry {
        Connection c;
        Phase phase = Phase::kReading;
        short want = POLLIN;
        bool kick = true;  // step before waiting: TLS may hold decrypted bytes poll cannot see
    };
    enum class Verdict { kWait, kReady, kClose };
    enum : ssize_t { kWouldBlock = -1, kFailed = -2 };

    bool enqueue(Entry e, bool fresh) {
        std::lock_guard<std::mutex> lk(mu_);
        if (stop_ || count_ >= std::size_t(limits_.max_connections) || !wake_.ok()) return false;
        if (fresh && tls_ && !attach_tls(e.c)) return true;  // closed
        ++count_;
        incoming_.push_back(std::move(e));
        wake_.poke();
        return true;
    }

    bool attach_tls(Connection& c) {
        SSL* ssl = SSL_new(tls_);
        if (!ssl || SSL_set_fd(ssl, c.fd) != 1) {
            if (ssl) SSL_free(ssl);
            ::close(c.fd);
            return false;
        }
        c.ssl = ssl;
        return true;
    }

    static void close_entry(Entry& e) {
        if (e.c.ssl) SSL_free(e.c.ssl);
        if (e.c.fd >= 0) ::close(e.c.fd);
        e.c.ssl = nullptr;
        e.c.fd = -1;
    }

    ssize_t read_some(Entry& e, char* buf, std::size_t len) {
        if (e.c.ssl) {
            ERR_clear_error();
            int r = SSL_read(e.c.ssl, buf, int(len));
            if (r > 0) return r;
            switch (SSL_get_error(e.c.ssl, r)) {
                case SSL_ERROR_ZERO_RETURN: return 0;
                case SSL_ERROR_WANT_READ: e.want = POLLIN; return kWouldBlock;
                case SSL_ERROR_WANT_WRITE: e.want = POLLOUT; return kWouldBlock;
                default: return kFailed;
            }
        }
        e.want = POLLIN;
        ssize_t n = ::recv(e.c.fd, buf, len, 0);
        if (n >= 0) return n;
        return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? kWouldBlock : kFailed;
    }

    Verdict handshake(Entry& e, double now) {
        ERR_clear_error();
        int r = SSL_accept(e.c.ssl);
        if (r == 1) {
            e.phase = Phase::kReading;
            return Verdict::kReady;  // go on reading
        }
        int err = SSL_get_error(e.c.ssl, r);
        if ((err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) && now < e.c.deadline) {
            e.want = err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
            return Verdict::kWait;
        }
        ++rej_.tls_handshake;
        return Verdict::kClose;
    }

    // Reads what is there (up to just past the size cap) and judges the request.
    Verdict read_request(Entry& e, double now) {
        char buf[4096];
        std::string& ahead = e.c.ahead;
        while (ahead.size() <= limits_.max_request_bytes) {
            ssize_t n = read_some(e, buf, sizeof buf);
            if (n == kFailed) return Verdict::kClose;
            if (n == 0) return ahead.empty() ? Verdict::kClose : Verdict::kReady;
            if (n == kWouldBlock) break;
            if (e.phase == Phase::kIdle) {
                e.phase = Phase::kReading;
                e.c.deadline = now + limits_.read_timeout;
            }
            ahead.append(buf, std::size_t(n));
        }
        if (ahead.size() > limits_.max_request_bytes || request_complete(ahead, limits_.max_request_bytes))
            return Verdict::kReady;
        if (now < e.c.deadline) return Verdict::kWait;
        return e.phase == Phase::kIdle ? Verdict::kClose : Verdict::kReady;  // late: the worker answers 408
    }

    Verdict advance(Entry& e, double now) {
        if (e.phase == Phase::kHandshake) {
            Verdict v = handshake(e, now);
            if (v != Verdict::kReady) return v;
        }
        return read_request(e, now);
    }

    // Steps the entries that are due; hands over or closes those that are done.
    void sweep(const std::vector<pollfd>& pfds, double now) {
        std::size_t done = 0;
        for (std::size_t i = 0; i < entries_.size(); ++i) {
            Entry& e = entries_[i];
            if (!e.kick && !pfds[i + 1].revents && now < e.c.deadline) continue;
            e.kick = false;
            Verdict v = advance(e, now);
            if (v == Verdict::kWait) continue;
            if (v == Verdict::kReady) {
                ready_(std::move(e.c));
                e.c.fd = -1;
                e.c.ssl = nullptr;
            } else {
                close_entry(e);
            }
            ++done;
        }
        if (!done) return;
        entries_.erase(std::remove_if(entries_.begin(), entries_.end(), [](auto& e) { return e.c.fd < 0; }),
                       entries_.end());
        std::lock_guard<std::mutex> lk(mu_);
        count_ -= done;
    }

    void loop() {
        std::vector<pollfd> pfds;
        while (true) {
            bool kicked = false;
            {
                std::lock_guard<std::mutex> lk(mu_);
                if (stop_) return;
                for (auto& e : incoming_) entries_.push_back(std::move(e));
                incoming_.clear();
            }
            pfds.assign(1, pollfd{wake_.fds[0], POLLIN, 0});
            double next = monotonic_seconds() + 1.0;
            for (auto& e : entries_) {
                pfds.push_back({e.c.fd, e.want, 0});
                next = std::min(next, e.c.deadline);
                kicked |= e.kick;
            }
            poll(pfds.data(), pfds.size(), kicked ? 0 : remaining_ms(next));
            if (pfds[0].revents & POLLIN) wake_.drain();
            sweep(pfds, monotonic_seconds());
        }
    }

    const HttpLimits& limits_;
    SSL_CTX* tls_;
    HttpRejections& rej_;
    Ready ready_;
    Waker wake_;
    std::thread thread_;
    std::mutex mu_;
    bool stop_ = false;
    std::vector<Entry> incoming_;
    std::size_t count_ = 0;  // incoming_ + entries_
    std::vector<Entry> entries_;
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
    : limits_(limits), rejections_(rejections),
      rejector_(std::make_unique<Rejector>(rejections, limits.max_request_bytes, tls)),
      pool_(std::make_unique<BoundedPool>(limits.workers, limits.queued)),
      reader_(std::make_unique<HeadReader>(limits_, tls, rejections,
                                           [this](Connection&& c) { hand_to_worker(std::move(c)); })) {
    new_task_queue = [this] { return new InlineQueue([this] { stop_serving(); }); };
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

GuardedServer::~GuardedServer() { stop_serving(); }

// Connections being read are closed, queued requests get 503, a response in
// flight is finished only if the client takes it at once.
void GuardedServer::stop_serving() {
    stopping_ = true;
    reader_->stop();
    pool_->shutdown();
}

void GuardedServer::raise_backlog(int backlog) {
    socket_t s = svr_sock_;
    if (s != INVALID_SOCKET) ::listen(s, backlog);
}

void GuardedServer::require_basic_auth(std::vector<AuthUser> users) { auth_users_ = std::move(users); }

// On httplib's accepting thread: queue the socket for the HeadReader, or refuse it.
bool GuardedServer::process_and_close_socket(socket_t sock) {
    int fl = fcntl(sock, F_GETFL);
    if (fl >= 0) fcntl(sock, F_SETFL, fl | O_NONBLOCK);
    if (!reader_->admit_new(sock)) rejector_->take(sock);
    return true;
}

// On the HeadReader's thread: never blocks.
void GuardedServer::hand_to_worker(Connection&& c) {
    auto held = std::make_shared<Connection>(std::move(c));
    bool queued = pool_->try_enqueue([this, held](bool late) {
        if (late) rejector_->answer_busy(held->fd, held->ssl);
        else serve_request(*held);
    });
    if (!queued) rejector_->answer_busy(held->fd, held->ssl);
}

// One request on a worker; then the connection goes back to the HeadReader to
// wait for the next one, or to the Rejector for a lingering close.
void GuardedServer::serve_request(Connection& c) {
    ConnState st;
    GuardedStream strm(c.fd, c.ssl, limits_, stopping_);
    st.stream = &strm;
    t_conn = &st;
    strm.begin_request(std::move(c.ahead), c.deadline);
    bool last = ++c.served >= limits_.max_requests_per_connection || stopping_;
    bool closed = false;
    bool ok = process_request(strm, last, closed, [&](httplib::Request& req) {
        strm.get_remote_ip_and_port(req.remote_addr, req.remote_port);
        strm.get_local_ip_and_port(req.local_addr, req.local_port);
    });
    // httplib gives up silently when the request line itself breaks a limit.
    if (!ok && !strm.wrote() && strm.limit() != Limit::kNone) answer_limit_breach(strm, rejections_);
    t_conn = nullptr;
    if (ok && !closed && !last && !st.close_after) {
        c.ahead = strm.take_ahead();
        if (reader_->admit_idle(c)) return;
    }
    rejector_->linger(c.fd, c.ssl);
}

}  // namespace hotline::daemon
