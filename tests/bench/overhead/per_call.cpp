// SPDX-License-Identifier: Apache-2.0
// The comparison table: what each observer adds to one call of a syscall that
// fires a tracepoint, in a tight user-space loop, over the same loop with
// nothing attached (ebpf_exporter's benchmark in kind).  The loop calls
// tgkill(self, SIGURG): SIGURG is ignored by default, so each call fires
// signal:signal_generate once and queues nothing.
#include <sched.h>
#include <sys/syscall.h>

#include "hotline/probe/prog_stats.hpp"
#include "overhead.hpp"
#include "peers.hpp"
#include "trigger.skel.h"

namespace overhead {

namespace {

const char* kCallEvent = "signal:signal_generate";

// bpftrace doing what hotline's programs do on the tracepoint: counting per
// CPU, and counting with an owner per object (the signalled task) rewritten
// only when it changes, each change counted per CPU.
const char* kCallCountScript = "tracepoint:signal:signal_generate { @[cpu] = count(); }";
const char* kCallTrackScript =
    "tracepoint:signal:signal_generate {"
    "  @n[cpu] = count();"
    "  $o = @owner[args->pid];"
    "  if ($o != cpu + 1) { if ($o != 0) { @handoffs[cpu] = count(); } @owner[args->pid] = cpu + "
    "1; }"
    "}";

enum class Observer { kNone, kProgram, kPerf, kBpftrace };

struct CallVariant {
    const char* name;
    const char* attach;  // what is attached, as the table says it
    Observer kind;
    bpf_program* prog = nullptr;
    const char* script = nullptr;
};

struct CallRow {
    std::vector<double> ns_per_call, added, ns_per_run;
};
using CallRows = std::map<std::string, CallRow>;

struct CallRig {
    int batches;
    unsigned calls;
};

// The median thread CPU time per call over the batches: time the machine's
// other work takes on this CPU is not counted, the programs run in the call's
// context are.
double time_calls(const CallRig& rig) {
    const pid_t pid = getpid(), tid = pid_t(syscall(SYS_gettid));
    std::vector<double> per;
    for (int b = 0; b < rig.batches; ++b) {
        timespec t0, t1;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
        for (unsigned i = 0; i < rig.calls; ++i) syscall(SYS_tgkill, pid, tid, SIGURG);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
        double ns = double(t1.tv_sec - t0.tv_sec) * 1e9 + double(t1.tv_nsec - t0.tv_nsec);
        per.push_back(ns / double(rig.calls));
    }
    return spread(per).median;
}

// Run time per run of the programs in STATS between two reads.
double ns_per_run(const std::map<std::uint32_t, ProgStat>& a,
                  const std::map<std::uint32_t, ProgStat>& b) {
    std::uint64_t cnt = 0, ns = 0;
    for (auto& [id, p] : b)
        if (auto it = a.find(id); it != a.end()) {
            cnt += p.run_cnt - it->second.run_cnt;
            ns += p.run_time_ns - it->second.run_time_ns;
        }
    return cnt ? double(ns) / double(cnt) : 0;
}

// One batch with the run statistics on: the observer's programs' own time per run.
void add_run_time(const CallRig& rig,
                  const std::function<std::map<std::uint32_t, ProgStat>()>& progs, CallRow& row) {
    if (!g_run_stats.on()) return;
    auto a = progs();
    time_calls({1, rig.calls});
    double ns = ns_per_run(a, progs());
    g_run_stats.off();
    if (ns > 0) row.ns_per_run.push_back(ns);
}

Status counted_every_call(const char* who, std::uint64_t counted, double triggered) {
    if (double(counted) >= triggered) return ok_status();
    return make_error(fmt::format("{} counted {} hits of {}, fewer than the {:.0f} calls", who,
                                  counted, kCallEvent, triggered),
                      EIO);
}

Result<double> time_under_program(const CallRig& rig, const CallVariant& v, CallRow& row) {
    bpf_link* link = bpf_program__attach(v.prog);
    if (!link) return make_error(fmt::format("attach {}", v.name), errno);
    double ns = time_calls(rig);
    const int fd = bpf_program__fd(v.prog);
    add_run_time(
        rig,
        [fd, &v] {
            std::map<std::uint32_t, ProgStat> one;
            if (auto st = prog_run_stats(fd)) one[0] = {v.name, st->run_cnt, st->run_time_ns};
            return one;
        },
        row);
    bpf_link__destroy(link);
    return ns;
}

Result<double> time_under_perf(const CallRig& rig) {
    return time_under_perf_stat(
        kCallEvent, [&]() -> Result<double> { return time_calls(rig); },
        double(rig.calls) * rig.batches);
}

Result<double> time_under_bpftrace(const CallRig& rig, const CallVariant& v, CallRow& row) {
    auto b = Bpftrace::start(v.script);
    if (!b) return b.error();
    double ns = time_calls(rig);
    add_run_time(
        rig, [&b] { return b->stats(); }, row);
    auto sums = b->stop_and_sum();
    std::uint64_t counted = sums.count("n") ? sums["n"] : sums[""];
    if (auto st = counted_every_call(v.name, counted, double(rig.calls) * (rig.batches + 1)); !st)
        return st.error();
    return ns;
}

Result<double> time_variant(const CallRig& rig, const CallVariant& v, CallRow& row) {
    switch (v.kind) {
        case Observer::kNone:
            return time_calls(rig);
        case Observer::kProgram:
            return time_under_program(rig, v, row);
        case Observer::kPerf:
            return time_under_perf(rig);
        case Observer::kBpftrace:
            return time_under_bpftrace(rig, v, row);
    }
    return make_error("unknown observer", EINVAL);
}

// One round: every variant once, in an order rotated by the round number, each
// against the unattached loop of the same round.
Status call_round(const CallRig& rig, const std::vector<CallVariant>& vs, int round,
                  CallRows& out) {
    std::map<std::string, double> ns;
    for (std::size_t i = 0; i < vs.size(); ++i) {
        const CallVariant& v = vs[(i + std::size_t(round)) % vs.size()];
        g_run_stats.off();
        auto r = time_variant(rig, v, out[v.name]);
        if (!r)
            return make_error(fmt::format("{}: {}", v.name, r.error().message()), r.error().err);
        ns[v.name] = *r;
        out[v.name].ns_per_call.push_back(*r);
    }
    for (auto& v : vs)
        if (v.kind != Observer::kNone) out[v.name].added.push_back(ns[v.name] - ns["none"]);
    return ok_status();
}

// The loop stays on the CPU it starts on: a migration in a batch would time two CPUs' caches.
struct PinnedThread {
    cpu_set_t old{};
    bool pinned = false;
    PinnedThread() {
        if (sched_getaffinity(0, sizeof old, &old)) return;
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(sched_getcpu(), &one);
        pinned = sched_setaffinity(0, sizeof one, &one) == 0;
    }
    ~PinnedThread() {
        if (pinned) sched_setaffinity(0, sizeof old, &old);
    }
};

// S null: the table's descriptions only.
std::vector<CallVariant> call_variants(hl_trigger_bpf* s, bool perf, bool bpftrace) {
    std::vector<CallVariant> vs = {{"none", "nothing attached", Observer::kNone},
                                   {"empty", "tp_btf, an empty program", Observer::kProgram,
                                    s ? s->progs.hl_trig_empty : nullptr},
                                   {"count", "tp_btf, hotline's counting", Observer::kProgram,
                                    s ? s->progs.hl_trig_count : nullptr},
                                   {"track", "tp_btf, hotline's counting + handoff tracking",
                                    Observer::kProgram, s ? s->progs.hl_trig_handoff : nullptr}};
    if (perf) vs.push_back({"perf", "perf stat -e signal:signal_generate -a", Observer::kPerf});
    if (bpftrace) {
        vs.push_back({"bpftrace-count", "tracepoint, bpftrace @[cpu] = count()",
                      Observer::kBpftrace, nullptr, kCallCountScript});
        vs.push_back({"bpftrace-track", "tracepoint, bpftrace, the same tracking",
                      Observer::kBpftrace, nullptr, kCallTrackScript});
    }
    return vs;
}

Result<CallRows> run_calls(int rounds, const CallRig& rig, bool perf, bool bpftrace) {
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;  // ignored by default: the tracepoint fires, nothing is queued
    sigaction(SIGURG, &dfl, nullptr);
    LibbpfCapture cap;
    SkelGuard<hl_trigger_bpf> s(hl_trigger_bpf::open());
    if (!s) return make_error("per call: open", errno);
    if (int err = hl_trigger_bpf::load(s.get())) {
        Error e = make_error("per call: load", err);
        e.detail = cap.tail(6);
        return e;
    }
    PinnedThread pin;
    auto vs = call_variants(s.get(), perf, bpftrace);
    CallRows out;
    Status st = ok_status();
    for (int r = 0; r < rounds && st; ++r) st = call_round(rig, vs, r, out);
    g_run_stats.on();
    if (!st) return st.error();
    return out;
}

double median_of(CallRows& rows, const char* v, std::vector<double> CallRow::*f) {
    return rows.count(v) ? spread(rows[v].*f).median : 0;
}

// The ratios a reader compares: hotline's programs against bpftrace's doing the
// same, per call added and per run (run statistics), and tracking over empty.
json call_ratios(CallRows& rows) {
    json r = json::object();
    for (auto [a, b] : {std::pair{"count", "bpftrace-count"}, std::pair{"track", "bpftrace-track"},
                        std::pair{"track", "empty"}, std::pair{"count", "perf"}}) {
        double added_a = median_of(rows, a, &CallRow::added),
               added_b = median_of(rows, b, &CallRow::added);
        double run_a = median_of(rows, a, &CallRow::ns_per_run),
               run_b = median_of(rows, b, &CallRow::ns_per_run);
        if (added_b <= 0 && run_b <= 0) continue;
        std::string key = fmt::format("{}/{}", a, b);
        json j;
        if (added_b > 0) j["added_ns_per_call"] = added_a / added_b;
        if (run_b > 0) j["run_stats_ns_per_run"] = run_a / run_b;
        fmt::print("  {:<22} added ns/call {:>6}   ns/run {:>6}\n", key,
                   added_b > 0 ? fmt::format("{:.2f}", added_a / added_b) : "-",
                   run_b > 0 ? fmt::format("{:.2f}", run_a / run_b) : "-");
        r[key] = j;
    }
    return r;
}

}  // namespace

json per_call_section(bool smoke, int pairs, bool perf, bool bpftrace) {
    int rounds = smoke ? 1 : std::max(8, pairs);
    CallRig rig{smoke ? 2 : 5, smoke ? 2000u : 100000u};
    std::optional<TracefsMount> tracefs;
    if (perf || bpftrace) tracefs.emplace();  // both name tracepoints through tracefs
    auto rows = run_calls(rounds, rig, perf, bpftrace);
    fmt::print(
        "\n== per call: {} fired by a tight tgkill(self, SIGURG) loop on one CPU, {} rounds of "
        "{}x{}k calls, "
        "thread CPU ns\n",
        kCallEvent, rounds, rig.batches, rig.calls / 1000);
    json js = {{"event", kCallEvent},
               {"rounds", rounds},
               {"calls_per_batch", rig.calls},
               {"rows", json::array()}};
    if (!rows) {
        failed("per call: " + rows.error().message());
        return js;
    }
    fmt::print("{:<15} {:<48} {:>22} {:>22} {:>20}\n", "observer", "attached", "ns/call",
               "added ns/call", "run stats ns/run");
    for (auto& v :
         {"none", "empty", "count", "track", "perf", "bpftrace-count", "bpftrace-track"}) {
        if (!rows->count(v)) continue;
        CallRow& row = (*rows)[v];
        Spread c = spread(row.ns_per_call), a = spread(row.added), n = spread(row.ns_per_run);
        std::string attach;
        for (auto& cv : call_variants(nullptr, true, true))
            if (cv.name == std::string(v)) attach = cv.attach;
        fmt::print("{:<15} {:<48} {:>22} {:>22} {:>20}\n", v, attach, fmt_spread(c),
                   a.n ? fmt_spread(a) : "-", n.n ? fmt_spread(n) : "-");
        json jr = {{"observer", v}, {"attached", attach}, {"ns_per_call", to_json(c)}};
        if (a.n) jr["added_ns_per_call"] = to_json(a);
        if (n.n) jr["run_stats_ns_per_run"] = to_json(n);
        js["rows"].push_back(jr);
    }
    js["ratios"] = call_ratios(*rows);
    return js;
}

}  // namespace overhead
