// What hotline costs, side by side in one run: per-hit price of each program next
// to an empty one and to perf's own tracepoint counting, workload throughput
// with/without hotline and bpftrace (ABAB), the workload loss of a full default
// session to +-1% (many short interleaved pairs, CPU per operation, checked
// against the kernel's run statistics), and the agent's attach time, first
// report, CPU and RSS.  Prints every goal missed and records it in the JSON;
// exits non-zero only when a part fails or measures nothing, never for a miss.
//
//   bench_overhead [--smoke] [--pairs N] [--duration S] [--json FILE] [--hotline BIN]
//                  [--no-bpftrace] [--no-perf] [--only cost,trigger,workload,loss,agent]
//                  [--loss-rounds N] [--loss-duration S] [--loss-sample-hz N]
//                  [--loss-time-every-run] [--loss-arm every-run,count,no-handoffs,no-workq,floor]
//                  [--loss-scenarios tcp-crr,dst-refcount]
#include <bpf/bpf.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "bench_util.hpp"
#include "hotline/probe/cost.hpp"
#include "hotline/probe/prog_stats.hpp"
#include "hotline/workload/scenario.hpp"
#include "hotline/probe/session.hpp"
#include "hotline/base/util.hpp"
#include "hotline/workload/workload.hpp"
#include "hotline/probe/bpf_skeleton.hpp"
#include "floor.skel.h"
#include "trigger.skel.h"

using namespace hotline;
using namespace hotline::bench;
using nlohmann::json;

namespace {

// Targets missed, collected for the closing note (never a failure: speed is
// reported, not asserted); parts that failed or measured nothing (the exit status).
std::vector<std::string> g_missed, g_failures;
void failed(std::string what) {
    fmt::print("FAILED {}\n", what);
    g_failures.push_back(std::move(what));
}
void check(const std::string& what, double value, double budget, bool le = true) {
    if (!(value > 0)) return failed(fmt::format("{}: measured {}", what, value));
    bool ok = le ? value <= budget : value >= budget;
    if (!ok) g_missed.push_back(fmt::format("{}: {:.3g} (target {} {:.3g})", what, value, le ? "<=" : ">=", budget));
}

// --- BPF program statistics by id (for bpftrace's programs) -------------------------------

struct ProgStat {
    std::string name;
    std::uint64_t run_cnt = 0, run_time_ns = 0;
};

std::map<std::uint32_t, ProgStat> all_progs() {
    std::map<std::uint32_t, ProgStat> out;
    std::uint32_t id = 0;
    while (bpf_prog_get_next_id(id, &id) == 0) {
        int fd = bpf_prog_get_fd_by_id(id);
        if (fd < 0) continue;
        bpf_prog_info info{};  // the name as well as the run statistics
        std::uint32_t len = sizeof info;
        if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0)
            out[id] = {info.name, info.run_cnt, info.run_time_ns};
        close(fd);
    }
    return out;
}

// --- workload runs --------------------------------------------------------------------------

struct RunResult {
    double rate = 0;          // messages (dst-refcount) or connections (tcp-crr) per second
    double cpu_us_per_msg = 0;  // busy CPU time of the scenario's CPUs per message
    double hits_per_s = 0;    // probe runs per second (hotline or bpftrace)
    double ns_per_hit = 0;    // their mean run time
    double ns_per_hit_peer = 0;  // floor only: over bpftrace's three tracepoints alone
    std::map<std::string, ProgStat> programs;  // a session's programs over the run, by name
};

Result<RunResult> run_scenario_once(const std::string& name, double secs) {
    ScenarioOptions o;
    o.name = name;
    o.duration_s = secs;
    auto r = run_scenario(o, {});
    if (!r) return r.error();
    if (r->stop_reason.rfind("stopped by", 0) == 0) return make_error("interrupted", EINTR);
    RunResult rr;
    double n = name == "tcp-crr" ? double(r->connections) : double(r->messages);
    rr.rate = r->seconds > 0 ? n / r->seconds : 0;
    double cpu_s = r->cpu.busy_pct / 100.0 * double(r->cpu.cpus.size()) * r->seconds;
    rr.cpu_us_per_msg = n > 0 ? cpu_s / n * 1e6 : 0;
    return rr;
}

// A hit is a run of a proxy (`hl_tp_*`: the tracepoints bpftrace's script counts,
// and tcp_destroy_sock); the price of the hits is the run time of every program
// the events run, the workqueue attribution's included (hl_wq_queue on the same
// tracepoint, hl_wq_execute when the item runs, hl_wq_irq).  Only the sampling
// handler is left out: it runs at a fixed rate, not per event, and is priced in
// the loss section.
bool is_proxy_hit(const std::string& program) { return program.rfind("hl_tp_", 0) == 0; }
bool priced_per_hit(const std::string& program) { return program != "hl_sample"; }

// Hit rate over every program; ns/hit: the run time of the programs the events
// run, over the proxies' hits.
void sum_cost(const Interval& iv, double secs, RunResult& rr) {
    std::uint64_t all = 0, hits = 0, ns = 0;
    for (auto& c : iv.d.cost) {
        auto& p = rr.programs[c.program];
        p.run_cnt += c.run_cnt;
        p.run_time_ns += c.run_time_ns;
        all += c.run_cnt;
        if (is_proxy_hit(c.program)) hits += c.run_cnt;
        if (priced_per_hit(c.program)) ns += c.run_time_ns;
    }
    rr.hits_per_s = secs > 0 ? double(all) / secs : 0;
    rr.ns_per_hit = hits ? double(ns) / double(hits) : 0;
}

// The floor: empty programs on every tracepoint the session's events run
// (bpf/floor.bpf.c), priced as the session is (every program over the hits of
// the proxies' tracepoints) and over bpftrace's three tracepoints alone, its like
// for like.  What any session with that coverage costs before doing anything.
const std::set<std::string> kFloorProxyHits = {"hl_fl_consume_skb", "hl_fl_kfree_skb", "hl_fl_queue_work",
                                               "hl_fl_tcp_destroy_sock"};
const std::set<std::string> kFloorBpftraceHits = {"hl_fl_consume_skb", "hl_fl_kfree_skb", "hl_fl_queue_work"};

struct FloorDestroy {
    void operator()(hl_floor_bpf* s) const { hl_floor_bpf::destroy(s); }
};
using FloorPrograms = std::unique_ptr<hl_floor_bpf, FloorDestroy>;

// The floor's empty programs, attached until the result is dropped.
Result<FloorPrograms> attach_floor() {
    hotline::LibbpfCapture cap;
    FloorPrograms s(hl_floor_bpf::open_and_load());
    if (!s) return make_error("load the floor's empty programs: " + cap.tail(4), errno);
    if (hl_floor_bpf::attach(s.get()) != 0) return make_error("attach the floor's empty programs: " + cap.tail(4), errno);
    return s;
}

// The default session doing only what bpftrace's script does: counting.
SessionOptions counting_only(SessionOptions so) {
    so.latency = false;
    so.handoffs = false;
    so.workq = false;
    return so;
}

Result<RunResult> run_floor_once(const std::string& scen, double secs) {
    auto s = attach_floor();
    if (!s) return s.error();
    bpf_object* obj = (*s)->obj;
    auto stats_of = [&](const char* n) { return prog_run_stats(obj, n).value_or(ProgRunStats{}); };
    std::map<std::string, ProgRunStats> s0;
    for (bpf_program* p = bpf_object__next_program(obj, nullptr); p; p = bpf_object__next_program(obj, p))
        s0[bpf_program__name(p)] = stats_of(bpf_program__name(p));
    double t0 = monotonic_seconds();
    auto rr = run_scenario_once(scen, secs);
    double el = monotonic_seconds() - t0;
    if (!rr) return rr;
    std::uint64_t all = 0, hits = 0, ns = 0, peer_hits = 0, peer_ns = 0;
    for (auto& [name, a] : s0) {
        ProgRunStats b = stats_of(name.c_str());
        std::uint64_t cnt = b.run_cnt - a.run_cnt, t = b.run_time_ns - a.run_time_ns;
        all += cnt;
        ns += t;
        if (kFloorProxyHits.count(name)) hits += cnt;
        if (kFloorBpftraceHits.count(name)) {
            peer_hits += cnt;
            peer_ns += t;
        }
    }
    rr->hits_per_s = el > 0 ? double(all) / el : 0;
    rr->ns_per_hit = hits ? double(ns) / double(hits) : 0;
    rr->ns_per_hit_peer = peer_hits ? double(peer_ns) / double(peer_hits) : 0;
    return rr;
}

const char* kBpftraceScript =
    "tracepoint:skb:consume_skb, tracepoint:skb:kfree_skb, tracepoint:workqueue:workqueue_queue_work "
    "{ @[cpu] = count(); }";

// bpftrace attached for the length of one run; its programs are those loaded
// since it started that are still there once it says it attached.
struct Bpftrace {
    std::optional<ChildProcess> child;
    std::set<std::uint32_t> before;
    std::string out_path;

