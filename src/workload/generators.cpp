// Built-in traffic generators.  Every worker thread pins itself, then enters
// its side's network namespace with setns (per thread), then opens its sockets,
// which stay in that namespace.  Counters are single-writer and one per cache
// line: a contention reproducer must not add contention of its own.
#include "generators.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

namespace hotline::detail {

namespace {

constexpr int kDstPortBase = 20000;
constexpr int kCrrPortBase = 21000;
constexpr int kLatPort = 22000;
constexpr int kIoTimeoutMs = 200;  // blocking calls wake this often to look at the stop flag

double now_s() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

std::uint64_t now_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return std::uint64_t(ts.tv_sec) * 1000000000ull + std::uint64_t(ts.tv_nsec);
}

struct alignas(64) Counter {
    std::atomic<std::uint64_t> v{0};
    // Single writer: a plain load+store, no locked instruction on the hot path.
    void add(std::uint64_t n) { v.store(v.load(std::memory_order_relaxed) + n, std::memory_order_relaxed); }
    std::uint64_t get() const { return v.load(std::memory_order_relaxed); }
};

enum Side { kSender = 0, kReceiver = 1 };

// The worker threads of one generator, their readiness and their first error.
class Crew {
public:
    explicit Crew(const std::atomic<bool>& outer_stop) : outer_stop_(outer_stop) {}
    ~Crew() { join(); }

