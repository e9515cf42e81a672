// SPDX-License-Identifier: Apache-2.0
// Loopback TCP connection churn, one pinned thread per CPU: the workload behind
// the 2023 dst false-sharing fix, and the default job of `hotline record`.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <mutex>

#include "hotline/workload/workload.hpp"

namespace hotline {

struct ChurnWorkload::Worker {
    int cpu = 0;
    int listen_fd = -1;
    sockaddr_in addr{};
    std::atomic<std::uint64_t> conns{0};
    std::mutex mu;
    std::string err;
    ~Worker() {
        if (listen_fd >= 0) close(listen_fd);
    }
};

namespace {

void run_worker(ChurnWorkload::Worker* w, const ChurnOptions opts, std::atomic<bool>* stop);
void run_server(ChurnWorkload::Worker* w, int cpu, const ChurnOptions opts, std::atomic<bool>* stop);

}  // namespace

Result<std::unique_ptr<ChurnWorkload>> ChurnWorkload::start(const ChurnOptions& opts) {
    if (opts.cpus.empty()) return make_error("churn workload: no CPUs given", EINVAL);
    if (opts.msg_size <= 0 || opts.msg_size > 65536)
        return make_error("churn workload: message size must be 1..65536", EINVAL);
    auto wl = std::unique_ptr<ChurnWorkload>(new ChurnWorkload());
    for (int cpu : opts.cpus) {
        auto w = std::make_unique<Worker>();
        w->cpu = cpu;
        w->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (w->listen_fd < 0) return make_error("churn workload: socket", errno);
        w->addr.sin_family = AF_INET;
        w->addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof w->addr;
        if (bind(w->listen_fd, reinterpret_cast<sockaddr*>(&w->addr), sizeof w->addr) ||
            listen(w->listen_fd, 64) ||
            getsockname(w->listen_fd, reinterpret_cast<sockaddr*>(&w->addr), &len))
            return make_error("churn workload: listen on 127.0.0.1", errno);
        wl->workers_.push_back(std::move(w));
    }
    for (std::size_t i = 0; i < wl->workers_.size(); ++i) {
        auto* w = wl->workers_[i].get();
        if (opts.split)
            wl->threads_.emplace_back(run_server, w, opts.cpus[(i + 1) % opts.cpus.size()], opts, &wl->stop_);
        wl->threads_.emplace_back(run_worker, w, opts, &wl->stop_);
    }
    return wl;
}

ChurnWorkload::~ChurnWorkload() { stop(); }

void ChurnWorkload::stop() {
    stop_ = true;
    for (auto& t : threads_)
        if (t.joinable()) t.join();
}

std::uint64_t ChurnWorkload::connections() const {
    std::uint64_t n = 0;
    for (auto& w : workers_) n += w->conns.load(std::memory_order_relaxed);
    return n;
}

std::string ChurnWorkload::error() const {
    for (auto& w : workers_) {
        std::lock_guard<std::mutex> g(w->mu);
        if (!w->err.empty()) return w->err;
    }
    return {};
}

namespace {

bool pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

// split mode: accepts on its own CPU, reads each connection to EOF, closes,
// which is the client's cue for its next connection (run_worker).
void run_server(ChurnWorkload::Worker* w, int cpu, const ChurnOptions opts, std::atomic<bool>* stop) {
    if (!pin(cpu)) return;
    std::vector<char> buf(std::size_t(opts.msg_size) * 4);
    while (!stop->load(std::memory_order_relaxed)) {
        pollfd p{w->listen_fd, POLLIN, 0};
        if (poll(&p, 1, 100) <= 0) continue;
        int s = accept4(w->listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
        if (s < 0) continue;
        while (read(s, buf.data(), buf.size()) > 0) {
        }
        close(s);
    }
}

// Reads until the peer closes; gives up once `stop` is set, because a server
// that has stopped leaves the last connection unaccepted.
void await_close(int fd, std::vector<char>& buf, const std::atomic<bool>& stop) {
    for (;;) {
        pollfd p{fd, POLLIN, 0};
        int r = poll(&p, 1, 100);
        if (r < 0 && errno != EINTR) return;
        if (r <= 0) {
            if (stop.load(std::memory_order_relaxed)) return;
            continue;
        }
        if (read(fd, buf.data(), buf.size()) <= 0) return;
    }
}

void run_worker(ChurnWorkload::Worker* w, const ChurnOptions opts, std::atomic<bool>* stop) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(w->cpu, &set);
    auto fail = [&](const char* what) {
        std::lock_guard<std::mutex> g(w->mu);
        if (w->err.empty()) w->err = fmt::format("churn on CPU {}: {}: {}", w->cpu, what, std::strerror(errno));
    };
    if (pthread_setaffinity_np(pthread_self(), sizeof set, &set)) {
        fail("pin");
        return;
    }
    std::vector<char> buf(std::size_t(opts.msg_size), 'x');
    while (!stop->load(std::memory_order_relaxed)) {
        int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (c < 0) {
            fail("socket");
            return;
        }
        int one = 1;
        setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (connect(c, reinterpret_cast<sockaddr*>(&w->addr), sizeof w->addr)) {
            fail("connect");
            close(c);
            return;
        }
        if (opts.split) {
            for (int i = 0; i < opts.writes_per_conn; ++i)
                if (write(c, buf.data(), buf.size()) < 0) break;
            // Wait for the server's close before the next connect: without it the
            // client runs up to a listen backlog ahead, and the routes change CPU
            // once per scheduling batch instead of once per connection (a batch
            // is a whole time slice of a single-threaded TCG guest).
            shutdown(c, SHUT_WR);
            await_close(c, buf, *stop);
            close(c);
            w->conns.fetch_add(1, std::memory_order_relaxed);
            continue;
        }
        int s = accept4(w->listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
        if (s < 0) {
            fail("accept");
            close(c);
            return;
        }
        for (int i = 0; i < opts.writes_per_conn; ++i) {
            if (write(c, buf.data(), buf.size()) < 0) break;
            std::size_t got = 0;
            while (got < buf.size()) {
                ssize_t n = read(s, buf.data(), buf.size() - got);
                if (n <= 0) break;
                got += std::size_t(n);
            }
        }
        close(c);
        close(s);
        w->conns.fetch_add(1, std::memory_order_relaxed);
    }
}

}  // namespace

}  // namespace hotline