    static Result<Bpftrace> start() {
        Bpftrace b;
        for (auto& [id, p] : all_progs()) b.before.insert(id);
        char tmpl[] = "/tmp/hotline-bench-bpftrace-XXXXXX";
        int fd = mkstemp(tmpl);
        if (fd < 0) return make_error("mkstemp", errno);
        b.out_path = tmpl;
        SpawnOptions so;
        so.die_with_parent = true;
        so.stdout_fd = fd;
        auto c = ChildProcess::spawn({"bpftrace", "-e", kBpftraceScript}, so);
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
    std::map<std::uint32_t, ProgStat> stats() const {
        auto now = all_progs();
        for (auto id : before) now.erase(id);
        return now;
    }
    ~Bpftrace() {
        if (child) stop(*child);
        if (!out_path.empty()) unlink(out_path.c_str());
    }
    // bpftrace 0.17 can lose a SIGINT (one landing between its check of the exit
    // flag and its epoll_wait, which never returns for a script that prints
    // nothing): SIGINT again until it exits, SIGKILL after 10 s.
    static void stop(ChildProcess& c) {
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
    Bpftrace() = default;
    Bpftrace(Bpftrace&& o) noexcept : child(std::move(o.child)), before(std::move(o.before)), out_path(std::move(o.out_path)) {
        o.child.reset();
        o.out_path.clear();
    }
};

// bpftrace finds tracepoints through tracefs, which this machine does not mount
// at boot: mounted for the bench and unmounted again if it was not there.
struct TracefsMount {
    bool mounted = false;
    TracefsMount() {
        if (access("/sys/kernel/tracing/events", F_OK) == 0) return;
        mounted = mount("nodev", "/sys/kernel/tracing", "tracefs", 0, nullptr) == 0;
        if (!mounted) fmt::print("bench_overhead: cannot mount tracefs: {}\n", std::strerror(errno));
    }
    ~TracefsMount() {
        if (mounted) umount2("/sys/kernel/tracing", MNT_DETACH);
    }
};

// --- BPF run statistics ------------------------------------------------------------------------

// On while this process holds the fd from BPF_ENABLE_STATS (kernel.bpf_stats_enabled
// is never written).  The trigger timings drop it: the two clock reads around each
// program run are the statistics' price, not the program's, and perf pays no such price.
struct RunStatsSwitch {
    int fd = -1;
    bool on() {
        if (fd < 0) fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
        return fd >= 0;
    }
    void off() {
        if (fd >= 0) close(fd);
        fd = -1;
    }
    ~RunStatsSwitch() { off(); }
} g_run_stats;

// --- perf's own tracepoint counting -------------------------------------------------------------

// `perf stat -e EVENT -a`: the kernel counting a tracepoint's hits in its perf
// events, no BPF.  Started with its events off (-D -1) and switched through its
// control FIFOs, so the timing starts only once the kernel is counting.
class PerfStat {
public:
    static Result<PerfStat> start(const std::string& event) {
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
        auto c = ChildProcess::spawn({"perf", "stat", "-e", event, "-a", "-x", ",", "-D", "-1", "--control",
                                      "fifo:" + ctl + "," + ack, "-o", p.dir_ + "/out"},
                                     so);
        close(so.stdout_fd);
        if (!c) return c.error();
        p.child_.emplace(std::move(*c));
        return p;
    }
    Status enable() { return command("enable"); }
    Status disable() { return command("disable"); }
    // Ends perf and returns the hits it counted while enabled.
    Result<std::uint64_t> stop() {
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
        return make_error(fmt::format("perf stat (status {}) printed no count for {}", st, event_), EIO);
    }
    PerfStat() = default;
    PerfStat(PerfStat&& o) noexcept
        : child_(std::move(o.child_)), dir_(std::move(o.dir_)), event_(std::move(o.event_)), ctl_(o.ctl_), ack_(o.ack_) {
        o.child_.reset();
        o.dir_.clear();
        o.ctl_ = o.ack_ = -1;
    }
    ~PerfStat() {
        if (child_) {
            child_->signal(SIGINT);
            child_->wait();
        }
        if (ctl_ >= 0) close(ctl_);
        if (ack_ >= 0) close(ack_);
        if (!dir_.empty()) std::filesystem::remove_all(dir_);
    }

private:
    // Writes a control command and waits for perf's "ack" (up to 10 s: perf reads
    // its FIFO only once its events are set up).
    Status command(const char* what) {
        std::string cmd = std::string(what) + "\n";
        if (write(ctl_, cmd.data(), cmd.size()) != ssize_t(cmd.size())) return make_error("perf control FIFO", errno);
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
                return make_error(fmt::format("perf stat exited with status {} before it acknowledged {}", st, what),
                                  ECHILD);
            }
        }
        return make_error(fmt::format("perf stat did not acknowledge {} within 10 s", what), ETIMEDOUT);
    }
    std::optional<ChildProcess> child_;
    std::string dir_, event_;
    int ctl_ = -1, ack_ = -1;
};

// --- batched trigger --------------------------------------------------------------------------

struct TriggerRow {
    std::vector<double> ns_per_trigger;  // thread CPU time of the batch / triggers
    std::vector<double> ns_per_run;      // the attached program's own run time per hit
    std::vector<double> overhead;        // ns per trigger minus the unattached baseline of the round
};
using TriggerRows = std::map<std::string, TriggerRow>;

// What runs on signal_generate while a batch is timed: nothing, one of the
// bench's BPF bodies, or perf counting the tracepoint.  `run_stats`: timed with
// the kernel's run statistics on, as a session runs its programs, so that the
// difference to the same body without them is their price per program run.
struct TriggerVariant {
    const char* name;
    bpf_program* prog;
    bool perf;
    bool run_stats = false;
};
const char* kTriggerEvent = "signal:signal_generate";

struct TriggerRig {
    int driver;
    double loops;
    int batches;
    std::vector<std::string> notes;
};

// The median CPU time per trigger of `batches` driver runs: thread CPU, so time
// the machine's other work takes on this CPU is not counted.
Result<double> time_batches(const TriggerRig& rig) {
    std::vector<double> per;
    for (int b = 0; b < rig.batches; ++b) {
        LIBBPF_OPTS(bpf_test_run_opts, topts);
        timespec t0, t1;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
        int err = bpf_prog_test_run_opts(rig.driver, &topts);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
        if (err) return make_error("trigger benchmark: BPF_PROG_TEST_RUN", errno);
        double ns = double(t1.tv_sec - t0.tv_sec) * 1e9 + double(t1.tv_nsec - t0.tv_nsec);
        per.push_back(ns / rig.loops);
    }
    return spread(per).median;
}

// perf counting the tracepoint while the batches run; its count must cover them.
Result<double> time_under_perf(const TriggerRig& rig) {
    auto p = PerfStat::start(kTriggerEvent);
    if (!p) return p.error();
    if (auto st = p->enable(); !st) return st.error();
    auto ns = time_batches(rig);
    if (auto st = p->disable(); !st) return st.error();
    auto hits = p->stop();
    if (!hits) return hits.error();
    if (ns && double(*hits) < rig.loops * rig.batches)
        return make_error(fmt::format("perf counted {} hits of {}, fewer than the {:.0f} triggered", *hits,
                                      kTriggerEvent, rig.loops * rig.batches),
                          EIO);
    return ns;
}

// A BPF body attached: timed with run statistics off, then one batch with them on
// for the program's own run time per hit.
Result<double> time_under_prog(TriggerRig& rig, const TriggerVariant& v, TriggerRow& row) {
    bpf_link* link = bpf_program__attach(v.prog);
    if (!link) return make_error(fmt::format("trigger benchmark: attach {}", v.name), errno);
    int fd = bpf_program__fd(v.prog);
    auto s0 = prog_run_stats(fd).value_or(ProgRunStats{});
    auto ns = time_batches(rig);
    auto s1 = prog_run_stats(fd).value_or(ProgRunStats{});
    if (!v.run_stats && s1.run_cnt > s0.run_cnt && rig.notes.empty())
        rig.notes.push_back("BPF run statistics stay on without this bench (another process or "
                            "kernel.bpf_stats_enabled): the BPF timings include their clock reads");
    if (ns && g_run_stats.on()) {
        LIBBPF_OPTS(bpf_test_run_opts, topts);
        bpf_prog_test_run_opts(rig.driver, &topts);
        auto s2 = prog_run_stats(fd).value_or(ProgRunStats{});
        if (s2.run_cnt > s1.run_cnt)
            row.ns_per_run.push_back(double(s2.run_time_ns - s1.run_time_ns) / double(s2.run_cnt - s1.run_cnt));
    }
    bpf_link__destroy(link);
    return ns;
}

// One round: every variant once, in an order rotated by the round number.
Status trigger_round(TriggerRig& rig, const std::vector<TriggerVariant>& vs, int round, TriggerRows& out) {
    std::map<std::string, double> ns;
    for (std::size_t i = 0; i < vs.size(); ++i) {
        const TriggerVariant& v = vs[(i + std::size_t(round)) % vs.size()];
        g_run_stats.off();  // every variant but the one that prices them is timed without them
        if (v.run_stats && !g_run_stats.on()) return make_error(std::string(v.name) + ": BPF_ENABLE_STATS", errno);
        Result<double> r = v.perf ? time_under_perf(rig) : v.prog ? time_under_prog(rig, v, out[v.name]) : time_batches(rig);
        if (!r) return make_error(fmt::format("{}: {}", v.name, r.error().message()), r.error().err);
        ns[v.name] = *r;
        out[v.name].ns_per_trigger.push_back(*r);
    }
    for (auto& v : vs)
        if (std::string(v.name) != "none") out[v.name].overhead.push_back(ns[v.name] - ns["none"]);
    return ok_status();
}

