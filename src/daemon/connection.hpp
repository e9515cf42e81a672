// SPDX-License-Identifier: Apache-2.0
// What the server's connection loops share: a connection between requests,
// deadlines as poll timeouts, and the pipe that wakes a poll loop.
#pragma once

#include <fcntl.h>
#include <openssl/ssl.h>
#include <unistd.h>

#include <string>

#include "hotline/base/util.hpp"  // monotonic_seconds

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

// Milliseconds until `deadline` (monotonic seconds) as a poll timeout, rounded up.
inline int remaining_ms(double deadline) {
    double left = deadline - monotonic_seconds();
    return left <= 0 ? 0 : int(left * 1000) + 1;
}

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

}  // namespace hotline::daemon