    void spawn(Side side, int cpu, const NetNs& ns, std::function<void()> body) {
        sides_.push_back(side);
        threads_.emplace_back([this, cpu, &ns, body = std::move(body)] {
            cpu_set_t set;
            CPU_ZERO(&set);
            CPU_SET(cpu, &set);
            if (int e = pthread_setaffinity_np(pthread_self(), sizeof set, &set)) {
                fail(fmt::format("cannot pin a worker to CPU {}: {}", cpu, std::strerror(e)));
                return;
            }
            if (auto st = ns.enter(); !st) {
                fail(st.error().message());
                return;
            }
            body();
        });
    }
    // Workers run until the coordinator halts them, after its last CPU sample: a
    // stop request only wakes the coordinator (an exited thread's clock is unreadable).
    bool stopping() const { return stop_.load(std::memory_order_relaxed); }
    void halt() { stop_ = true; }
    void join() {
        halt();
        for (auto& t : threads_)
            if (t.joinable()) t.join();
    }
    void fail(std::string msg) {
        if (stopping()) return;  // peers closing during shutdown are not failures
        std::lock_guard<std::mutex> g(mu_);
        if (error_.empty()) error_ = std::move(msg);
        failed_ = true;
    }
    bool failed() const { return failed_.load(); }
    std::string error() const {
        std::lock_guard<std::mutex> g(mu_);
        return error_;
    }
    // Waits until `count` reaches `want`; false on failure, stop or a 10 s timeout.
    bool wait_for(const std::atomic<int>& count, int want, const char* what) {
        double deadline = now_s() + 10;
        while (count.load() < want) {
            if (failed() || outer_stop_.load()) return false;
            if (now_s() > deadline) {
                fail(fmt::format("workers did not get {} within 10 s", what));
                return false;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
        return true;
    }
    std::vector<double> thread_cpu_seconds() {
        std::vector<double> out;
        for (auto& t : threads_) {
            clockid_t cid;
            timespec ts{};
            if (t.joinable() && pthread_getcpuclockid(t.native_handle(), &cid) == 0 && clock_gettime(cid, &ts) == 0)
                out.push_back(double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9);
            else
                out.push_back(0);
        }
        return out;
    }
    const std::vector<Side>& sides() const { return sides_; }

    std::atomic<int> listening{0}, ready{0};
    std::atomic<bool> go{false};

private:
    const std::atomic<bool>& outer_stop_;
    std::atomic<bool> stop_{false};
    std::vector<std::thread> threads_;
    std::vector<Side> sides_;
    mutable std::mutex mu_;
    std::string error_;
    std::atomic<bool> failed_{false};
};

struct CpuSample {
    double wall = 0;
    std::vector<double> threads;
    std::map<int, CpuTicks> ticks;
};

std::map<int, CpuTicks> read_proc_stat(const std::string& proc_root) {
    std::ifstream f(proc_root + "/stat");
    std::stringstream ss;
    ss << f.rdbuf();
    auto r = parse_proc_stat(ss.str());
    return r ? *r : std::map<int, CpuTicks>{};
}

CpuSample sample_cpu(Crew* crew, const std::string& proc_root) {
    CpuSample s;
    s.wall = now_s();
    if (crew) s.threads = crew->thread_cpu_seconds();
    s.ticks = read_proc_stat(proc_root);
    return s;
}

// System share of the chosen CPUs between two /proc/stat readings.
void fill_proc_stat_use(const CpuSample& a, const CpuSample& b, const std::vector<int>& cpus, CpuUse& u) {
    std::uint64_t total = 0, busy = 0, soft = 0;
    for (int c : cpus) {
        auto ia = a.ticks.find(c), ib = b.ticks.find(c);
        if (ia == a.ticks.end() || ib == b.ticks.end()) continue;
        total += ib->second.total() - ia->second.total();
        busy += ib->second.busy() - ia->second.busy();
        soft += ib->second.softirq - ia->second.softirq;
    }
    u.cpus = cpus;
    if (total) {
        u.busy_pct = 100.0 * double(busy) / double(total);
        u.softirq_pct = 100.0 * double(soft) / double(total);
    }
}

CpuUse cpu_between(const CpuSample& a, const CpuSample& b, const std::vector<Side>& sides, const std::vector<int>& cpus) {
    CpuUse u;
    u.seconds = b.wall - a.wall;
    double snd = 0, rcv = 0;
    for (std::size_t i = 0; i < sides.size() && i < a.threads.size() && i < b.threads.size(); ++i)
        (sides[i] == kSender ? snd : rcv) += std::max(0.0, b.threads[i] - a.threads[i]);
    if (u.seconds > 0) {
        u.sender_pct = 100.0 * snd / u.seconds;
        u.receiver_pct = 100.0 * rcv / u.seconds;
    }
    u.threads_measured = !sides.empty();
    fill_proc_stat_use(a, b, cpus, u);
    return u;
}

sockaddr_in make_addr(const std::string& ip, int port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(std::uint16_t(port));
    inet_pton(AF_INET, ip.c_str(), &a.sin_addr);
    return a;
}

void set_timeouts(int fd) {
    timeval tv{0, kIoTimeoutMs * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

int listen_on(const std::string& ip, int port, int backlog, std::string* err) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        *err = fmt::format("socket: {}", std::strerror(errno));
        return -1;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    auto a = make_addr(ip, port);
    if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) || listen(fd, backlog)) {
        *err = fmt::format("listen on {}:{}: {}", ip, port, std::strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

// accept with a periodic look at the stop flag; -1 on stop or error (*err set on error).
int accept_until(int lfd, Crew& crew, std::string* err) {
    while (!crew.stopping()) {
        pollfd p{lfd, POLLIN, 0};
        int r = poll(&p, 1, kIoTimeoutMs);
        if (r < 0 && errno != EINTR) {
            *err = fmt::format("poll: {}", std::strerror(errno));
            return -1;
        }
        if (r <= 0) continue;
        int fd = accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd >= 0) return fd;
        if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) {
            *err = fmt::format("accept: {}", std::strerror(errno));
            return -1;
        }
    }
    return -1;
}

// Whole-buffer send/recv on a socket with kIoTimeoutMs timeouts.  Return false
// on stop, EOF or error; *eof tells EOF (peer closed) apart.
bool send_full(int fd, const char* p, std::size_t n, Crew& crew, std::string* err) {
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w > 0) {
            p += w;
            n -= std::size_t(w);
            continue;
        }
        if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
            if (crew.stopping()) return false;
            continue;
        }
        *err = fmt::format("send: {}", std::strerror(errno));
        return false;
    }
    return true;
}

bool recv_full(int fd, char* p, std::size_t n, Crew& crew, std::string* err, bool* eof) {
    while (n) {
        ssize_t r = recv(fd, p, n, 0);
        if (r > 0) {
            p += r;
            n -= std::size_t(r);
            continue;
        }
        if (r == 0) {
            *eof = true;
            return false;
        }
        if (errno == EAGAIN || errno == EINTR) {
            if (crew.stopping()) return false;
            continue;
        }
        *err = fmt::format("recv: {}", std::strerror(errno));
        return false;
    }
    return true;
}