// The driver signals this thread: SIGURG must be unblocked with its default
// (ignore) action for the tracepoint to fire without anything being queued.
void unblock_sigurg() {
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGURG, &dfl, nullptr);
    sigset_t urg;
    sigemptyset(&urg);
    sigaddset(&urg, SIGURG);
    sigprocmask(SIG_UNBLOCK, &urg, nullptr);
}

// Rounds of: no program, empty, count, handoff on tp_btf/signal_generate, and
// perf counting the same tracepoint; each measurement is batches of 100k triggers
// from one BPF_PROG_TEST_RUN each.
Result<TriggerRows> run_trigger(int rounds, int batches, bool with_perf, std::vector<std::string>& notes) {
    unblock_sigurg();
    LibbpfCapture cap;
    SkelGuard<hl_trigger_bpf> s(hl_trigger_bpf::open());
    if (!s) return make_error("trigger benchmark: open", errno);
    if (int err = hl_trigger_bpf::load(s.get())) {
        Error e = make_error("trigger benchmark: load", err);
        e.detail = cap.tail(6);
        return e;
    }
    TriggerRig rig{bpf_program__fd(s->progs.hl_trigger_driver), double(s->rodata->hl_trigger_loops), batches, {}};
    std::vector<TriggerVariant> vs = {{"none", nullptr, false},
                                      {"empty", s->progs.hl_trig_empty, false},
                                      {"count", s->progs.hl_trig_count, false},
                                      {"handoff", s->progs.hl_trig_handoff, false},
                                      {"empty+stats", s->progs.hl_trig_empty, false, true}};
    if (with_perf) vs.push_back({"perf", nullptr, true});
    TriggerRows out;
    Status st = ok_status();
    for (int r = 0; r < rounds && st; ++r) st = trigger_round(rig, vs, r, out);
    g_run_stats.on();
    notes = rig.notes;
    if (!st) return make_error("trigger benchmark: " + st.error().message(), st.error().err);
    if (s->bss->hl_trigger_errors)
        return make_error(fmt::format("trigger benchmark: {} signals not sent", s->bss->hl_trigger_errors), EIO);
    return out;
}

// Hotline's counting next to perf's, in the trigger: added CPU ns per hit of each.
struct PeerRatio {
    double count_ns = 0, perf_ns = 0;
    double ratio() const { return perf_ns > 0 ? count_ns / perf_ns : 0; }
};
PeerRatio g_count_vs_perf;

void print_trigger_row(const char* v, TriggerRow& row, double empty_run, json& jt) {
    Spread t = spread(row.ns_per_trigger), o = spread(row.overhead), rs = spread(row.ns_per_run);
    double ratio = empty_run > 0 && rs.n ? rs.median / empty_run : 0;
    double budget = cost_budget(v);
    fmt::print("{:<12} {:>24} {:>24} {:>24} {:>14} {:>8}{}\n", v, fmt_spread(t), o.n ? fmt_spread(o) : "-",
               rs.n ? fmt_spread(rs) : "-", ratio > 0 && std::string(v) != "empty" ? fmt::format("{:.2f}", ratio) : "",
               budget > 0 ? fmt::format("<={:.1f}", budget) : "", budget > 0 && ratio > budget ? "  MISSED" : "");
    if (budget > 0) check(fmt::format("trigger {} ns/hit x empty", v), ratio, budget);
    json jr = {{"program", v}, {"ns_per_trigger", to_json(t)}};
    if (std::string(v) != "none") jr["added_ns_per_hit"] = to_json(o);
    if (rs.n) jr["run_stats_ns_per_hit"] = to_json(rs);
    if (budget > 0) jr.update({{"ratio_to_empty", ratio}, {"target", budget}});
    jt.push_back(jr);
}

// The default session's programs summed over its rounds: ns a run, runs a second,
// and their share of the ns per hit, so the per-hit figure can be taken apart.
json print_session_programs(const std::string& scen, const std::vector<RunResult>& runs, double secs) {
    std::map<std::string, ProgStat> sum;
    std::uint64_t hits = 0;
    for (auto& r : runs)
        for (auto& [name, p] : r.programs) {
            sum[name].run_cnt += p.run_cnt;
            sum[name].run_time_ns += p.run_time_ns;
            if (is_proxy_hit(name)) hits += p.run_cnt;
        }
    json out = json::array();
    double total_s = secs * double(runs.size());
    for (auto& [name, p] : sum) {
        // A program whose event did not fire in these runs has no cost per run to show.
        if (p.run_cnt == 0) {
            fmt::print("  {} hotline program {:<24} did not run\n", scen, name);
            continue;
        }
        double ns_run = double(p.run_time_ns) / double(p.run_cnt);
        double ns_hit = hits ? double(p.run_time_ns) / double(hits) : 0;
        bool per_hit = priced_per_hit(name);
        fmt::print("  {} hotline program {:<24} {:>8.0f} ns/run {:>9.0f} runs/s {:>8}\n", scen, name, ns_run,
                   total_s > 0 ? double(p.run_cnt) / total_s : 0,
                   per_hit ? fmt::format("{:.0f} ns/hit", ns_hit) : "not per hit");
        out.push_back({{"program", name}, {"ns_per_run", ns_run}, {"runs", p.run_cnt}, {"in_ns_per_hit", per_hit}});
    }
    return out;
}

// The kernel's run statistics (BPF_ENABLE_STATS, on in every session for its cost
// report) read the clock twice around each program run, outside the run time they
// record: the loss section adds this price to the programs' own account.
double g_run_stats_price_ns = 0;

// The same empty body timed with and without run statistics in each round: the
// median of the per-round differences.
void print_run_stats_price(const TriggerRow& without, const TriggerRow& with, json& jt) {
    std::vector<double> d;
    for (std::size_t i = 0; i < without.ns_per_trigger.size() && i < with.ns_per_trigger.size(); ++i)
        d.push_back(with.ns_per_trigger[i] - without.ns_per_trigger[i]);
    if (d.empty()) return;
    Spread p = spread(d);
    g_run_stats_price_ns = std::max(0.0, p.median);
    fmt::print("  run statistics' price per program run (empty+stats - empty, per round): {}\n", fmt_spread(p));
    jt.push_back({{"program", "run statistics' price"}, {"run_stats_price_ns_per_run", to_json(p)}});
}

json trigger_section(bool smoke, int pairs, bool perf) {
    int rounds = smoke ? 2 : std::max(10, pairs);
    std::vector<std::string> notes;
    std::optional<TracefsMount> tracefs;
    if (perf) tracefs.emplace();  // perf names tracepoints through tracefs
    auto tr = run_trigger(rounds, smoke ? 2 : 8, perf, notes);
    fmt::print("\n== batched trigger: tp_btf/signal_generate fired 100k times per BPF_PROG_TEST_RUN, {} rounds, "
               "thread CPU ns\n",
               rounds);
    json jt = json::array();
    if (!tr) {
        failed("trigger: " + tr.error().message());
        return jt;
    }
    fmt::print("{:<12} {:>24} {:>24} {:>24} {:>14} {:>8}\n", "variant", "ns/trigger", "added ns/hit", "run stats ns/hit",
               "x empty", "target");
    // The ratio to empty uses the programs' own run time: the added CPU time is
    // right in kind but rides on the ~1 us signal path and its noise.
    double empty_run = spread((*tr)["empty"].ns_per_run).median;
    for (const char* v : {"none", "empty", "count", "handoff", "empty+stats", "perf"})
        if (tr->count(v)) print_trigger_row(v, (*tr)[v], empty_run, jt);
    for (auto& n : notes) fmt::print("  note: {}\n", n);
    print_run_stats_price((*tr)["empty"], (*tr)["empty+stats"], jt);
    if (perf) {
        g_count_vs_perf = {spread((*tr)["count"].overhead).median, spread((*tr)["perf"].overhead).median};
        fmt::print("  added ns per hit, hotline's counting program / perf stat -e {} -a: {:.1f} / {:.1f} = {:.2f}\n",
                   kTriggerEvent, g_count_vs_perf.count_ns, g_count_vs_perf.perf_ns, g_count_vs_perf.ratio());
    }
    return jt;
}

// --- workload loss of the full default session, to 1% ---------------------------------------------

// One run of the workload on a prepared network: operations per second and the
// workload threads' CPU per operation; with a session open, the run time of all
// its programs over the same window, per operation.
struct LossRun {
    double rate = 0, cpu_ns_per_op = 0, bpf_ns_per_op = 0, bpf_runs_per_op = 0;
    double timed_runs_per_op = 0;  // the runs that paid the statistics' clock reads
};

