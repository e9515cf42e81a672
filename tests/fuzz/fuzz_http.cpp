// SPDX-License-Identifier: Apache-2.0
// The HTTP request stream as a client sends it: the input goes into one end of a
// socket pair whose other end the daemon's server takes as an accepted connection
// (request reader, workers, routing, limits, lingering close).  Whatever arrives,
// the server must answer with HTTP/1.1 and a status it documents, or nothing, and
// must close the connection itself within its deadlines.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>

#include "http_server.hpp"

using namespace hotline;
using namespace hotline::daemon;

namespace {

GuardedServer& server() {
    static HttpRejections rejections;
    static HttpLimits limits = [] {
        HttpLimits l;
        l.read_timeout = 1;
        l.write_timeout = 1;
        l.keep_alive_timeout = 0.2;
        return l;
    }();
    static GuardedServer* svr = [] {
        auto* s = new GuardedServer(limits, rejections, nullptr);
        s->Get("/metrics", [](const httplib::Request&, httplib::Response& res) {
            res.set_content("hotline_up 1\n", "text/plain; version=0.0.4");
        });
        s->Get("/healthz", [](const httplib::Request&, httplib::Response& res) { res.set_content("ok\n", "text/plain"); });
        return s;
    }();
    return *svr;
}

void send_all(int fd, const std::uint8_t* data, std::size_t size) {
    std::size_t off = 0;
    while (off < size) {
        pollfd p{fd, POLLOUT, 0};
        int r = poll(&p, 1, 5000);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return;  // the server stopped reading (it answered and closed)
        ssize_t n = send(fd, data + off, size - off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && errno != EAGAIN && errno != EINTR) return;
        if (n > 0) off += std::size_t(n);
    }
}

// Everything the server sends until it closes; traps if it does not close in time.
std::string read_until_closed(int fd) {
    std::string out;
    char buf[8192];
    while (true) {
        pollfd p{fd, POLLIN, 0};
        int r = poll(&p, 1, 10000);  // libFuzzer's -timeout alarm interrupts it: retry
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) __builtin_trap();  // the server left the connection open
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n <= 0) return out;
        out.append(buf, std::size_t(n));
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const std::set<int> kDocumented = {200, 400, 401, 404, 405, 408, 413, 414, 431, 503};
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) std::abort();
    server().serve_socket(sv[1]);
    send_all(sv[0], data, size);
    shutdown(sv[0], SHUT_WR);
    std::string resp = read_until_closed(sv[0]);
    close(sv[0]);
    if (!resp.empty() && resp.compare(0, 9, "HTTP/1.1 ") != 0) __builtin_trap();
    for (std::size_t at = resp.find("HTTP/1.1 "); at != std::string::npos; at = resp.find("HTTP/1.1 ", at + 9))
        if (!kDocumented.count(std::atoi(resp.c_str() + at + 9))) __builtin_trap();
    return 0;
}