// connect() with the socket's short send timeout, then waits for the handshake
// in slices (a fresh veth, or a loaded host, can take a SYN retransmit).
// false with *err empty means a halt, not a failure.
bool connect_wait(int fd, const sockaddr_in& a, Crew& crew, std::string* err) {
    if (connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0) return true;
    if (errno != EINPROGRESS && errno != EINTR) {
        int e = errno;
        char ip[INET_ADDRSTRLEN] = "";
        inet_ntop(AF_INET, &a.sin_addr, ip, sizeof ip);
        *err = fmt::format("connect to {}:{}: {}{}", ip, ntohs(a.sin_port), std::strerror(e),
                           e == EADDRNOTAVAIL ? " (ephemeral ports exhausted)" : "");
        return false;
    }
    double deadline = now_s() + 10;
    while (!crew.stopping()) {
        pollfd p{fd, POLLOUT, 0};
        if (poll(&p, 1, kIoTimeoutMs) > 0) {
            int e = 0;
            socklen_t len = sizeof e;
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len);
            if (!e) return true;
            *err = fmt::format("connect: {}", std::strerror(e));
            return false;
        }
        if (now_s() > deadline) {
            *err = "connect: no answer within 10 s";
            return false;
        }
    }
    return false;
}

void report(const GenEnv& env, const std::string& text) {
    if (env.progress) env.progress(text);
}

std::string rate_text(double v) {
    if (v >= 1e6) return fmt::format("{:.2f}M", v / 1e6);
    if (v >= 1e3) return fmt::format("{:.1f}K", v / 1e3);
    return fmt::format("{:.0f}", v);
}

// Runs the measuring window: samples CPU at both ends, reports progress each
// second from `rate_now` (a running total), returns the window's wall seconds
// and fills *cpu.  Stops early on a stop request or a worker failure.
template <class TotalFn>
double measure_window(GenEnv& env, Crew& crew, const char* unit, TotalFn total, CpuSample* a, CpuSample* b) {
    *a = sample_cpu(&crew, env.opts.paths.proc);
    double end = a->wall + env.opts.duration_s;
    std::uint64_t last_total = total();
    double last_t = a->wall;
    while (!crew.failed()) {
        double left = end - now_s();
        if (left <= 0) break;
        if (!env.sleep_for(std::min(1.0, left))) break;
        double t = now_s();
        std::uint64_t cur = total();
        report(env, fmt::format("{}: {:.0f}/{:.0f} s, {} {}/s", env.opts.name, t - a->wall, env.opts.duration_s,
                                rate_text(double(cur - last_total) / std::max(1e-9, t - last_t)), unit));
        last_total = cur;
        last_t = t;
    }
    *b = sample_cpu(&crew, env.opts.paths.proc);
    return b->wall - a->wall;
}

ScenarioResult base_result(const GenEnv& env) {
    ScenarioResult r;
    r.scenario = env.opts.name;
    r.generator = "built-in";
    return r;
}

// Setup ended early: a worker's error, or a stop request (then an empty result).
Result<ScenarioResult> setup_aborted(const GenEnv& env, Crew& crew, const char* name) {
    crew.join();
    if (crew.failed()) return make_error(std::string(name) + ": " + crew.error());
    ScenarioResult r = base_result(env);
    r.stop_reason = "stopped before the traffic started";
    return r;
}

}  // namespace

// --- dst-refcount ----------------------------------------------------------------------------
//
// The first report's netperf loop (`-t TCP_STREAM -T i,i -- -m 64 -s 64K -D`, three
// per CPU): on every chosen CPU a sender thread drives N non-blocking flows of
// 64-byte writes with TCP_NODELAY and 64K socket buffers, and a receiver thread
// on the same CPU drains them, all to one server address.