Result<LossRun> loss_run(Scenario& sc, const Session* s) {
    std::optional<Snapshot> a;
    if (s) {
        auto r = s->read();
        if (!r) return r.error();
        a = std::move(*r);
    }
    if (auto st = sc.begin_run(); !st) return st.error();
    while (!sc.done()) usleep(10000);
    auto res = sc.end_run();
    if (!res) return res.error();
    double ops = scenario_ops(*res);
    if (!(ops > 0) || !res->cpu.threads_measured || !(res->seconds > 0))
        return make_error("the workload measured no operations or no thread CPU time", EIO);
    LossRun lr;
    lr.rate = ops / res->seconds;
    lr.cpu_ns_per_op = (res->cpu.sender_pct + res->cpu.receiver_pct) / 100 * res->seconds * 1e9 / ops;
    if (s) {
        auto b = s->read();
        if (!b) return b.error();
        std::uint64_t ns = 0, runs = 0, timed = 0;
        for (auto& c : delta(*a, *b).d.cost) {
            ns += c.run_time_ns;
            runs += c.run_cnt;
            timed += c.timed_runs;
        }
        lr.bpf_ns_per_op = double(ns) / ops;
        lr.bpf_runs_per_op = double(runs) / ops;
        lr.timed_runs_per_op = double(timed) / ops;
    }
    return lr;
}

// The session of the loss section: the default one (what `hotline record` opens),
// or with the sampling mechanism at another rate (--loss-sample-hz), which
// separates its interrupts' cost from the rest of the session's, or timing every
// program run (--loss-time-every-run), as sessions did before their statistics
// window, which prices the window's saving.
SessionOptions g_loss_session;

// The loss section's arms: without and with its session (the goal's pair), and
// extra arms (--loss-arm) run in the same rounds, so that what each costs is
// measured against the same drift of the machine as the loss itself.
enum class LossArm { kNone, kSession, kEveryRun, kCount, kNoHandoffs, kNoWorkq, kFloor };

struct ExtraArmSpec {
    LossArm arm;
    const char* name;  // --loss-arm NAME, the JSON key
    const char* what;
    // The arm's session from the loss section's; none: the floor's empty programs,
    // which have no account here (the section's statistics window times sessions only).
    SessionOptions (*session)(SessionOptions);
};
// every-run prices the statistics window; floor, count, no-handoffs and no-workq
// split the loss into what any program on the session's tracepoints costs, what
// counting adds, and what handoff tracking and the workqueue attribution add.
constexpr ExtraArmSpec kExtraArms[] = {
    {LossArm::kEveryRun, "every-run", "the session timing every program run",
     [](SessionOptions o) { o.time_every_run = true; return o; }},
    {LossArm::kCount, "count", "a counting-only session (no latency, handoffs or workqueue attribution)",
     counting_only},
    {LossArm::kNoHandoffs, "no-handoffs", "the session without handoff tracking (record --no-handoffs)",
     [](SessionOptions o) { o.handoffs = false; return o; }},
    {LossArm::kNoWorkq, "no-workq", "the session without the workqueue attribution (record --no-workq)",
     [](SessionOptions o) { o.workq = false; return o; }},
    {LossArm::kFloor, "floor", "empty programs on the session's tracepoints (bench/bpf/floor.bpf.c)", nullptr},
};
std::vector<ExtraArmSpec> g_loss_extra_arms;

std::optional<ExtraArmSpec> extra_arm_named(const std::string& name) {
    for (const ExtraArmSpec& a : kExtraArms)
        if (name == a.name) return a;
    return std::nullopt;
}

// What the loss section's session is, for its goal lines.
std::string loss_session_name() {
    if (g_loss_session.time_every_run) return "session timing every run (--loss-time-every-run)";
    if (g_loss_session.sample_freq != SessionOptions{}.sample_freq) return "session with --loss-sample-hz";
    return "full default session";
}

// The loss section's session around one run.
Result<LossRun> loss_run_with_session(Scenario& sc, const KernelInfo& k, const Topology& topo,
                                      const SessionOptions& opts = g_loss_session) {
    auto s = Session::open(opts, k, topo);
    if (!s) return s.error();
    return loss_run(sc, s->get());
}

// An estimate in percent with its 95% confidence interval.
struct Pct {
    double estimate = 0, low = 0, high = 0;
    double half_width() const { return (high - low) / 2; }
};
json to_json(const Pct& p) {
    return {{"estimate", p.estimate}, {"low", p.low}, {"high", p.high}, {"half_width", p.half_width()}};
}
std::string fmt_pct(const Pct& p) {
    return fmt::format("{:+.2f}% [{:+.2f}% .. {:+.2f}%], half-width {:.2f}%", p.estimate, p.low, p.high,
                       p.half_width());
}

// Paired rounds -> the change of `f` with the session, in percent, from the mean
// of the per-pair log ratios (with / without); `sign` -1 turns a drop into a loss.
Pct paired_change(const std::vector<std::pair<LossRun, LossRun>>& pairs, double LossRun::*f, double sign) {
    std::vector<double> logs;
    for (auto& [without, with] : pairs) logs.push_back(std::log(with.*f / (without.*f)));
    MeanCi m = mean_ci95(logs);
    auto pct = [&](double l) { return sign * (std::exp(l) - 1) * 100; };
    Pct p{pct(m.mean), pct(m.low()), pct(m.high())};
    if (p.low > p.high) std::swap(p.low, p.high);
    return p;
}

// The kernel's own account: the programs' run time per operation over the
// workload's CPU per operation without them (each session round against itself).
// With `ns_per_run` set, the same share for a price paid on every program run
// instead of the run time (the run statistics' clock reads).
Pct bpf_share(const std::vector<std::pair<LossRun, LossRun>>& pairs, double ns_per_run = 0) {
    std::vector<double> v;
    for (auto& pr : pairs) {
        const LossRun& with = pr.second;
        double ns = ns_per_run > 0 ? with.timed_runs_per_op * ns_per_run : with.bpf_ns_per_op;
        v.push_back(ns / (with.cpu_ns_per_op - with.bpf_ns_per_op) * 100);
    }
    MeanCi m = mean_ci95(v);
    return {m.mean, m.low(), m.high()};
}

// An extra arm's runs against the two others of the same rounds.
struct ExtraArm {
    ExtraArmSpec spec;
    std::vector<std::pair<LossRun, LossRun>> vs_none;     // (without a session, this arm)
    std::vector<std::pair<LossRun, LossRun>> vs_session;  // (the loss section's session, this arm)
    Pct cpu_per_op, over_session;
    std::optional<Pct> bpf;  // the kernel's account, for arms that open a session
};

struct LossResult {
    std::string scenario;
    std::vector<std::pair<LossRun, LossRun>> pairs;  // (without, with) the session
    Pct throughput, cpu_per_op, bpf;
    std::vector<ExtraArm> extra;
};

// The arms of round r: rotated by r / 2, reversed in odd rounds, so that over
// 2n rounds each arm runs before each other one equally often (with three arms,
// the six orders).
std::vector<LossArm> loss_round_order(int r) {
    std::vector<LossArm> arms = {LossArm::kNone, LossArm::kSession};
    for (const ExtraArmSpec& a : g_loss_extra_arms) arms.push_back(a.arm);
    std::rotate(arms.begin(), arms.begin() + (r / 2) % arms.size(), arms.end());
    if (r % 2) std::reverse(arms.begin(), arms.end());
    return arms;
}

Result<LossRun> loss_arm_run(LossArm arm, Scenario& sc, const KernelInfo& k, const Topology& topo) {
    if (arm == LossArm::kNone) return loss_run(sc, nullptr);
    if (arm == LossArm::kSession) return loss_run_with_session(sc, k, topo);
    for (const ExtraArmSpec& a : kExtraArms) {
        if (a.arm != arm) continue;
        if (a.session) return loss_run_with_session(sc, k, topo, a.session(g_loss_session));
        auto floor = attach_floor();
        if (!floor) return floor.error();
        return loss_run(sc, nullptr);
    }
    return make_error("unknown loss arm", EINVAL);
}

void finish_extra_arm(ExtraArm& e) {
    e.cpu_per_op = paired_change(e.vs_none, &LossRun::cpu_ns_per_op, 1);
    e.over_session = paired_change(e.vs_session, &LossRun::cpu_ns_per_op, 1);
    if (e.spec.session) e.bpf = bpf_share(e.vs_none);
}

// Rounds of short runs, without and with a full default session and in every
// extra arm, the order rotating so a drift of the machine's load falls on every
// arm alike.
Result<LossResult> measure_loss(const std::string& scen, int rounds, double secs, const KernelInfo& k,
                                const Topology& topo) {
    ScenarioOptions so;
    so.name = scen;
    so.duration_s = secs;
    auto sc = Scenario::prepare(so);
    if (!sc) return sc.error();
    LossResult lr{scen, {}, {}, {}, {}, {}};
    for (const ExtraArmSpec& a : g_loss_extra_arms) lr.extra.push_back({a, {}, {}, {}, {}, {}});
    for (int r = 0; r < rounds; ++r) {
        std::map<LossArm, LossRun> runs;
        for (LossArm arm : loss_round_order(r)) {
            auto run = loss_arm_run(arm, **sc, k, topo);
            if (!run) return run.error();
            runs[arm] = *run;
        }
        lr.pairs.emplace_back(runs[LossArm::kNone], runs[LossArm::kSession]);
        for (ExtraArm& e : lr.extra) {
            e.vs_none.emplace_back(runs[LossArm::kNone], runs[e.spec.arm]);
            e.vs_session.emplace_back(runs[LossArm::kSession], runs[e.spec.arm]);
        }
    }
    (void)(*sc)->stop();
    lr.throughput = paired_change(lr.pairs, &LossRun::rate, -1);
    lr.cpu_per_op = paired_change(lr.pairs, &LossRun::cpu_ns_per_op, 1);
    lr.bpf = bpf_share(lr.pairs);
    for (ExtraArm& e : lr.extra) finish_extra_arm(e);
    return lr;
}

