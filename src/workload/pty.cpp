// SPDX-License-Identifier: Apache-2.0
// A paced pty writer: each byte written queues the pty's flush work item, so
// workqueue_queue_work fires at a steady rate, from one CPU for a stretch of
// writes and then from the next (the work item mostly stays, sometimes moves).
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <pty.h>
#include <sched.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fmt/format.h>

#include "hotline/workload/workload.hpp"

namespace hotline {

Result<std::unique_ptr<PtyWorkload>> PtyWorkload::start(const PtyOptions& opts) {
    if (opts.cpus.empty()) return make_error("pty workload: no CPUs given", EINVAL);
    if (opts.writes_per_cpu < 1) return make_error("pty workload: writes per CPU must be 1 or more", EINVAL);
    auto wl = std::unique_ptr<PtyWorkload>(new PtyWorkload());
    termios raw{};
    cfmakeraw(&raw);
    if (openpty(&wl->master_, &wl->slave_, nullptr, &raw, nullptr))
        return make_error("pty workload: openpty", errno);
    for (int fd : {wl->master_, wl->slave_}) fcntl(fd, F_SETFD, FD_CLOEXEC);
    PtyWorkload* w = wl.get();
    wl->thread_ = std::thread([w, opts] { w->run(opts); });
    return wl;
}

void PtyWorkload::run(const PtyOptions opts) {
    auto fail = [&](const std::string& what, int err) {
        std::lock_guard<std::mutex> g(mu_);
        if (err_.empty()) err_ = fmt::format("pty workload: {}: {}", what, std::strerror(err));
    };
    std::size_t next = 0;
    int left = 0;
    const auto pause = std::chrono::duration<double, std::micro>(opts.pause_us);
    while (!stop_.load(std::memory_order_relaxed)) {
        if (left == 0) {
            cpu_set_t set;
            CPU_ZERO(&set);
            CPU_SET(opts.cpus[next++ % opts.cpus.size()], &set);
            if (int e = pthread_setaffinity_np(pthread_self(), sizeof set, &set)) return fail("set CPU", e);
            left = opts.writes_per_cpu;
        }
        char c = 'x';
        if (write(master_, &c, 1) != 1) return fail("write", errno);
        // The byte comes out of the other side once the flush work has run.
        pollfd p{slave_, POLLIN, 0};
        int n;
        do n = poll(&p, 1, 1000);
        while (n < 0 && errno == EINTR);
        if (n < 0) return fail("poll", errno);
        if (n == 0) return fail("no byte back within 1 s", ETIMEDOUT);
        if (read(slave_, &c, 1) != 1) return fail("read", errno);
        writes_.fetch_add(1, std::memory_order_relaxed);
        --left;
        if (opts.pause_us > 0) std::this_thread::sleep_for(pause);
    }
}

void PtyWorkload::stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
}

PtyWorkload::~PtyWorkload() {
    stop();
    if (master_ >= 0) close(master_);
    if (slave_ >= 0) close(slave_);
}

std::uint64_t PtyWorkload::writes() const { return writes_.load(); }

std::string PtyWorkload::error() const {
    std::lock_guard<std::mutex> g(mu_);
    return err_;
}

}  // namespace hotline
