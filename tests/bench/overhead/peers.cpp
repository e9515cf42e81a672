// SPDX-License-Identifier: Apache-2.0
// perf and bpftrace as the peers of the trigger, the per-call table and the
// workload runs.
#include "peers.hpp"

#include <regex>

#include "overhead.hpp"

namespace overhead {

// --- perf stat -------------------------------------------------------------------------------

Result<PerfStat> PerfStat::start(const std::string& event) {
    PerfStat p;
    p.event_ = event;
    char tmpl[] = "/tmp/hotline-bench-perf-XXXXXX";
    if (!mkdtemp(tmpl)) return make_error("mkdtemp", errno);
    p.dir_ = tmpl;
    std::string ctl = p.dir_ + "/ctl", ack = p.dir_ + "/ack";
    if (mkfifo(ctl.c_str(), 0600) || mkfifo(ack.c_str(), 0600)) return make_error("mkfifo", errno);
    // Read-write opens of a FIFO never block, whichever side perf opens first.
    p.ctl_ = open(ctl.c_str(), O_RDWR | O_CLOEXEC);
    p.ack_ = open(ack.c_str(), O_RDWR | O_CLOEXEC);
    if (p.ctl_ < 0 || p.ack_ < 0) return make_error("open perf control FIFOs", errno);
    SpawnOptions so;
    so.die_with_parent = true;
    so.stdout_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
    auto c = ChildProcess::spawn({"perf", "stat", "-e", event, "-a", "-x", ",", "-D", "-1",
                                  "--control", "fifo:" + ctl + "," + ack, "-o", p.dir_ + "/out"},
                                 so);
    close(so.stdout_fd);
    if (!c) return c.error();
    p.child_.emplace(std::move(*c));
    return p;
}

Result<std::uint64_t> PerfStat::stop() {
    if (!child_) return make_error("perf is not running", ECHILD);
    child_->signal(SIGINT);
    int st = child_->wait();
    child_.reset();
    std::ifstream f(dir_ + "/out");
    std::string line;
    while (std::getline(f, line))
        if (line.find("," + event_ + ",") != std::string::npos) {
            if (line.rfind("<not", 0) == 0) break;
            return std::strtoull(line.c_str(), nullptr, 10);
        }
    return make_error(fmt::format("perf stat (status {}) printed no count for {}", st, event_),
                      EIO);
}

PerfStat::PerfStat(PerfStat&& o) noexcept
    : child_(std::move(o.child_)),
      dir_(std::move(o.dir_)),
      event_(std::move(o.event_)),
      ctl_(o.ctl_),
      ack_(o.ack_) {
    o.child_.reset();
    o.dir_.clear();
    o.ctl_ = o.ack_ = -1;
}

PerfStat::~PerfStat() {
    if (child_) {
        child_->signal(SIGINT);
        child_->wait();
    }
    if (ctl_ >= 0) close(ctl_);
    if (ack_ >= 0) close(ack_);
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
}

// Writes a control command and waits for perf's "ack" (up to 10 s: perf reads
// its FIFO only once its events are set up).
Status PerfStat::command(const char* what) {
    std::string cmd = std::string(what) + "\n";
    if (write(ctl_, cmd.data(), cmd.size()) != ssize_t(cmd.size()))
        return make_error("perf control FIFO", errno);
    for (int i = 0; i < 100; ++i) {
        pollfd p{ack_, POLLIN, 0};
        if (poll(&p, 1, 100) == 1) {
            char buf[16];
            ssize_t n = read(ack_, buf, sizeof buf);
            if (n > 0 && std::string(buf, std::size_t(n)).find("ack") == 0) return ok_status();
        }
        int st;
        if (child_ && child_->poll(&st)) {
            child_.reset();
            return make_error(
                fmt::format("perf stat exited with status {} before it acknowledged {}", st, what),
                ECHILD);
        }
    }
    return make_error(fmt::format("perf stat did not acknowledge {} within 10 s", what), ETIMEDOUT);
}

Result<double> time_under_perf_stat(const std::string& event,
                                    const std::function<Result<double>()>& timed, double expected) {
    auto p = PerfStat::start(event);
    if (!p) return p.error();
    if (auto st = p->enable(); !st) return st.error();
    auto ns = timed();
    if (auto st = p->disable(); !st) return st.error();
    auto hits = p->stop();
    if (!hits) return hits.error();
    if (ns && double(*hits) < expected)
        return make_error(fmt::format("perf counted {} hits of {}, fewer than the {:.0f} triggered",
                                      *hits, event, expected),
                          EIO);
    return ns;
}

// --- bpftrace --------------------------------------------------------------------------------

Result<Bpftrace> Bpftrace::start(const char* script) {
    Bpftrace b;
    for (auto& [id, p] : all_progs()) b.before.insert(id);
    char tmpl[] = "/tmp/hotline-bench-bpftrace-XXXXXX";
    int fd = mkstemp(tmpl);
    if (fd < 0) return make_error("mkstemp", errno);
    b.out_path = tmpl;
    SpawnOptions so;
    so.die_with_parent = true;
    so.stdout_fd = fd;
    auto c = ChildProcess::spawn({"bpftrace", "-e", script}, so);
    close(fd);
    if (!c) return c.error();
    b.child.emplace(std::move(*c));
    for (int i = 0; i < 300; ++i) {  // up to 30 s: bpftrace compiles with LLVM first
        int st;
        if (b.child->poll(&st)) {
            b.child.reset();
            return make_error(fmt::format("bpftrace exited with status {}", st), ECHILD);
        }
        std::ifstream f(b.out_path);
        std::stringstream ss;
        ss << f.rdbuf();
        if (ss.str().find("Attaching") != std::string::npos) {
            usleep(500000);  // the message precedes the attach itself
            return b;
        }
        usleep(100000);
    }
    return make_error("bpftrace did not attach within 30 s", ETIMEDOUT);
}

std::map<std::uint32_t, ProgStat> Bpftrace::stats() const {
    auto now = all_progs();
    for (auto id : before) now.erase(id);
    return now;
}

std::map<std::string, std::uint64_t> Bpftrace::stop_and_sum() {
    if (child) stop(*child);
    child.reset();
    std::map<std::string, std::uint64_t> sums;
    std::ifstream f(out_path);
    static const std::regex entry(R"(^@(\w*)\[[^\]]*\]: (\d+)\s*$)");
    std::string line;
    std::smatch m;
    while (std::getline(f, line))
        if (std::regex_match(line, m, entry))
            sums[m[1].str()] += std::strtoull(m[2].str().c_str(), nullptr, 10);
    return sums;
}

Bpftrace::~Bpftrace() {
    if (child) stop(*child);
    if (!out_path.empty()) unlink(out_path.c_str());
}

// bpftrace 0.17 can lose a SIGINT (one landing between its check of the exit
// flag and its epoll_wait, which never returns for a script that prints
// nothing): SIGINT again until it exits, SIGKILL after 10 s.
void Bpftrace::stop(ChildProcess& c) {
    int st;
    for (int i = 0; i < 50; ++i) {
        c.signal(SIGINT);
        for (int j = 0; j < 20; ++j) {
            if (c.poll(&st)) return;
            usleep(10000);
        }
    }
    fmt::print("bench_overhead: bpftrace did not exit on SIGINT within 10 s: killed\n");
    c.signal(SIGKILL);
    c.wait();
}

Bpftrace::Bpftrace(Bpftrace&& o) noexcept
    : child(std::move(o.child)), before(std::move(o.before)), out_path(std::move(o.out_path)) {
    o.child.reset();
    o.out_path.clear();
}

}  // namespace overhead