// An extra arm's lines and JSON: its loss, what it costs over the session in the
// same rounds (negative: less), and the kernel's account where it has one.
json report_extra_arm(const ExtraArm& e) {
    fmt::print("  {} ({}):\n", e.spec.name, e.spec.what);
    fmt::print("    loss: CPU per operation added {}\n", fmt_pct(e.cpu_per_op));
    fmt::print("    over the session              {}  (this arm / the session, same rounds)\n", fmt_pct(e.over_session));
    if (e.bpf)
        fmt::print("    BPF run time per operation    {}  (the kernel's run statistics, same runs)\n", fmt_pct(*e.bpf));
    json rounds = json::array();
    for (auto& [without, with] : e.vs_none) {
        json r = {{"cpu_ns_per_op", with.cpu_ns_per_op}, {"rate", with.rate}};
        if (e.bpf) {
            r["bpf_ns_per_op"] = with.bpf_ns_per_op;
            r["bpf_runs_per_op"] = with.bpf_runs_per_op;
        }
        rounds.push_back(r);
    }
    json j = {{"what", e.spec.what},
              {"cpu_per_op_added_pct", to_json(e.cpu_per_op)},
              {"over_session_pct", to_json(e.over_session)},
              {"rounds", rounds}};
    if (e.bpf) j["bpf_run_time_pct"] = to_json(*e.bpf);
    return j;
}

constexpr double kLossTargetPct = 1.0;       // the goal: at most 1% lost
constexpr double kLossHalfWidthPct = 1.0;    // known to +-1% (95% confidence)

// Prints one scenario's loss and records the misses.  The loss is the workload's
// CPU per operation added by the session: on a shared machine the throughput of
// a run moves with everyone else's load, the CPU its own threads spend per
// operation hardly does.  A loss above 1%, or an interval wider than +-1% (the
// loss is then not known to 1%), is a miss.
json report_loss(const LossResult& lr, double secs) {
    fmt::print("{} ({} pairs of {:.1f} s runs):\n", lr.scenario, lr.pairs.size(), secs);
    fmt::print("  loss: CPU per operation added {}\n", fmt_pct(lr.cpu_per_op));
    fmt::print("  BPF run time per operation    {}  (the kernel's run statistics, same runs)\n", fmt_pct(lr.bpf));
    std::optional<Pct> stats;
    if (g_run_stats_price_ns > 0) {
        stats = bpf_share(lr.pairs, g_run_stats_price_ns);
        fmt::print("  run statistics' clock reads   {}  (timed program runs per operation x the trigger's {:.1f} ns)\n",
                   fmt_pct(*stats), g_run_stats_price_ns);
    } else {
        fmt::print("  run statistics' clock reads   not priced (the trigger section prices them: --only trigger,loss)\n");
    }
    fmt::print("  throughput lost               {}  (moves with the machine's other load)\n", fmt_pct(lr.throughput));
    bool agree = lr.bpf.estimate >= lr.cpu_per_op.low - lr.bpf.half_width() &&
                 lr.bpf.estimate <= lr.cpu_per_op.high + lr.bpf.half_width();
    fmt::print("  the kernel's account {} the measured CPU per operation\n", agree ? "agrees with" : "DISAGREES with");
    std::string what = fmt::format("{} workload loss of the {}", lr.scenario, loss_session_name());
    const Pct& loss = lr.cpu_per_op;
    if (loss.estimate > kLossTargetPct)
        g_missed.push_back(fmt::format("{}: {:.2f}% (target <= {:.0f}%)", what, loss.estimate, kLossTargetPct));
    if (loss.half_width() > kLossHalfWidthPct)
        g_missed.push_back(fmt::format("{}: known to +-{:.2f}% only (target +-{:.0f}%; more --loss-rounds)", what,
                                       loss.half_width(), kLossHalfWidthPct));
    json j = {{"scenario", lr.scenario}, {"pairs", lr.pairs.size()},
              {"throughput_loss_pct", to_json(lr.throughput)}, {"cpu_per_op_added_pct", to_json(lr.cpu_per_op)},
              {"bpf_run_time_pct", to_json(lr.bpf)}, {"kernel_account_agrees", agree},
              {"sample_hz", g_loss_session.sample_freq}, {"time_every_run", g_loss_session.time_every_run}};
    if (stats) j["run_stats_price_pct"] = to_json(*stats);
    for (const ExtraArm& e : lr.extra) j["arms"][e.spec.name] = report_extra_arm(e);
    json rounds = json::array();
    for (auto& [without, with] : lr.pairs)
        rounds.push_back({{"rate_without", without.rate}, {"rate_with", with.rate},
                          {"cpu_ns_per_op_without", without.cpu_ns_per_op}, {"cpu_ns_per_op_with", with.cpu_ns_per_op},
                          {"bpf_ns_per_op", with.bpf_ns_per_op}, {"bpf_runs_per_op", with.bpf_runs_per_op},
                          {"timed_runs_per_op", with.timed_runs_per_op}});
    j["rounds"] = rounds;
    return j;
}

json loss_section(const std::vector<std::string>& scenarios, int rounds, double secs, const KernelInfo& k,
                  const Topology& topo) {
    fmt::print("\n== workload loss of the full default session: interleaved pairs without / with, "
               "mean of per-pair log ratios, 95% CI (Student's t)\n");
    if (g_loss_session.sample_freq != SessionOptions{}.sample_freq)
        fmt::print("  NOT the default session: sampling at {} Hz per CPU (--loss-sample-hz)\n",
                   g_loss_session.sample_freq);
    if (g_loss_session.time_every_run)
        fmt::print("  NOT the default session: every program run timed (--loss-time-every-run)\n");
    for (const ExtraArmSpec& a : g_loss_extra_arms)
        fmt::print("  an extra arm in every round (--loss-arm {}): {}\n", a.name, a.what);
    // The session's own statistics window, not this process's: the bench's
    // descriptor would time every run of the "with" arm.
    g_run_stats.off();
    json jl = json::array();
    for (const std::string& scen : scenarios) {
        auto lr = measure_loss(scen, rounds, secs, k, topo);
        if (!lr) {
            failed(fmt::format("loss {}: {}", scen, lr.error().message()));
            continue;
        }
        jl.push_back(report_loss(*lr, secs));
    }
    g_run_stats.on();
    return jl;
}

// --- agent ------------------------------------------------------------------------------------

std::uint64_t proc_cpu_ns(pid_t pid) {
    std::uint64_t total = 0;
    std::error_code ec;
    for (auto& e : std::filesystem::directory_iterator(fmt::format("/proc/{}/task", pid), ec)) {
        std::ifstream f(e.path() / "schedstat");
        std::uint64_t ns = 0;
        if (f >> ns) total += ns;
    }
    return total;
}

long status_kb(pid_t pid, const char* key) {
    std::ifstream f(fmt::format("/proc/{}/status", pid));
    std::string line;
    while (std::getline(f, line))
        if (line.rfind(key, 0) == 0) return std::atol(line.c_str() + std::strlen(key) + 1);
    return 0;
}

constexpr const char* kAttachIdle = "attach, idle (start to plan printed)";
constexpr const char* kFirstReportIdle = "first report, idle";

struct AgentRun {
    double attach_s = 0, first_report_s = 0, cpu_pct = 0, rss_mb = 0, peak_rss_mb = 0;
};

