// SPDX-License-Identifier: Apache-2.0
// The batched trigger: each program's price per hit against an empty one and
// perf's own counting, and the run statistics' price.
#include "overhead.hpp"
#include "peers.hpp"
#include "trigger.skel.h"

namespace overhead {

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
    return time_under_perf_stat(kTriggerEvent, [&]() -> Result<double> { return time_batches(rig); },
                                rig.loops * rig.batches);
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
// perf counting the same tracepoint; each measurement is batches of LOOPS
// triggers from one BPF_PROG_TEST_RUN each.
Result<TriggerRows> run_trigger(int rounds, int batches, unsigned loops, bool with_perf,
                                std::vector<std::string>& notes) {
    unblock_sigurg();
    LibbpfCapture cap;
    SkelGuard<hl_trigger_bpf> s(hl_trigger_bpf::open());
    if (!s) return make_error("trigger benchmark: open", errno);
    s->rodata->hl_trigger_loops = loops;
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
    // The smoke only checks that every variant runs and counts: 10k triggers a batch.
    const unsigned loops = smoke ? 10000 : 100000;
    auto tr = run_trigger(rounds, smoke ? 2 : 8, loops, perf, notes);
    fmt::print("\n== batched trigger: tp_btf/signal_generate fired {}k times per BPF_PROG_TEST_RUN, {} rounds, "
               "thread CPU ns\n",
               loops / 1000, rounds);
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

}  // namespace overhead