Result<ScenarioResult> run_dst_refcount(GenEnv& env) {
    const auto& o = env.opts;
    const auto& net = env.net;
    const int nflows = o.flows_per_cpu;
    const std::size_t msg = std::size_t(o.msg_size);
    Crew crew(env.stop);
    std::vector<std::unique_ptr<Counter>> sent, recvd;
    for (std::size_t i = 0; i < o.cpus.size(); ++i) {
        sent.push_back(std::make_unique<Counter>());
        recvd.push_back(std::make_unique<Counter>());
    }
    const std::string server_addr = net.server_addr();

    for (std::size_t i = 0; i < o.cpus.size(); ++i) {
        Counter* rc = recvd[i].get();
        int port = kDstPortBase + int(i);
        crew.spawn(kReceiver, o.cpus[i], net.server(), [&crew, rc, port, nflows, server_addr] {
            std::string err;
            int lfd = listen_on(server_addr, port, nflows + 16, &err);
            if (lfd < 0) return crew.fail("dst-refcount receiver: " + err);
            crew.listening++;
            int ep = epoll_create1(EPOLL_CLOEXEC);
            std::vector<int> fds;
            for (int k = 0; k < nflows; ++k) {
                int fd = accept_until(lfd, crew, &err);
                if (fd < 0) {
                    if (!err.empty()) crew.fail("dst-refcount receiver: " + err);
                    break;
                }
                fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
                epoll_event ev{};
                ev.events = EPOLLIN;
                ev.data.fd = fd;
                epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
                fds.push_back(fd);
            }
            close(lfd);
            if (int(fds.size()) == nflows) crew.ready++;
            std::vector<char> buf(64 * 1024);
            epoll_event evs[64];
            while (!crew.stopping()) {
                int n = epoll_wait(ep, evs, 64, kIoTimeoutMs);
                for (int e = 0; e < n; ++e) {
                    int fd = evs[e].data.fd;
                    while (true) {
                        ssize_t r = recv(fd, buf.data(), buf.size(), 0);
                        if (r > 0) {
                            rc->add(std::uint64_t(r));
                            continue;
                        }
                        if (r == 0 || (errno != EAGAIN && errno != EINTR)) epoll_ctl(ep, EPOLL_CTL_DEL, fd, nullptr);
                        break;
                    }
                }
            }
            for (int fd : fds) close(fd);
            close(ep);
        });
    }
    if (!crew.wait_for(crew.listening, int(o.cpus.size()), "their listening sockets")) {
        return setup_aborted(env, crew, "dst-refcount");
    }

    for (std::size_t i = 0; i < o.cpus.size(); ++i) {
        Counter* sc = sent[i].get();
        int port = kDstPortBase + int(i);
        int sockbuf = o.sockbuf;
        crew.spawn(kSender, o.cpus[i], net.client(), [&crew, sc, port, nflows, msg, sockbuf, server_addr] {
            auto addr = make_addr(server_addr, port);
            std::vector<int> fds;
            int ep = epoll_create1(EPOLL_CLOEXEC);
            for (int k = 0; k < nflows; ++k) {
                int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (fd < 0) return crew.fail(fmt::format("dst-refcount sender: socket: {}", std::strerror(errno)));
                int one = 1;
                setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sockbuf, sizeof sockbuf);
                setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sockbuf, sizeof sockbuf);
                set_timeouts(fd);
                std::string err;
                if (!connect_wait(fd, addr, crew, &err)) {
                    if (!err.empty()) crew.fail("dst-refcount sender: " + err);
                    close(fd);
                    break;
                }
                fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
                epoll_event ev{};
                ev.events = EPOLLOUT;
                ev.data.fd = fd;
                epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
                fds.push_back(fd);
            }
            if (int(fds.size()) == nflows) crew.ready++;
            while (!crew.go.load() && !crew.stopping()) std::this_thread::sleep_for(std::chrono::microseconds(200));
            std::vector<char> buf(msg, 'h');
            epoll_event evs[64];
            // Level-triggered EPOLLOUT: a writable flow gets a burst of messages per
            // round, so flows share the thread the way netperf processes share the CPU.
            constexpr int kBurst = 32;
            while (!crew.stopping()) {
                int n = epoll_wait(ep, evs, 64, kIoTimeoutMs);
                for (int e = 0; e < n; ++e) {
                    int fd = evs[e].data.fd;
                    for (int b = 0; b < kBurst; ++b) {
                        ssize_t w = send(fd, buf.data(), buf.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
                        if (w > 0) {
                            sc->add(std::uint64_t(w));
                            continue;
                        }
                        if (w < 0 && errno != EAGAIN && errno != EINTR) {
                            crew.fail(fmt::format("dst-refcount sender: send: {}", std::strerror(errno)));
                            epoll_ctl(ep, EPOLL_CTL_DEL, fd, nullptr);
                        }
                        break;
                    }
                }
            }
            for (int fd : fds) close(fd);
            close(ep);
        });
    }
    if (!crew.wait_for(crew.ready, 2 * int(o.cpus.size()), "connected")) {
        return setup_aborted(env, crew, "dst-refcount");
    }
    crew.go = true;

    auto total_sent = [&] {
        std::uint64_t s = 0;
        for (auto& c : sent) s += c->get();
        return s;
    };
    auto total_recv = [&] {
        std::uint64_t s = 0;
        for (auto& c : recvd) s += c->get();
        return s;
    };
    std::uint64_t s0 = total_sent(), r0 = total_recv();
    CpuSample a, b;
    auto sent_msgs = [&] { return total_sent() / msg; };
    // Withdrawn at return, after the join: the tail after the window counts too.
    LiveOps live(env, sent_msgs);
    double secs = measure_window(env, crew, "msg", sent_msgs, &a, &b);
    std::uint64_t s1 = total_sent(), r1 = total_recv();
    crew.join();
    if (crew.failed()) return make_error("dst-refcount: " + crew.error());

    ScenarioResult r = base_result(env);
    r.seconds = secs;
    r.messages = (s1 - s0) / msg;
    r.bytes = r1 - r0;
    r.messages_per_s = secs > 0 ? double(r.messages) / secs : 0;
    r.mbit_per_s = secs > 0 ? double(r.bytes) * 8 / secs / 1e6 : 0;
    r.cpu = cpu_between(a, b, crew.sides(), o.cpus);
    r.notes.push_back("messages are 64-byte writes completed by the senders; Mbit/s is what the receivers read");
    return r;
}