// `hotline record` as users run it, under a dst-refcount load in this process.
Result<AgentRun> run_agent(const std::string& bin, double secs) {
    int out[2], err[2];
    if (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC)) return make_error("pipe", errno);
    SpawnOptions so;
    so.die_with_parent = true;
    so.stdout_fd = out[1];
    so.stderr_fd = err[1];
    double t0 = monotonic_seconds();
    auto c = ChildProcess::spawn({bin, "record", "--duration", fmt::format("{}", secs), "--interval", "1s"}, so);
    close(out[1]);
    close(err[1]);
    if (!c) {
        close(out[0]);
        close(err[0]);
        return c.error();
    }
    AgentRun a;
    std::string obuf, ebuf;
    std::uint64_t cpu0 = 0;
    double tcpu0 = 0, tcpu1 = 0;
    std::uint64_t cpu1 = 0;
    double next_sample = 0;
    bool open_o = true, open_e = true;
    while (open_o || open_e) {
        pollfd p[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
        poll(p, 2, 100);
        char buf[4096];
        for (int i = 0; i < 2; ++i) {
            if (!(p[i].revents & (POLLIN | POLLHUP))) continue;
            ssize_t n = read(p[i].fd, buf, sizeof buf);
            if (n <= 0) {
                (i ? open_e : open_o) = false;
                continue;
            }
            (i ? ebuf : obuf).append(buf, std::size_t(n));
        }
        double now = monotonic_seconds();
        // Attached: the plan lines are printed right after the session opened.
        if (a.attach_s == 0 && ebuf.find('\n') != std::string::npos) {
            a.attach_s = now - t0;
            cpu0 = proc_cpu_ns(c->pid());
            tcpu0 = now;
            next_sample = now + 1;
        }
        if (a.first_report_s == 0 && obuf.find("interval 1") != std::string::npos) a.first_report_s = now - t0;
        if (a.attach_s > 0 && now >= next_sample && now < tcpu0 + secs - 0.5) {
            // The last full sample before the summary and JSON writing at the end.
            cpu1 = proc_cpu_ns(c->pid());
            tcpu1 = now;
            a.rss_mb = double(status_kb(c->pid(), "VmRSS:")) / 1024;
            a.peak_rss_mb = std::max(a.peak_rss_mb, double(status_kb(c->pid(), "VmHWM:")) / 1024);
            next_sample = now + 1;
        }
    }
    close(out[0]);
    close(err[0]);
    int st = c->wait();
    if (st != 0) return make_error(fmt::format("hotline record exited with status {}: {}", st, ebuf), ECHILD);
    if (tcpu1 > tcpu0) a.cpu_pct = double(cpu1 - cpu0) / 1e9 / (tcpu1 - tcpu0) * 100;
    return a;
}

// The share of the machine's CPU time spent busy over the next `secs`
// (/proc/stat): whether "idle" held, which the bench cannot make so.
double busy_share_pct(double secs) {
    auto read = [] {
        std::ifstream f("/proc/stat");
        std::string cpu;
        std::uint64_t v[8] = {}, total = 0;
        f >> cpu;
        for (auto& x : v) f >> x, total += x;
        return std::pair{total - v[3] - v[4], total};  // not idle, not iowait
    };
    auto [b0, t0] = read();
    std::this_thread::sleep_for(std::chrono::duration<double>(secs));
    auto [b1, t1] = read();
    return t1 > t0 ? 100.0 * double(b1 - b0) / double(t1 - t0) : 0;
}

// One line of the agent table: a figure of each run, its unit and its goal (0: none).
struct AgentLine {
    const char* name;
    double AgentRun::*f;
    double budget;
    const char* unit;
};

json agent_table(const std::vector<AgentRun>& runs, std::initializer_list<AgentLine> lines) {
    json ja;
    for (auto& l : lines) {
        std::vector<double> v;
        for (auto& x : runs) v.push_back(x.*l.f);
        Spread s = spread(v);
        bool miss = l.budget > 0 && s.n && s.median > l.budget;
        fmt::print("{:<40} {:>26} {:<14}{}{}\n", l.name, fmt_spread(s, 3), l.unit,
                   l.budget > 0 ? fmt::format(" target <= {}", l.budget) : "", miss ? "  MISSED" : "");
        if (l.budget > 0)
            check(fmt::format("agent {}", l.name), s.median, l.budget);
        else if (!(s.median > 0))
            failed(fmt::format("agent {}: measured {}", l.name, s.median));
        ja[l.name] = {{"value", to_json(s)}, {"unit", l.unit}};
        if (l.budget > 0) ja[l.name]["target"] = l.budget;
    }
    return ja;
}

// Start-up as the goal names it (a short record with no workload; the busy share
// before says whether the machine was otherwise idle), then the agent's steady
// cost under the dst-refcount load it profiles, where its start-up is reported
// too but measures the CPU share it gets against that load.
json agent_section(const std::string& bin, int n, double rec_s) {
    std::vector<AgentRun> idle, loaded;
    double busy = busy_share_pct(1);
    for (int r = 0; r < n; ++r) {
        auto i = run_agent(bin, 2);
        if (!i) return failed("agent, idle: " + i.error().message()), json::object();
        idle.push_back(*i);
    }
    for (int r = 0; r < n; ++r) {
        ScenarioOptions so;
        so.name = "dst-refcount";
        so.duration_s = rec_s + 5;
        auto load = Scenario::start(so);
        if (!load) return failed("agent: " + load.error().message()), json::object();
        auto a = run_agent(bin, rec_s);
        (void)(*load)->stop();
        if (!a) return failed("agent: " + a.error().message()), json::object();
        loaded.push_back(*a);
    }
    fmt::print("\n== agent start-up: `hotline record --interval 1s` with no workload, {} runs (machine {:.1f}% busy in the "
               "second before)\n",
               n, busy);
    json ja = agent_table(idle, {{kAttachIdle, &AgentRun::attach_s, 0.2, "s"},
                                 {kFirstReportIdle, &AgentRun::first_report_s, 1.2, "s"}});
    ja["busy_pct_before"] = busy;
    fmt::print("\n== agent: `hotline record --interval 1s` for {:.0f} s under dst-refcount, {} runs\n", rec_s, n);
    ja.update(agent_table(loaded, {{"attach under load", &AgentRun::attach_s, 0, "s"},
                                   {"first report under load", &AgentRun::first_report_s, 0, "s"},
                                   {"CPU, 1 s intervals", &AgentRun::cpu_pct, 0.5, "% of one core"},
                                   {"RSS, steady", &AgentRun::rss_mb, 32, "MB"},
                                   {"RSS, peak", &AgentRun::peak_rss_mb, 32, "MB"}}));
    return ja;
}

std::string default_hotline(const char* argv0) {
    std::error_code ec;
    auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        auto p = self.parent_path().parent_path().parent_path() / "hotline";  // build/tests/bench -> build
        if (std::filesystem::exists(p)) return p.string();
    }
    (void)argv0;
    return "hotline";
}

// --- against the goals --------------------------------------------------------------------------

// The floor against bpftrace per hit, both as the session is priced and over
// bpftrace's three tracepoints alone (ratios of the medians): a per-hit goal
// below these is below the price of running any program there.
json floor_ratios(const std::string& scen, const std::map<std::string, std::vector<RunResult>>& res) {
    auto median = [&](const char* mode, double RunResult::*f) {
        std::vector<double> v;
        if (auto it = res.find(mode); it != res.end())
            for (auto& x : it->second) v.push_back(x.*f);
        return spread(v).median;
    };
    double bt = median("bpftrace", &RunResult::ns_per_hit);
    if (bt <= 0) return json::object();
    double as_session = median("floor", &RunResult::ns_per_hit) / bt;
    double like_for_like = median("floor", &RunResult::ns_per_hit_peer) / bt;
    fmt::print("  {} floor/bpftrace: ns per hit, empty programs where the session's run {:.3f}; "
               "on bpftrace's three tracepoints {:.3f}\n",
               scen, as_session, like_for_like);
    return {{"ns_per_hit", as_session}, {"ns_per_hit_bpftrace_tracepoints", like_for_like}};
}

// One line per goal of the run's sections, read back from their JSON; each miss
// was recorded by its section (a miss is reported, never the exit status).
struct GoalLine {
    std::string what, value, target;
    bool missed;
};

void workload_goals(const json& out, std::vector<GoalLine>& lines) {
    for (auto& js : out.value("workload", json::array()))
        for (const char* hm : {"hotline", "hotline-count"}) {
            std::string key = std::string("ratio_") + hm + "_bpftrace";
            if (!js.contains(key)) continue;
            double r = js[key]["ns_per_hit"].get<double>();
            bool full = std::string(hm) == "hotline";
            // The floor beside the full session's figure: what an empty program there costs.
            std::string floor;
            if (full && js.contains("ratio_floor_bpftrace") && js["ratio_floor_bpftrace"].contains("ns_per_hit"))
                floor = fmt::format(" (floor {:.2f})", js["ratio_floor_bpftrace"]["ns_per_hit"].get<double>());
            lines.push_back({fmt::format("per hit / bpftrace, {}, {}", full ? "full session" : "counting only",
                                         js["scenario"].get<std::string>()),
                             fmt::format("{:.2f}{}", r, floor), full ? "<= 0.3" : "", full && r > 0.3});
        }
}

std::vector<GoalLine> goal_lines(const json& out) {
    std::vector<GoalLine> lines;
    for (auto& jl : out.value("loss", json::array())) {
        auto& c = jl["cpu_per_op_added_pct"];
        bool full = jl.value("sample_hz", 0) == SessionOptions{}.sample_freq && !jl.value("time_every_run", false);
        lines.push_back({std::string(full ? "loss, full default session, " : "loss, NOT the default session, ") +
                             jl["scenario"].get<std::string>(),
                         fmt::format("{:+.2f}% +- {:.2f}%", c["estimate"].get<double>(), c["half_width"].get<double>()),
                         "<= 1%, +- 1%",
                         c["estimate"].get<double>() > kLossTargetPct || c["half_width"].get<double>() > kLossHalfWidthPct});
    }
    workload_goals(out, lines);
    if (g_count_vs_perf.perf_ns != 0)
        lines.push_back({"per hit / perf tracepoint counting, counting program (trigger)",
                         fmt::format("{:.1f} / {:.1f} ns = {:.2f}", g_count_vs_perf.count_ns, g_count_vs_perf.perf_ns,
                                     g_count_vs_perf.ratio()),
                         "", false});
    if (out.contains("agent"))
        for (auto [name, key] : {std::pair{"agent attach, idle", kAttachIdle},
                                 std::pair{"agent first report, idle", kFirstReportIdle}}) {
            if (!out["agent"].contains(key)) continue;  // the section failed: its failure is the exit status
            // The goal as the agent section judged it (agent_table writes it beside the figure).
            double v = out["agent"][key]["value"]["median"].get<double>(), goal = out["agent"][key]["target"].get<double>();
            lines.push_back({name, fmt::format("{:.3f} s", v), fmt::format("<= {} s", goal), v > goal});
        }
    return lines;
}

