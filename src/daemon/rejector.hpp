// SPDX-License-Identifier: Apache-2.0
// The path for connections the server will not serve: 503 beyond the limits,
// and the lingering close of every connection, on one thread of its own.
#pragma once

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "connection.hpp"
#include "http_server.hpp"  // HttpRejections

namespace hotline::daemon {

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

}  // namespace hotline::daemon
