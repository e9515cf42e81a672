// SPDX-License-Identifier: Apache-2.0
// Workloads hotline drives itself: a pinned loopback TCP connection churn, and
// an external command run while recording.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "hotline/base/result.hpp"

namespace hotline {

struct ChurnOptions {
    std::vector<int> cpus;    // one pinned thread per CPU
    int writes_per_conn = 4;  // small writes per connection
    int msg_size = 64;
    // Serve each connection on the next CPU of the list instead of the client's own,
    // so both ends of every connection (and the route they share) live on two CPUs.
    bool split = false;
};

// connect, a few small writes, close, in a loop on each CPU (loopback, 127.0.0.1).
class ChurnWorkload {
public:
    static Result<std::unique_ptr<ChurnWorkload>> start(const ChurnOptions& opts);
    ~ChurnWorkload();
    ChurnWorkload(const ChurnWorkload&) = delete;
    ChurnWorkload& operator=(const ChurnWorkload&) = delete;
    void stop();
    std::uint64_t connections() const;
    std::string error() const;  // first worker error, empty if none

    struct Worker;

private:
    ChurnWorkload() = default;
    std::vector<std::unique_ptr<Worker>> workers_;
    std::vector<std::thread> threads_;
    std::atomic<bool> stop_{false};
};

struct PtyOptions {
    std::vector<int> cpus;     // the writer moves through these
    int writes_per_cpu = 64;   // writes from one CPU before moving to the next
    double pause_us = 200;     // between writes: a steady rate, not a flood (docs/overhead.md)
};

// One byte at a time into a pty and back out of the other side, paced: every
// write queues the pty's flush work item (workqueue_queue_work), which stays on
// a CPU for writes_per_cpu writes and then moves to the next.
class PtyWorkload {
public:
    static Result<std::unique_ptr<PtyWorkload>> start(const PtyOptions& opts);
    ~PtyWorkload();
    PtyWorkload(const PtyWorkload&) = delete;
    PtyWorkload& operator=(const PtyWorkload&) = delete;
    void stop();
    std::uint64_t writes() const;
    std::string error() const;  // first failure, empty if none

private:
    PtyWorkload() = default;
    void run(const PtyOptions opts);
    int master_ = -1, slave_ = -1;
    std::thread thread_;
    std::atomic<bool> stop_{false};
    std::atomic<std::uint64_t> writes_{0};
    mutable std::mutex mu_;
    std::string err_;
};

// Where and how a child runs.  Everything is applied between fork and exec, so
// the parent's threads, namespaces and affinity stay untouched.
struct SpawnOptions {
    int netns_fd = -1;                // setns(CLONE_NEWNET) into this namespace first
    std::vector<int> cpus;            // sched_setaffinity; empty: inherit
    std::vector<int> mem_nodes;       // set_mempolicy(MPOL_BIND) to these nodes; empty: inherit
    std::vector<std::string> env;     // "KEY=VALUE" added to (or replacing in) the environment
    bool die_with_parent = false;     // PR_SET_PDEATHSIG(SIGKILL): a SIGKILLed owner leaves no child
    int stdout_fd = -1;               // dup2'ed onto stdout (and stderr when stderr_fd is -1)
    int stderr_fd = -1;
    bool own_process_group = false;   // setpgid(0,0): signal() then reaches the child's children too
};

// A child process running a user command.
class ChildProcess {
public:
    static Result<ChildProcess> spawn(const std::vector<std::string>& argv);
    static Result<ChildProcess> spawn(const std::vector<std::string>& argv, const SpawnOptions& opts);
    ChildProcess(ChildProcess&& o) noexcept : pid_(o.pid_), group_(o.group_) { o.pid_ = -1; }
    ChildProcess& operator=(ChildProcess&&) = delete;
    ~ChildProcess();
    pid_t pid() const { return pid_; }
    // Non-blocking: true once the child has exited; *status then holds the exit
    // code (128 + signal when killed by a signal).
    bool poll(int* status);
    int wait();
    void signal(int sig);

private:
    explicit ChildProcess(pid_t p, bool group = false) : pid_(p), group_(group) {}
    pid_t pid_ = -1;
    bool group_ = false;
};

}  // namespace hotline