json summary_section(const json& out) {
    fmt::print("\n== against the goals\n");
    json js = json::array();
    for (auto& l : goal_lines(out)) {
        fmt::print("{:<64} {:>26} {:>14}{}\n", l.what, l.value, l.target, l.missed ? "  MISSED" : "");
        js.push_back({{"goal", l.what}, {"value", l.value}, {"target", l.target}, {"met", !l.missed}});
    }
    return js;
}

}  // namespace

// --loss-arm NAME[,NAME]: false (after saying why) for a name no extra arm has.
bool add_loss_arms(const std::string& list) {
    for (const std::string& name : split_list(list)) {
        auto a = extra_arm_named(name);
        if (!a) {
            std::vector<std::string> names;
            for (const ExtraArmSpec& e : kExtraArms) names.push_back(e.name);
            fmt::print(stderr, "bench_overhead: no loss arm named '{}': give one of {}\n", name, fmt::join(names, ", "));
            return false;
        }
        bool seen = false;
        for (const ExtraArmSpec& e : g_loss_extra_arms) seen |= e.arm == a->arm;
        if (!seen) g_loss_extra_arms.push_back(*a);
    }
    return true;
}

int main(int argc, char** argv) {
    bool smoke = false, bpftrace = true, perf = true;
    int pairs = 5, loss_rounds = 30;
    double secs = 5, loss_secs = 1;
    std::string json_path = "bench-overhead.json", hotline_bin = default_hotline(argv[0]);
    std::set<std::string> only;
    std::vector<std::string> loss_scenarios = {"tcp-crr", "dst-refcount"};
    Args args("bench_overhead",
              "bench_overhead [--smoke] [--pairs N] [--duration S] [--json FILE] "
              "[--hotline BIN] [--no-bpftrace] [--no-perf] [--only cost,trigger,workload,loss,agent] "
              "[--loss-rounds N] [--loss-duration S] [--loss-sample-hz N] [--loss-time-every-run] "
              "[--loss-arm every-run,count,no-handoffs,no-workq,floor] [--loss-scenarios tcp-crr,dst-refcount]",
              argc, argv);
    while (args.next()) {
        if (args.is("--smoke")) smoke = true;
        else if (args.is("--pairs")) pairs = args.int_value();
        else if (args.is("--duration")) secs = args.double_value();
        else if (args.is("--json")) json_path = args.value();
        else if (args.is("--hotline")) hotline_bin = args.value();
        else if (args.is("--no-bpftrace")) bpftrace = false;
        else if (args.is("--no-perf")) perf = false;
        else if (args.is("--loss-rounds")) loss_rounds = args.int_value();
        else if (args.is("--loss-duration")) loss_secs = args.double_value();
        else if (args.is("--loss-sample-hz")) g_loss_session.sample_freq = args.int_value();
        else if (args.is("--loss-time-every-run")) g_loss_session.time_every_run = true;
        else if (args.is("--loss-every-run-arm")) add_loss_arms("every-run");  // the older spelling
        else if (args.is("--loss-arm")) {
            if (!add_loss_arms(args.value())) return 2;
        } else if (args.is("--loss-scenarios")) loss_scenarios = split_list(args.value());
        else if (args.is("--only")) {
            for (const std::string& s : split_list(args.value())) only.insert(s);
        } else {
            return args.usage();
        }
    }
    if (smoke) {
        pairs = 1;
        secs = 1;
        loss_rounds = 2;
        // A second: the session's statistics window (100 ms at a random point
        // of each second) falls in every run, so the account is never empty.
        loss_secs = 1;
        // The smoke checks that every part runs, every extra loss arm included.
        g_loss_extra_arms.clear();
        for (const ExtraArmSpec& a : kExtraArms)
            if (a.arm != LossArm::kEveryRun || !g_loss_session.time_every_run) g_loss_extra_arms.push_back(a);
    }
    for (const ExtraArmSpec& a : g_loss_extra_arms)
        if (a.arm == LossArm::kEveryRun && g_loss_session.time_every_run) {
            fmt::print(stderr, "bench_overhead: --loss-arm every-run adds an arm timing every run to the default "
                               "session's; with --loss-time-every-run both arms would be the same: give one of them\n");
            return 2;
        }
    if (loss_scenarios.empty()) {
        fmt::print(stderr, "bench_overhead: --loss-scenarios names no scenario (scenarios: {})\n", scenario_names());
        return 2;
    }
    for (const std::string& scen : loss_scenarios)
        if (!find_scenario(scen)) {
            fmt::print(stderr, "bench_overhead: --loss-scenarios: no scenario named '{}' (scenarios: {})\n", scen,
                       scenario_names());
            return 2;
        }
    if (pairs < 1 || secs <= 0 || loss_rounds < 2 || loss_secs <= 0) {
        fmt::print(stderr, "bench_overhead: --pairs, --duration and --loss-duration must be positive, --loss-rounds at least 2\n");
        return 2;
    }
    auto want = [&](const char* s) { return only.empty() || only.count(s); };
    if (geteuid() != 0) {
        fmt::print(stderr, "bench_overhead: needs root (BPF, network namespaces); run it as root\n");
        return 1;
    }
    if (bpftrace && std::system("command -v bpftrace > /dev/null 2>&1") != 0) {
        fmt::print(stderr, "bench_overhead: bpftrace not installed (apt-get install bpftrace, or --no-bpftrace)\n");
        return 1;
    }
    if (perf && want("trigger") && std::system("perf stat -e task-clock true > /dev/null 2>&1") != 0) {
        fmt::print(stderr, "bench_overhead: perf does not run (apt-get install linux-perf, or --no-perf)\n");
        return 1;
    }
    // Run statistics on for the whole run, bpftrace's programs included; dropped
    // with this fd at exit, so kernel.bpf_stats_enabled is never touched.
    if (!g_run_stats.on()) failed(fmt::format("cannot enable BPF run statistics: {}", std::strerror(errno)));

    KernelInfo k = probe_kernel();
    auto topo = read_topology();
    if (!topo) {
        fmt::print(stderr, "bench_overhead: {}\n", topo.error().message());
        return 1;
    }
    json out = {{"pairs", pairs}, {"duration_s", secs}, {"smoke", smoke}};

    // --- 1. per-hit cost against an empty program ----------------------------------------------
    if (want("cost")) {
        std::map<std::string, std::map<std::string, std::vector<double>>> ns, ratio;  // attach -> variant
        std::vector<std::string> order;
        std::vector<std::string> notes;
        for (int r = 0; r < pairs; ++r) {
            auto rep = measure_cost({}, k, *topo, [&]() -> Status {
                for (const char* s : {"dst-refcount", "tcp-crr"})
                    if (auto rr = run_scenario_once(s, secs / 2); !rr) return rr.error();
                return ok_status();
            });
            if (!rep) {
                failed("cost: " + rep.error().message());
                break;
            }
            notes = rep->notes;
            for (auto& row : rep->rows) {
                if (!ns.count(row.attach)) order.push_back(row.attach);
                for (auto& v : row.variants) {
                    if (!v.run_cnt) continue;
                    ns[row.attach][v.name].push_back(v.ns_per_run());
                    if (v.name != "empty") ratio[row.attach][v.name].push_back(row.ratio(v.name));
                }
            }
        }
        fmt::print("\n== per-hit cost, ns per run (median [min-max] over {} runs), all variants attached at once\n",
                   pairs);
        fmt::print("{:<30} {:<8} {:>24} {:>22} {:>8}\n", "attach point", "variant", "ns/hit", "x empty", "target");
        json jc = json::array();
        for (auto& ap : order) {
            for (const char* v : {"empty", "count", "latency", "handoff"}) {
                if (!ns[ap].count(v)) continue;
                Spread s = spread(ns[ap][v]);
                Spread q = spread(ratio[ap][v]);
                double budget = cost_budget(v);
                std::string tgt = budget > 0 ? fmt::format("<={:.1f}", budget) : "";
                if (budget > 0) check(fmt::format("cost {} {} x empty", ap, v), q.median, budget);
                fmt::print("{:<30} {:<8} {:>24} {:>22} {:>8}{}\n", ap, v, fmt_spread(s), v == std::string("empty") ? "" : fmt_spread(q, 2),
                           tgt, budget > 0 && q.median > budget ? "  MISSED" : "");
                json row = {{"attach", ap}, {"variant", v}, {"ns_per_hit", to_json(s)}};
                if (v != std::string("empty")) row["ratio_to_empty"] = to_json(q);
                if (budget > 0) row["target"] = budget;
                jc.push_back(row);
            }
        }
        for (auto& n : notes) fmt::print("  note: {}\n", n);
        out["cost"] = {{"rows", jc}, {"notes", notes}};
    }

    if (want("trigger")) out["trigger"] = trigger_section(smoke, pairs, perf);

    // --- 2/3. workload overhead, interleaved ------------------------------------------------------
    if (want("workload")) {
        json jw = json::array();
        std::optional<TracefsMount> tracefs;
        if (bpftrace) tracefs.emplace();
        // hotline: the default session (counting, latency, handoffs, sampling, workqueue
        // attribution); hotline-count: counting only, what bpftrace's script does;
        // floor: empty programs where the session's run (run_floor_once).
        std::vector<std::string> modes = {"none", "hotline", "hotline-count", "floor"};
        if (bpftrace) modes.push_back("bpftrace");
        fmt::print("\n== workload overhead: {} rounds of {} interleaved, {:.0f} s each\n", pairs,
                   fmt::join(modes, "/"), secs);
        fmt::print("{:<13} {:<13} {:>26} {:>22} {:>22} {:>18}\n", "scenario", "mode", "rate/s", "CPU us/msg",
                   "probe hits/s", "ns/hit");
        for (const char* scen : {"dst-refcount", "tcp-crr"}) {
            std::map<std::string, std::vector<RunResult>> res;
            for (int r = 0; r < pairs; ++r) {
                // Rotate the order each round so no mode always runs first.
                for (std::size_t m = 0; m < modes.size(); ++m) {
                    const std::string& mode = modes[(m + std::size_t(r)) % modes.size()];
                    Result<RunResult> rr = make_error("not run", EINVAL);
                    if (mode == "none") {
                        rr = run_scenario_once(scen, secs);
                    } else if (mode == "floor") {
                        rr = run_floor_once(scen, secs);
                    } else if (mode == "hotline" || mode == "hotline-count") {
                        SessionOptions so = mode == "hotline" ? SessionOptions{} : counting_only({});
                        auto s = Session::open(so, k, *topo);
                        if (!s) {
                            rr = s.error();
                        } else {
                            auto a = (*s)->read();
                            rr = run_scenario_once(scen, secs);
                            auto b = (*s)->read();
                            if (rr && a && b) {
                                auto iv = delta(*a, *b);
                                sum_cost(iv, iv.seconds(), *rr);
                            }
                        }
                    } else {
                        auto b = Bpftrace::start();
                        if (!b) {
                            rr = b.error();
                        } else {
                            auto s0 = b->stats();
                            double t0 = monotonic_seconds();
                            rr = run_scenario_once(scen, secs);
                            auto s1 = b->stats();
                            double el = monotonic_seconds() - t0;
                            if (rr) {
                                std::uint64_t cnt = 0, ns = 0;
                                for (auto& [id, p] : s1)
                                    if (auto it = s0.find(id); it != s0.end()) {
                                        cnt += p.run_cnt - it->second.run_cnt;
                                        ns += p.run_time_ns - it->second.run_time_ns;
                                    }
                                rr->hits_per_s = double(cnt) / el;
                                rr->ns_per_hit = cnt ? double(ns) / double(cnt) : 0;
                            }
                        }
                    }
                    if (!rr) {
                        failed(fmt::format("workload {} {}: {}", scen, mode, rr.error().message()));
                        continue;
                    }
                    res[mode].push_back(*rr);
                }
            }
            json js = {{"scenario", scen}};
            auto col = [&](const std::string& mode, double RunResult::*f) {
                std::vector<double> v;
                for (auto& x : res[mode]) v.push_back(x.*f);
                return spread(v);
            };
            for (auto& mode : modes) {
                Spread rate = col(mode, &RunResult::rate), cpu = col(mode, &RunResult::cpu_us_per_msg),
                       hits = col(mode, &RunResult::hits_per_s), nsh = col(mode, &RunResult::ns_per_hit);
                fmt::print("{:<13} {:<13} {:>26} {:>22} {:>22} {:>18}\n", scen, mode, fmt_spread(rate, 0),
                           fmt_spread(cpu, 2), mode == "none" ? "-" : fmt_spread(hits, 0),
                           mode == "none" ? "-" : fmt_spread(nsh, 1));
                js[mode] = {{"rate_per_s", to_json(rate)}, {"cpu_us_per_msg", to_json(cpu)}};
                if (mode != "none") js[mode].update({{"hits_per_s", to_json(hits)}, {"ns_per_hit", to_json(nsh)}});
                if (mode == "floor") {
                    Spread peer = col(mode, &RunResult::ns_per_hit_peer);
                    fmt::print("{:<13} {:<13} {:>26} {:>22} {:>22} {:>18}\n", scen, "floor, 3 tps", "", "", "",
                               fmt_spread(peer, 1));
                    js[mode]["ns_per_hit_bpftrace_tracepoints"] = to_json(peer);
                }
            }
            js["hotline_programs"] = print_session_programs(scen, res["hotline"], secs);
            // Ratios of medians, and their spread over the rounds (round i against round i).
            auto ratios = [&](const std::string& a, const std::string& b, double RunResult::*f) {
                std::vector<double> v;
                for (std::size_t i = 0; i < std::min(res[a].size(), res[b].size()); ++i)
                    if (res[b][i].*f > 0) v.push_back(res[a][i].*f / (res[b][i].*f));
                Spread s = spread(v);
                Spread ma = col(a, f), mb = col(b, f);
                double rm = mb.median > 0 ? ma.median / mb.median : 0;
                return std::make_pair(rm, s);
            };
            for (auto& mode : modes) {
                if (mode == "none") continue;
                bool peer = mode == "bpftrace" || mode == "floor";  // no goal of hotline's
                auto [tr, ts] = ratios(mode, "none", &RunResult::rate);
                auto [cr, cs] = ratios(mode, "none", &RunResult::cpu_us_per_msg);
                fmt::print("  {} {}/none: throughput {:.3f} (per round {}), CPU per message {:.3f} (per round {}){}\n",
                           scen, mode, tr, fmt_spread(ts, 3), cr, fmt_spread(cs, 3),
                           !peer && tr > 0 && tr < 0.97 ? "  MISSED (target >= 0.970)" : "");
                if (!peer) check(fmt::format("{} throughput with {} / without", scen, mode), tr, 0.97, false);
                js["ratio_" + mode + "_none"] = {{"throughput", tr}, {"throughput_rounds", to_json(ts)},
                                                 {"cpu_per_msg", cr}, {"cpu_per_msg_rounds", to_json(cs)}};
            }
            if (bpftrace) js["ratio_floor_bpftrace"] = floor_ratios(scen, res);
            for (const char* hm : {"hotline", "hotline-count"}) {
                if (!bpftrace) break;
                auto [hr, hs] = ratios(hm, "bpftrace", &RunResult::ns_per_hit);
                auto [tr, ts] = ratios(hm, "bpftrace", &RunResult::rate);
                // The goal is the full session's; counting only is reported beside it.
                bool goal = std::string(hm) == "hotline";
                fmt::print("  {} {}/bpftrace: ns per hit, every event-driven program {:.3f} (per round {}), "
                           "throughput {:.3f}{}\n",
                           scen, hm, hr, fmt_spread(hs, 3), tr, goal && hr > 0.3 ? "  MISSED (target <= 0.3)" : "");
                if (goal) check(fmt::format("{} per-hit cost {} / bpftrace", scen, hm), hr, 0.3);
                js[std::string("ratio_") + hm + "_bpftrace"] = {
                    {"ns_per_hit", hr}, {"ns_per_hit_rounds", to_json(hs)}, {"throughput", tr}};
            }
            jw.push_back(js);
        }
        out["workload"] = jw;
    }

    if (want("loss")) out["loss"] = loss_section(loss_scenarios, loss_rounds, loss_secs, k, *topo);

    if (want("agent")) out["agent"] = agent_section(hotline_bin, smoke ? 1 : std::min(pairs, 3), smoke ? 3 : std::max(10.0, secs * 2));

    out["summary"] = summary_section(out);
    out["missed"] = g_missed;
    fmt::print("\n");
    if (g_missed.empty()) fmt::print("all targets met\n");
    for (auto& m : g_missed) fmt::print("MISSED {}\n", m);
    g_run_stats.off();
    std::vector<std::string> sections;
    for (const char* part : {"cost", "trigger", "workload", "loss", "agent"})
        if (want(part)) sections.push_back(part);
    sections.push_back("summary");
    // Differences of two timings may be below zero: the added ns per hit and the
    // loss estimates with their bounds (each round's figures stay positive).  The summary is empty when no section
    // with a goal ran (--only cost).
    // An idle machine's busy share may be 0.
    FigureRules rules{{"added_ns_per_hit", "throughput_loss_pct", "cpu_per_op_added_pct", "bpf_run_time_pct",
                       "run_stats_price_pct", "over_session_pct", "run_stats_price_ns_per_run", "busy_pct_before"},
                      {"missed", "notes", "summary"}};
    return finish("bench_overhead", out, json_path, sections, g_failures, rules);
}
