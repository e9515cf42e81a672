// SPDX-License-Identifier: Apache-2.0
// Internal: what every traffic generator (src/workload/gen_*.cpp) is given, and
// the toolkit they share: worker threads, CPU sampling, sockets with stop-aware
// timeouts, the measuring window.  Each generator runs in the scenario's
// coordinator thread until its duration ends or a stop is requested.
#pragma once

#include <netinet/in.h>
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "hotline/base/util.hpp"
#include "hotline/workload/netns.hpp"
#include "hotline/workload/scenario.hpp"
#include "hotline/workload/workload.hpp"

namespace hotline::detail {

struct GenEnv {
    const ScenarioOptions& opts;
    const Network& net;
    const std::atomic<bool>& stop;               // set by Scenario::stop()
    const ProgressFn& progress;                  // may be empty
    std::function<bool(double)> sleep_for;       // false when woken by a stop
    // Publishes the generator's running operation total (empty: withdraw it, with
    // its last value kept); the callable must stay valid until withdrawn.
    std::function<void(std::function<std::uint64_t()>)> publish_ops;
    pid_t server_pid = -1;              // the server the prepare step started, if any
    ChildProcess* command = nullptr;    // the command after --, if any
    int* command_status = nullptr;      // receives its exit status when the generator reaps it
};

// What a scenario's prepare step may change before any process starts.
struct PrepareEnv {
    const ScenarioOptions& opts;
    Network& net;
    // Starts a process in the server namespace for the life of the scenario;
    // its pid reaches the generator as GenEnv::server_pid.
    std::function<Result<pid_t>(const std::vector<std::string>& argv, std::vector<int> cpus)> start_server;
};

// Publishes a running total for the life of a generator's counters.
class LiveOps {
public:
    LiveOps(GenEnv& env, std::function<std::uint64_t()> total) : env_(env) {
        if (env_.publish_ops) env_.publish_ops(std::move(total));
    }
    ~LiveOps() {
        if (env_.publish_ops) env_.publish_ops({});
    }
    LiveOps(const LiveOps&) = delete;
    LiveOps& operator=(const LiveOps&) = delete;

private:
    GenEnv& env_;
};

// --- counters (the clocks are monotonic_seconds and monotonic_ns, hotline/base/util.hpp) ------------

inline constexpr int kIoTimeoutMs = 200;  // blocking calls wake this often to look at the stop flag

struct alignas(64) Counter {
    std::atomic<std::uint64_t> v{0};
    // Single writer: a plain load+store, no locked instruction on the hot path.
    void add(std::uint64_t n) { v.store(v.load(std::memory_order_relaxed) + n, std::memory_order_relaxed); }
    std::uint64_t get() const { return v.load(std::memory_order_relaxed); }
};

enum Side { kSender = 0, kReceiver = 1 };

// --- worker threads -----------------------------------------------------------------------

struct NetFaults {
    std::atomic<std::uint64_t> resets{0}, refusals{0}, timeouts{0};
};

// The worker threads of one generator, their readiness and their first error.
// Every worker pins itself, then enters its side's network namespace with setns
// (per thread), then runs its body, whose sockets stay in that namespace.
class Crew {
public:
    explicit Crew(const std::atomic<bool>& outer_stop) : outer_stop_(outer_stop) {}
    ~Crew() { join(); }

    void spawn(Side side, int cpu, const NetNs& ns, std::function<void()> body);
    // Workers run until the coordinator halts them, after its last CPU sample: a
    // stop request only wakes the coordinator (an exited thread's clock is unreadable).
    bool stopping() const { return stop_.load(std::memory_order_relaxed); }
    void halt() { stop_ = true; }
    void join();
    void fail(std::string msg);
    bool failed() const { return failed_.load(); }
    std::string error() const;
    // Waits until `count` reaches `want`; false on failure, stop or a 10 s timeout.
    bool wait_for(const std::atomic<int>& count, int want, const char* what);
    // Sleeps until the coordinator sets `go` (or a halt).
    void wait_go() const;
    std::vector<double> thread_cpu_seconds();
    const std::vector<Side>& sides() const { return sides_; }

