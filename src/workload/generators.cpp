// SPDX-License-Identifier: Apache-2.0
// The toolkit of the built-in traffic generators.  Counters are single-writer
// and one per cache line: a contention reproducer must not add contention of
// its own.
#include "generators.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <sstream>

namespace hotline::detail {

// --- Crew ------------------------------------------------------------------------------------------

void Crew::spawn(Side side, int cpu, const NetNs& ns, std::function<void()> body) {
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

void Crew::join() {
    halt();
    for (auto& t : threads_)
        if (t.joinable()) t.join();
}

void Crew::fail(std::string msg) {
    if (stopping()) return;  // peers closing during shutdown are not failures
    std::lock_guard<std::mutex> g(mu_);
    if (error_.empty()) error_ = std::move(msg);
    failed_ = true;
}

bool Crew::count_fault(int e) {
    if (!count_net_faults.load(std::memory_order_relaxed)) return false;
    switch (e) {
    case ECONNRESET:
    case EPIPE:
    case ECONNABORTED: faults.resets++; return true;
    case ECONNREFUSED: faults.refusals++; return true;
    case ETIMEDOUT: faults.timeouts++; return true;
    default: return false;
    }
}

std::string Crew::error() const {
    std::lock_guard<std::mutex> g(mu_);
    return error_;
}

bool Crew::wait_for(const std::atomic<int>& count, int want, const char* what) {
    double deadline = monotonic_seconds() + 10;
    while (count.load() < want) {
        if (failed() || outer_stop_.load()) return false;
        if (monotonic_seconds() > deadline) {
            fail(fmt::format("workers did not get {} within 10 s", what));
            return false;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return true;
}

void Crew::wait_go() const {
    while (!go.load() && !stopping()) std::this_thread::sleep_for(std::chrono::microseconds(200));
}

std::vector<double> Crew::thread_cpu_seconds() {
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

// --- CPU accounting ----------------------------------------------------------------------------------

static std::map<int, CpuTicks> read_proc_stat(const std::string& proc_root) {
    std::ifstream f(proc_root + "/stat");
    std::stringstream ss;
    ss << f.rdbuf();
    auto r = parse_proc_stat(ss.str());
    return r ? *r : std::map<int, CpuTicks>{};
}

CpuSample sample_cpu(Crew* crew, const std::string& proc_root) {
    CpuSample s;
    s.wall = monotonic_seconds();
    if (crew) s.threads = crew->thread_cpu_seconds();
    s.ticks = read_proc_stat(proc_root);
    return s;
}

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

// --- sockets ----------------------------------------------------------------------------------------

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

void set_nodelay(int fd) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

int tcp_socket(std::string* err) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) *err = fmt::format("socket: {}", std::strerror(errno));
    return fd;
}

void watch_nonblocking(int ep, int fd, std::uint32_t events) {
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    epoll_event ev{};
    ev.events = events;
    ev.data.fd = fd;
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
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

int accept_or_fail(int lfd, Crew& crew, std::string_view who) {
    std::string err;
    int fd = accept_until(lfd, crew, &err);
    if (fd < 0 && !err.empty()) crew.fail(fmt::format("{}: {}", who, err));
    return fd;
}

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
        if (w < 0 && crew.count_fault(errno)) return false;
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
        if (crew.count_fault(errno)) return false;
        *err = fmt::format("recv: {}", std::strerror(errno));
        return false;
    }
    return true;
}

bool connect_wait(int fd, const sockaddr_in& a, Crew& crew, std::string* err) {
    if (connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0) return true;
    if (errno != EINPROGRESS && errno != EINTR) {
        int e = errno;
        if (crew.count_fault(e)) return false;
        char ip[INET_ADDRSTRLEN] = "";
        inet_ntop(AF_INET, &a.sin_addr, ip, sizeof ip);
        *err = fmt::format("connect to {}:{}: {}{}", ip, ntohs(a.sin_port), std::strerror(e),
                           e == EADDRNOTAVAIL ? " (ephemeral ports exhausted)" : "");
        return false;
    }
    double deadline = monotonic_seconds() + 10;
    while (!crew.stopping()) {
        pollfd p{fd, POLLOUT, 0};
        if (poll(&p, 1, kIoTimeoutMs) > 0) {
            int e = 0;
            socklen_t len = sizeof e;
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len);
            if (!e) return true;
            if (crew.count_fault(e)) return false;
            *err = fmt::format("connect: {}", std::strerror(e));
            return false;
        }
        if (monotonic_seconds() > deadline) {
            if (crew.count_fault(ETIMEDOUT)) return false;
            *err = "connect: no answer within 10 s";
            return false;
        }
    }
    return false;
}

// --- the measuring window and the result -------------------------------------------------------------

void report(const GenEnv& env, const std::string& text) {
    if (env.progress) env.progress(text);
}

static std::string rate_text(double v) {
    if (v >= 1e6) return fmt::format("{:.2f}M", v / 1e6);
    if (v >= 1e3) return fmt::format("{:.1f}K", v / 1e3);
    return fmt::format("{:.0f}", v);
}

double measure_window(GenEnv& env, Crew& crew, const char* unit, const std::function<std::uint64_t()>& total,
                      CpuSample* a, CpuSample* b) {
    *a = sample_cpu(&crew, env.opts.paths.proc);
    double end = a->wall + env.opts.duration_s;
    std::uint64_t last_total = total();
    double last_t = a->wall;
    while (!crew.failed()) {
        double left = end - monotonic_seconds();
        if (left <= 0) break;
        if (!env.sleep_for(std::min(1.0, left))) break;
        double t = monotonic_seconds();
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

void add_net_faults(const Crew& crew, ScenarioResult& r) {
    r.connection_resets = crew.faults.resets.load();
    r.connection_refusals = crew.faults.refusals.load();
    r.connection_timeouts = crew.faults.timeouts.load();
}

Result<ScenarioResult> setup_aborted(const GenEnv& env, Crew& crew, const char* name) {
    crew.join();
    if (crew.failed()) return make_error(std::string(name) + ": " + crew.error());
    ScenarioResult r = base_result(env);
    r.stop_reason = "stopped before the traffic started";
    return r;
}

}  // namespace hotline::detail
