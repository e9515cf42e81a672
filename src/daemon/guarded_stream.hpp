// SPDX-License-Identifier: Apache-2.0
// One connection's byte stream for httplib: plain or TLS, nonblocking, with a
// byte budget and deadlines per request.
#pragma once

#include <httplib.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>

#include "connection.hpp"
#include "serve_config.hpp"  // HttpLimits

namespace hotline::daemon {

// Which limit ended a request, if one did.
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

}  // namespace hotline::daemon