    std::atomic<int> listening{0}, ready{0};
    std::atomic<bool> go{false};

    // Connection churn meets resets, refusals and timeouts on a loaded machine:
    // a generator that sets count_net_faults has the socket helpers count them
    // (reported as metrics) instead of failing the crew.
    std::atomic<bool> count_net_faults{false};
    NetFaults faults;
    // Counts errno `e` when counting is on and `e` is one of those; true if counted.
    bool count_fault(int e);

private:
    const std::atomic<bool>& outer_stop_;
    std::atomic<bool> stop_{false};
    std::vector<std::thread> threads_;
    std::vector<Side> sides_;
    mutable std::mutex mu_;
    std::string error_;
    std::atomic<bool> failed_{false};
};

// --- CPU accounting ----------------------------------------------------------------------

struct CpuSample {
    double wall = 0;
    std::vector<double> threads;
    std::map<int, CpuTicks> ticks;
};

CpuSample sample_cpu(Crew* crew, const std::string& proc_root);
// System share of the chosen CPUs between two /proc/stat readings.
void fill_proc_stat_use(const CpuSample& a, const CpuSample& b, const std::vector<int>& cpus, CpuUse& u);
// Thread CPU of each side and the system share of the chosen CPUs.
CpuUse cpu_between(const CpuSample& a, const CpuSample& b, const std::vector<Side>& sides, const std::vector<int>& cpus);
// CPU seconds (user+system, own and reaped children) of a process, from
// <proc>/<pid>/stat; nullopt when it is gone.
std::optional<double> process_cpu_seconds(const std::string& proc_root, pid_t pid);

// --- sockets -------------------------------------------------------------------------------

sockaddr_in make_addr(const std::string& ip, int port);
void set_timeouts(int fd);
void set_nodelay(int fd);
// Where a generator's server listens: its namespace's address and a port.
struct ServerPort {
    std::string addr;
    int port = 0;
};

// socket() for IPv4 TCP, close-on-exec; -1 with *err set on failure.
int tcp_socket(std::string* err);
int listen_on(const std::string& ip, int port, int backlog, std::string* err);
// accept with a periodic look at the stop flag; -1 on stop or error (*err set on error).
int accept_until(int lfd, Crew& crew, std::string* err);
// accept_until for a server loop: an error fails the crew as "WHO: error"; -1 on stop or error.
int accept_or_fail(int lfd, Crew& crew, std::string_view who);
// Whole-buffer send/recv on a socket with kIoTimeoutMs timeouts.  Return false
// on stop, EOF, a counted fault (Crew::count_fault, *err empty) or error; *eof
// tells EOF (peer closed) apart.
bool send_full(int fd, const char* p, std::size_t n, Crew& crew, std::string* err);
bool recv_full(int fd, char* p, std::size_t n, Crew& crew, std::string* err, bool* eof);
// connect() with the socket's short send timeout, then waits for the handshake
// in slices (a fresh veth, or a loaded host, can take a SYN retransmit).
// false with *err empty means a halt or a counted fault, not a failure.
bool connect_wait(int fd, const sockaddr_in& a, Crew& crew, std::string* err);
// Makes fd non-blocking and adds it to the epoll set ep for `events`.
void watch_nonblocking(int ep, int fd, std::uint32_t events);

// --- the measuring window and the result ---------------------------------------------------------

void report(const GenEnv& env, const std::string& text);

// Runs the measuring window: samples CPU at both ends, reports progress each
// second from `total` (a running count of `unit`), returns the window's wall
// seconds.  Stops early on a stop request or a worker failure.
double measure_window(GenEnv& env, Crew& crew, const char* unit, const std::function<std::uint64_t()>& total,
                      CpuSample* a, CpuSample* b);

// A result of the built-in generator for this scenario.
ScenarioResult base_result(const GenEnv& env);
// The crew's counted resets, refusals and timeouts, into the result.
void add_net_faults(const Crew& crew, ScenarioResult& r);
// Setup ended early: a worker's error, or a stop request (then an empty result).
Result<ScenarioResult> setup_aborted(const GenEnv& env, Crew& crew, const char* name);

}  // namespace hotline::detail