// --- tcp-crr -----------------------------------------------------------------------------------
//
// netperf TCP_CRR's shape, the pattern behind the 2023 dst false-sharing fix:
// connect, one request, one response, close, to one server address.  N client/
// server pairs per CPU; the server closes first, so TIME_WAIT stays on the
// server side and the client never runs out of ephemeral ports.

Result<ScenarioResult> run_tcp_crr(GenEnv& env) {
    const auto& o = env.opts;
    const auto& net = env.net;
    const std::size_t msg = std::size_t(o.msg_size);
    const int nflows = o.flows_per_cpu;
    const std::string server_addr = net.server_addr();
    Crew crew(env.stop);
    std::vector<std::unique_ptr<Counter>> conns;
    const int pairs = int(o.cpus.size()) * nflows;
    for (int i = 0; i < pairs; ++i) conns.push_back(std::make_unique<Counter>());

    for (int i = 0; i < pairs; ++i) {
        int port = kCrrPortBase + i;
        crew.spawn(kReceiver, o.cpus[std::size_t(i / nflows)], net.server(), [&crew, port, msg, server_addr] {
            std::string err;
            int lfd = listen_on(server_addr, port, 128, &err);
            if (lfd < 0) return crew.fail("tcp-crr server: " + err);
            crew.listening++;
            std::vector<char> buf(msg, 's');
            while (!crew.stopping()) {
                int fd = accept_until(lfd, crew, &err);
                if (fd < 0) {
                    if (!err.empty()) crew.fail("tcp-crr server: " + err);
                    break;
                }
                set_timeouts(fd);
                bool eof = false;
                if (recv_full(fd, buf.data(), msg, crew, &err, &eof)) send_full(fd, buf.data(), msg, crew, &err);
                close(fd);
                if (!err.empty()) {
                    crew.fail("tcp-crr server: " + err);
                    break;
                }
            }
            close(lfd);
        });
    }
    if (!crew.wait_for(crew.listening, pairs, "their listening sockets")) {
        return setup_aborted(env, crew, "tcp-crr");
    }
    for (int i = 0; i < pairs; ++i) {
        Counter* cc = conns[std::size_t(i)].get();
        int port = kCrrPortBase + i;
        crew.spawn(kSender, o.cpus[std::size_t(i / nflows)], net.client(), [&crew, cc, port, msg, server_addr] {
            auto addr = make_addr(server_addr, port);
            std::vector<char> buf(msg, 'c');
            crew.ready++;
            while (!crew.go.load() && !crew.stopping()) std::this_thread::sleep_for(std::chrono::microseconds(200));
            std::string err;
            while (!crew.stopping()) {
                int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (fd < 0) return crew.fail(fmt::format("tcp-crr client: socket: {}", std::strerror(errno)));
                int one = 1;
                setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                set_timeouts(fd);
                if (!connect_wait(fd, addr, crew, &err)) {
                    close(fd);
                    if (!err.empty()) crew.fail("tcp-crr client: " + err);
                    break;
                }
                bool eof = false;
                bool ok = send_full(fd, buf.data(), msg, crew, &err) && recv_full(fd, buf.data(), msg, crew, &err, &eof);
                if (ok) {
                    // Wait for the server's FIN so the server side holds TIME_WAIT.
                    char c;
                    while (!crew.stopping()) {
                        ssize_t r = recv(fd, &c, 1, 0);
                        if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) break;
                    }
                    cc->add(1);
                }
                close(fd);
                if (!err.empty()) return crew.fail("tcp-crr client: " + err);
            }
        });
    }
    if (!crew.wait_for(crew.ready, pairs, "started")) {
        return setup_aborted(env, crew, "tcp-crr");
    }
    crew.go = true;
    auto total = [&] {
        std::uint64_t s = 0;
        for (auto& c : conns) s += c->get();
        return s;
    };
    std::uint64_t c0 = total();
    LiveOps live(env, total);
    CpuSample a, b;
    double secs = measure_window(env, crew, "conn", total, &a, &b);
    std::uint64_t c1 = total();
    crew.join();
    if (crew.failed()) return make_error("tcp-crr: " + crew.error());
    ScenarioResult r = base_result(env);
    r.seconds = secs;
    r.connections = c1 - c0;
    r.connections_per_s = secs > 0 ? double(r.connections) / secs : 0;
    r.cpu = cpu_between(a, b, crew.sides(), o.cpus);
    return r;
}

