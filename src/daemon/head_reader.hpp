// SPDX-License-Identifier: Apache-2.0
// The one thread that reads every connection's requests before a worker sees them.
#pragma once

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "connection.hpp"
#include "http_server.hpp"  // HttpRejections
#include "serve_config.hpp"  // HttpLimits

namespace hotline::daemon {

// Whether `ahead` holds a whole request: the head up to its blank line, plus the
// body its Content-Length announces, or a chunked body up to its last chunk.
// Anything this misjudges is still bounded by the worker's read deadline.
inline bool request_complete(const std::string& ahead, std::size_t max_bytes) {
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

}  // namespace hotline::daemon