// --- irq-lat -------------------------------------------------------------------------------------
//
// The second report's qperf tcp_lat sweep: one client thread and one server
// thread, one connection per message size; each exchange sends size bytes and
// waits for size bytes back.  The round trip of every exchange goes into an
// HDR-style histogram; the first few exchanges of a size warm buffers and are
// not counted.

Result<ScenarioResult> run_irq_lat(GenEnv& env) {
    const auto& o = env.opts;
    const auto& net = env.net;
    const int client_cpu = o.cpus.front(), server_cpu = o.cpus.back();
    const std::string server_addr = net.server_addr();
    const bool nodelay = o.nodelay;
    constexpr int kWarmup = 16;
    Crew crew(env.stop);
    std::uint64_t max_size = *std::max_element(o.msg_sizes.begin(), o.msg_sizes.end());

    crew.spawn(kReceiver, server_cpu, net.server(), [&crew, server_addr, max_size, nodelay] {
        std::string err;
        int lfd = listen_on(server_addr, kLatPort, 4, &err);
        if (lfd < 0) return crew.fail("irq-lat server: " + err);
        crew.listening++;
        std::vector<char> buf(max_size, 's');
        while (!crew.stopping()) {
            int fd = accept_until(lfd, crew, &err);
            if (fd < 0) {
                if (!err.empty()) crew.fail("irq-lat server: " + err);
                break;
            }
            int one = 1;
            if (nodelay) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            set_timeouts(fd);
            std::uint64_t size = 0;
            bool eof = false;
            if (recv_full(fd, reinterpret_cast<char*>(&size), sizeof size, crew, &err, &eof) && size && size <= max_size) {
                while (recv_full(fd, buf.data(), size, crew, &err, &eof) && send_full(fd, buf.data(), size, crew, &err)) {
                }
            }
            close(fd);
            if (!err.empty()) {
                crew.fail("irq-lat server: " + err);
                break;
            }
        }
        close(lfd);
    });
    if (!crew.wait_for(crew.listening, 1, "a listening socket")) {
        return setup_aborted(env, crew, "irq-lat");
    }

    std::vector<LatencyPoint> points;
    const double per_size = o.duration_s / double(o.msg_sizes.size());
    const ProgressFn& progress = env.progress;
    const std::string name = o.name;
    const std::vector<std::uint64_t> sizes = o.msg_sizes;
    std::atomic<bool> client_done{false};
    crew.spawn(kSender, client_cpu, net.client(), [&, server_addr, nodelay] {
        auto addr = make_addr(server_addr, kLatPort);
        std::vector<char> buf(max_size, 'c');
        std::string err;
        for (std::size_t si = 0; si < sizes.size() && !crew.stopping(); ++si) {
            std::uint64_t size = sizes[si];
            if (progress)
                progress(fmt::format("{}: {} ({}/{}){}", name, format_size(size), si + 1, sizes.size(),
                                     points.empty() ? "" : fmt::format(", previous p50 {:.1f} us", points.back().p50_ns / 1e3)));
            int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
            if (fd < 0) return crew.fail(fmt::format("irq-lat client: socket: {}", std::strerror(errno)));
            int one = 1;
            if (nodelay) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            set_timeouts(fd);
            if (!connect_wait(fd, addr, crew, &err)) {
                close(fd);
                if (!err.empty()) crew.fail("irq-lat client: " + err);
                break;
            }
            LatencyHistogram h;
            bool eof = false, ok = send_full(fd, reinterpret_cast<const char*>(&size), sizeof size, crew, &err);
            double t_start = 0;
            std::uint64_t deadline = 0;
            for (int n = 0; ok && !crew.stopping(); ++n) {
                if (n == kWarmup) {
                    t_start = now_s();
                    deadline = now_ns() + std::uint64_t(per_size * 1e9);
                }
                std::uint64_t t0 = now_ns();
                ok = send_full(fd, buf.data(), size, crew, &err) && recv_full(fd, buf.data(), size, crew, &err, &eof);
                std::uint64_t t1 = now_ns();
                if (!ok) break;
                if (n >= kWarmup) {
                    h.record(t1 - t0);
                    if (t1 >= deadline) break;
                }
            }
            double secs = t_start > 0 ? now_s() - t_start : 0;
            close(fd);
            if (!err.empty()) return crew.fail("irq-lat client: " + err);
            if (eof) return crew.fail("irq-lat client: the server closed the connection");
            if (!h.count()) break;  // stopped before anything was measured
            LatencyPoint p;
            p.msg_size = size;
            p.exchanges = h.count();
            p.seconds = secs;
            p.rate_per_s = secs > 0 ? double(h.count()) / secs : 0;
            p.has_percentiles = true;
            p.rtt_mean_ns = h.mean();
            p.one_way_ns = h.mean() / 2;
            p.rtt_min_ns = double(h.min());
            p.rtt_max_ns = double(h.max());
            p.p50_ns = double(h.percentile(50));
            p.p90_ns = double(h.percentile(90));
            p.p99_ns = double(h.percentile(99));
            p.p999_ns = double(h.percentile(99.9));
            points.push_back(p);
        }
        client_done = true;
        // Stay alive until sampled: an exited thread's CPU clock cannot be read.
        while (!crew.stopping()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
    CpuSample a = sample_cpu(&crew, o.paths.proc);
    while (!client_done.load() && !crew.failed() && !env.stop.load()) env.sleep_for(0.05);
    CpuSample b = sample_cpu(&crew, o.paths.proc);
    crew.join();
    if (crew.failed()) return make_error("irq-lat: " + crew.error());
    ScenarioResult r = base_result(env);
    r.seconds = b.wall - a.wall;
    r.latency = points;
    r.cpu = cpu_between(a, b, crew.sides(), o.cpus);
    r.notes.push_back("percentiles are of the round trip (nearest rank over an HDR-style histogram, within 0.4%); "
                      "one-way is half the mean round trip, as qperf reports latency");
    return r;
}

// --- qperf client ------------------------------------------------------------------------------------

std::optional<double> process_cpu_seconds(const std::string& proc_root, pid_t pid) {
    std::ifstream f(fmt::format("{}/{}/stat", proc_root, pid));
    std::string s;
    if (!std::getline(f, s)) return std::nullopt;
    auto rp = s.rfind(')');  // comm may contain spaces
    if (rp == std::string::npos) return std::nullopt;
    std::istringstream in(s.substr(rp + 2));
    std::string tok;
    std::vector<std::string> fields;
    while (in >> tok) fields.push_back(tok);
    // fields[0] is field 3 (state); utime..cstime are fields 14..17
    if (fields.size() < 15) return std::nullopt;
    double ticks = 0;
    for (int i = 11; i <= 14; ++i) ticks += std::stod(fields[std::size_t(i)]);
    return ticks / double(sysconf(_SC_CLK_TCK));
}

Result<ScenarioResult> run_qperf_client(GenEnv& env, pid_t server_pid) {
    const auto& o = env.opts;
    const auto& net = env.net;
    ScenarioResult r;
    r.scenario = o.name;
    r.generator = "qperf";
    bool lat = o.qperf_test.size() > 4 && o.qperf_test.substr(o.qperf_test.size() - 4) == "_lat";
    std::vector<std::uint64_t> sizes = lat ? o.msg_sizes : std::vector<std::uint64_t>{std::uint64_t(o.msg_size)};
    // qperf takes whole seconds per test.
    long per = std::max(1L, std::lround(std::floor(o.duration_s / double(sizes.size()))));
    CpuSample a = sample_cpu(nullptr, o.paths.proc);
    double srv0 = process_cpu_seconds(o.paths.proc, server_pid).value_or(0), client_cpu = 0;
    std::vector<QperfBlock> all;
    for (std::size_t si = 0; si < sizes.size() && !env.stop.load(); ++si) {
        report(env, fmt::format("{}: qperf {} {} ({}/{})", o.name, o.qperf_test, format_size(sizes[si]), si + 1, sizes.size()));
        int out = memfd_create("hotline-qperf", MFD_CLOEXEC);
        if (out < 0) return make_error("memfd_create", errno);
        SpawnOptions so;
        so.netns_fd = net.client().fd();
        so.cpus = {o.cpus.front()};
        so.die_with_parent = true;
        so.stdout_fd = out;
        std::vector<std::string> argv = {"qperf", net.server_addr(), "-lp", std::to_string(kQperfPort), "-ws", "5",
                                         "-v", "-uu", "-ub", "--time", std::to_string(per),
                                         "-m", std::to_string(sizes[si]), o.qperf_test};
        auto child = ChildProcess::spawn(argv, so);
        if (!child) {
            close(out);
            Error e = child.error();
            if (e.err == ENOENT) e.hint = "install qperf (Debian package qperf)";
            return e;
        }
        // Watch without reaping, so the exited client's CPU time can still be read.
        double deadline = now_s() + double(per) + 20;
        bool exited = false;
        while (!exited) {
            siginfo_t si_{};
            si_.si_pid = 0;
            if (waitid(P_PID, id_t(child->pid()), &si_, WEXITED | WNOHANG | WNOWAIT) == 0 && si_.si_pid != 0) {
                exited = true;
                break;
            }
            if (env.stop.load() || now_s() > deadline) break;
            env.sleep_for(0.02);
        }
        if (exited) client_cpu += process_cpu_seconds(o.paths.proc, child->pid()).value_or(0);
        else child->signal(SIGKILL);
        int status = child->wait();
        std::string text;
        lseek(out, 0, SEEK_SET);
        char buf[4096];
        ssize_t n;
        while ((n = read(out, buf, sizeof buf)) > 0) text.append(buf, std::size_t(n));
        close(out);
        if (!exited) {
            if (env.stop.load()) break;
            return make_error(fmt::format("qperf client did not finish {} s after its {} s test", 20, per), ETIMEDOUT);
        }
        if (status != 0) {
            Error e = make_error(fmt::format("qperf client exited with status {}", status), EIO);
            e.detail = text;
            return e;
        }
        auto blocks = parse_qperf_output(text);
        if (!blocks) return blocks.error();
        for (auto& b : *blocks) all.push_back(b);
    }
    CpuSample b = sample_cpu(nullptr, o.paths.proc);
    double srv1 = process_cpu_seconds(o.paths.proc, server_pid).value_or(srv0);
    if (auto st = apply_qperf_blocks(all, r); !st) return st.error();
    r.seconds = b.wall - a.wall;
    r.cpu.seconds = r.seconds;
    if (r.seconds > 0) {
        r.cpu.sender_pct = 100.0 * client_cpu / r.seconds;
        r.cpu.receiver_pct = 100.0 * (srv1 - srv0) / r.seconds;
        r.cpu.threads_measured = true;
    }
    fill_proc_stat_use(a, b, o.cpus, r.cpu);
    r.notes.push_back(fmt::format("qperf {} run per message size for {} s; its latency is one-way (half the round trip) "
                                  "and a mean only; CPU is per process, at USER_HZ resolution",
                                  o.qperf_test, per));
    return r;
}

// --- exec ---------------------------------------------------------------------------------------------

Result<ScenarioResult> run_command_watch(GenEnv& env, ChildProcess& command, int* status) {
    ScenarioResult r;
    r.scenario = env.opts.name;
    r.generator = "command";
    CpuSample a = sample_cpu(nullptr, env.opts.paths.proc);
    double end = env.opts.duration_s > 0 ? a.wall + env.opts.duration_s : 0;
    r.stop_reason = "stopped";
    while (!env.stop.load()) {
        if (command.poll(status)) {
            r.stop_reason = fmt::format("command exited with status {}", *status);
            break;
        }
        if (end > 0 && now_s() >= end) {
            r.stop_reason = "duration reached";
            break;
        }
        env.sleep_for(0.05);
    }
    CpuSample b = sample_cpu(nullptr, env.opts.paths.proc);
    r.seconds = b.wall - a.wall;
    r.cpu.seconds = r.seconds;
    fill_proc_stat_use(a, b, env.opts.cpus, r.cpu);
    return r;
}

}  // namespace hotline::detail
