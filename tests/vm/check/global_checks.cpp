// SPDX-License-Identifier: Apache-2.0
// Machine-wide knobs under --allow-global, handoff sampling, the tracepoint
// proxies on two nodes, workqueue attribution, IRQ affinity.
#include "vm_check.hpp"

namespace vmcheck {

// ------------------------------------------- global knobs, sampling, proxies, workqueues

// A text file the guest test left, trimmed; "" when it is missing.
std::string guest_text(const GuestResult& r, const std::string& file) {
    return trim(read_file(r.files / file).value_or(""));
}

std::vector<std::string> guest_lines(const GuestResult& r, const std::string& file) {
    std::vector<std::string> out;
    std::istringstream in(read_file(r.files / file).value_or(""));
    for (std::string l; std::getline(in, l);)
        if (!trim(l).empty()) out.push_back(trim(l));
    return out;
}

std::optional<int> guest_rc(const GuestResult& r, const std::string& file) {
    std::string t = guest_text(r, file);
    if (t.empty() || t.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
    return std::stoi(t);
}

std::string show_rc(std::optional<int> rc) { return rc ? std::to_string(*rc) : "missing"; }

// allow-global: the knobs "vm.stat_interval pages_to_scan" as the guest's
// sampler wrote them: the non-default values set before each run, and the
// test fix's values.
const std::string kGlobalBefore = "2 4095", kGlobalFix = "7 1234";

// Every sampled state has each knob at its previous or its fix value (a
// sample may fall between the two writes); the fix values appear, as a
// whole, `min_fix`..`max_fix` times (once per fix trial), and the last state
// is the previous one.
void check_knob_samples(Checks& c, const GuestResult& r, const std::string& file, int min_fix, int max_fix) {
    auto seen = guest_lines(r, file);
    std::istringstream before_in(kGlobalBefore), fix_in(kGlobalFix);
    std::string b1, b2, f1, f2;
    before_in >> b1 >> b2;
    fix_in >> f1 >> f2;
    bool only_known = !seen.empty();
    int fix_periods = 0;
    for (auto& s : seen) {
        std::istringstream in(s);
        std::string a, b;
        in >> a >> b;
        only_known &= (a == b1 || a == f1) && (b == b2 || b == f2);
        fix_periods += s == kGlobalFix;
    }
    std::string joined;
    for (auto& s : seen) joined += (joined.empty() ? "" : " | ") + s;
    c.expect(only_known, fmt::format("{}: the knobs only ever held their previous ({}) or the fix's ({}) values", file,
                                     kGlobalBefore, kGlobalFix),
             joined.empty() ? "no samples" : joined);
    c.expect(fix_periods >= min_fix && fix_periods <= max_fix,
             fmt::format("{}: the fix's values held {}..{} times", file, min_fix, max_fix),
             fmt::format("{} times: {}", fix_periods, joined));
    c.expect(!seen.empty() && seen.back() == kGlobalBefore, file + ": the last state is the previous values",
             seen.empty() ? "no samples" : seen.back());
}

void check_irqs_untouched(Checks& c, const GuestResult& r) {
    std::string before = guest_text(r, "irqs-before.txt");
    c.expect(before.find("smp_affinity_list") != std::string::npos, "the guest has IRQ affinities to compare",
             before.empty() ? "no irqs-before.txt" : fmt::format("{} IRQs", count_of(before, "\n") + 1));
    for (const char* after : {"irqs-after-run.txt", "irqs-after-restore.txt", "irqs-after-refused.txt"})
        c.expect(!before.empty() && guest_text(r, after) == before,
                 fmt::format("/proc/irq/*/smp_affinity_list unchanged ({} = irqs-before.txt)", after),
                 guest_text(r, after) == before ? "identical" : "differs:\n" + guest_text(r, after));
}

void check_allow_global_run(Checks& c, const GuestResult& r) {
    auto rc = guest_rc(r, "run.rc");
    c.expect(rc && *rc >= 0 && *rc <= 2, "validate --allow-global reached a verdict (exit 0, 1 or 2)",
             show_rc(rc) + "; " + guest_text(r, "run.txt").substr(0, 300));
    if (auto doc = load_json(c, r, "verdict.json"))
        c.expect(doc->value("fix", "") == "guest-global-knobs" && at(*doc, {"exit_code"}) && rc &&
                     (*doc)["exit_code"] == *rc,
                 "verdict.json judges guest-global-knobs and its exit_code is the exit status",
                 fmt::format("fix {}, exit_code {}", show(at(*doc, {"fix"})), show(at(*doc, {"exit_code"}))));
    check_knob_samples(c, r, "seen-run.txt", 1, 2);
    c.expect(guest_text(r, "knobs-after-run.txt") == kGlobalBefore, "after the run the knobs hold their previous values",
             guest_text(r, "knobs-after-run.txt"));
}

void check_allow_global_killed(Checks& c, const GuestResult& r) {
    c.expect(guest_rc(r, "killed.rc") == 137, "the second validate died of SIGKILL (137)",
             show_rc(guest_rc(r, "killed.rc")));
    std::string killed = guest_text(r, "killed.txt");
    c.expect(killed.find("trial 1 (baseline)") != std::string::npos &&
                 killed.find("guest-global-knobs on tcp-crr:") == std::string::npos,
             "it was killed mid-run: trials began, no verdict was printed", killed.substr(0, 400));
    c.expect(guest_text(r, "knobs-after-kill.txt") == kGlobalFix, "killed in a fix trial: the knobs still hold the fix's values",
             guest_text(r, "knobs-after-kill.txt"));
    c.expect(guest_text(r, "lock-holders.txt").empty(), "no process holds /run/hotline-knobs.lock after the kill",
             guest_text(r, "lock-holders.txt").empty() ? "none" : guest_text(r, "lock-holders.txt"));
    std::string out = guest_text(r, "restore.txt");
    c.expect(guest_rc(r, "restore.rc") == 0 && out.find("restored") != std::string::npos,
             "`hotline restore` (default journal directory) exits 0 and says what it restored",
             show_rc(guest_rc(r, "restore.rc")) + ": " + out);
    c.expect(guest_text(r, "knobs-after-restore.txt") == kGlobalBefore,
             "after `hotline restore` the knobs hold their previous values", guest_text(r, "knobs-after-restore.txt"));
}

void check_allow_global_refused(Checks& c, const GuestResult& r) {
    std::string out = guest_text(r, "refused.txt");
    c.expect(guest_rc(r, "refused.rc") == hotline::kExitValidateError && out.find("--allow-global") != std::string::npos,
             "without --allow-global validate is refused: exit 4, naming --allow-global",
             show_rc(guest_rc(r, "refused.rc")) + ": " + out.substr(0, 300));
    auto seen = guest_lines(r, "seen-refused.txt");
    bool untouched = !seen.empty() && std::all_of(seen.begin(), seen.end(), [](auto& s) { return s == kGlobalBefore; });
    c.expect(untouched && guest_text(r, "knobs-after-refused.txt") == kGlobalBefore,
             "the refused run never changed the knobs (every sample and the end state are the previous values)",
             fmt::format("{} samples, first {}, after {}", seen.size(), seen.empty() ? "-" : seen.front(),
                         guest_text(r, "knobs-after-refused.txt")));
}

void check_allow_global(Checks& c, const fs::path& dir) {
    GuestResult r = load_result(dir, "allow-global");
    if (!reported(c, r)) return;
    c.expect(guest_text(r, "knobs-before.txt") == kGlobalBefore, "the knobs start at the test's non-default values",
             guest_text(r, "knobs-before.txt"));
    check_allow_global_run(c, r);
    check_allow_global_killed(c, r);
    check_allow_global_refused(c, r);
    check_irqs_untouched(c, r);
}

double h_total(const json& tot, const char* key) {
    const json* v = at(tot, {"handoffs", key});
    return v && v->is_number() ? v->get<double>() : 0;
}

// A target's per-CPU array under totals.targets[].handoffs, or zeros.
std::vector<double> handoff_array(const json& tot, const char* key, std::size_t cpus) {
    std::vector<double> v(cpus, 0);
    const json* a = at(tot, {"handoffs", key});
    if (a && a->is_array())
        for (std::size_t i = 0; i < a->size() && i < cpus; ++i) v[i] = (*a)[i].get<double>();
    return v;
}

double matrix_at(const json& tot, int from, int to) {
    const json* m = at(tot, {"handoffs", "node_matrix"});
    if (!m || !m->is_array() || int(m->size()) <= from || !(*m)[from].is_array() || int((*m)[from].size()) <= to)
        return -1;
    return (*m)[from][to].get<double>();
}

// handoff-sample: 64 files, each written 10 times on CPU 0 and 10 on CPU 2,
// alternately: 19 handoffs per file, 10 from node 0 to node 1 (taken on CPU 2)
// and 9 back (taken on CPU 0).  Other vfs_write calls in the guest (the test
// harness's pipes, hotline's output) are few and land anywhere: measured 0 on
// 6.1.
constexpr int kSampleFiles = 64;
constexpr double kSampleWritesPerNode = 10, kSampleHandoffs = 19;
// Other tracked touches per CPU: at most 20 + 2% of the files' own.
constexpr double kSampleNoiseCalls = 20, kSampleNoiseShare = 0.02;
// A recording lists its 20 hottest objects (RecordingWriter::finish).
constexpr int kHotObjectsListed = 20;

bool in_band(double v, double low) { return v >= low && v <= low + kSampleNoiseCalls + kSampleNoiseShare * low; }

// The files tracked, k, are counted by CPU 2's touches (10 each); every other
// figure must then be k files' worth: CPU 0's touches, the cross-node
// handoffs taken on each node, the node matrix, and the hot objects, each
// carrying all 19 of a file's handoffs (whole objects are sampled, not hits).
void check_sample_run(Checks& c, const GuestResult& r, int n, int min_files, int max_files) {
    auto doc = load_json(c, r, fmt::format("sample-{}.json", n));
    if (!doc) return;
    const json* tot = total_of(*doc, "vfs_write");
    if (!tot || !at(*tot, {"handoffs"})) {
        c.fail(fmt::format("sample-{}.json: vfs_write with handoffs is in the totals (seen: {})", n, show(tot)));
        return;
    }
    c.expect(tot->value("mechanism", "") == "fentry" && at(*tot, {"handoffs", "sample"}) &&
                 (*tot)["handoffs"]["sample"] == n,
             fmt::format("sample-{}.json: vfs_write:arg0 on fentry, tracking 1 object in {}", n, n),
             fmt::format("mechanism {}, sample {}", show(at(*tot, {"mechanism"})), show(at(*tot, {"handoffs", "sample"}))));
    auto tracked = handoff_array(*tot, "tracked"), cross = handoff_array(*tot, "cross_node");
    const double w = kSampleWritesPerNode, k = std::floor(tracked[2] / w);
    c.expect(k >= min_files && k <= max_files,
             fmt::format("1 in {}: {}..{} of the {} files tracked ({} touches each on CPU 2)", n, min_files, max_files,
                         kSampleFiles, w),
             fmt::format("{:.0f} files; tracked per CPU {}", k, show(at(*tot, {"handoffs", "tracked"}))));
    c.expect(in_band(tracked[0], w * k) && in_band(tracked[2], w * k),
             fmt::format("1 in {}: {:.0f} touches of the tracked files on CPU 0 (node 0) and on CPU 2 (node 1)", n, w * k),
             fmt::format("tracked per CPU {}", show(at(*tot, {"handoffs", "tracked"}))));
    c.expect(in_band(cross[2], w * k) && in_band(cross[0], (w - 1) * k),
             fmt::format("1 in {}: cross-node handoffs taken on CPU 2: {:.0f}, on CPU 0: {:.0f}", n, w * k, (w - 1) * k),
             fmt::format("cross_node per CPU {}", show(at(*tot, {"handoffs", "cross_node"}))));
    c.expect(in_band(matrix_at(*tot, 0, 1), w * k) && in_band(matrix_at(*tot, 1, 0), (w - 1) * k),
             fmt::format("1 in {}: node matrix: {:.0f} from node 0 to node 1, {:.0f} back", n, w * k, (w - 1) * k),
             show(at(*tot, {"handoffs", "node_matrix"})));
    int whole = 0;
    if (const json* objs = at(*doc, {"hot_objects"}); objs && objs->is_array())
        for (auto& o : *objs)
            whole += o.value("target", "") == "vfs_write" && o.value("handoffs", 0.0) == kSampleHandoffs &&
                     o.value("cross_node", 0.0) == kSampleHandoffs;
    // Up to 2 of the listed places may go to other, busier objects.
    double listed = std::min<double>(k, kHotObjectsListed);
    c.expect(whole >= listed - 2 && whole <= listed,
             fmt::format("1 in {}: {:.0f} (or 2 fewer) hot objects are tracked files with all {} handoffs cross-node", n,
                         listed, kSampleHandoffs),
             fmt::format("{} such objects", whole));
}

void check_handoff_sample(Checks& c, const fs::path& dir) {
    GuestResult r = load_result(dir, "handoff-sample");
    if (!reported(c, r)) return;
    check_sample_run(c, r, 1, kSampleFiles, kSampleFiles);
    // Which files a 1-in-4 sample takes depends on their addresses: binomial(64,
    // 1/4), mean 16; fewer than 1 or more than 48 has odds below 1e-8.
    check_sample_run(c, r, 4, 1, 48);
}

// proxy-nodes and workqueue-nodes: vm.stat_refresh written 20 times from CPU 0
// and 60 times from CPU 2; each write queues 4 work items (one per CPU) on the
// writer's CPU, 3 of them for other CPUs, and every CPU executes one.
const std::vector<double> kRefreshWrites = {20, 0, 60, 0};
constexpr double kRefreshCpus = 4;
// Other work queued or executed per CPU while the writers run (vmstat and
// timer work, the shells' exits): at most 20 + 5% of the writes' own.
constexpr double kWorkNoiseCalls = 20, kWorkNoiseShare = 0.05;

bool work_band(double v, double low) { return v >= low && v <= low + kWorkNoiseCalls + kWorkNoiseShare * low; }

std::string per_cpu(const std::vector<double>& v) {
    std::string s;
    for (auto x : v) s += (s.empty() ? "" : ", ") + fmt::format("{:.0f}", x);
    return "[" + s + "]";
}

std::vector<double> json_per_cpu(const json* a) {
    std::vector<double> v(4, 0);
    if (a && a->is_array())
        for (std::size_t i = 0; i < a->size() && i < v.size(); ++i) v[i] = (*a)[i].get<double>();
    return v;
}

// Per CPU: `got` lies in the band above `per_write` x the writes on that CPU.
void expect_per_write(Checks& c, const std::string& what, const std::vector<double>& got, double per_write) {
    bool ok = true;
    std::string want;
    for (std::size_t cpu = 0; cpu < kRefreshWrites.size(); ++cpu) {
        double low = per_write * kRefreshWrites[cpu];
        ok &= work_band(got[cpu], low);
        want += fmt::format("{}CPU {} {:.0f}", cpu ? ", " : "", cpu, low);
    }
    c.expect(ok, fmt::format("{}: {} (+ at most {} + {:.0f}%)", what, want, kWorkNoiseCalls, kWorkNoiseShare * 100),
             per_cpu(got));
}

// The dst_release proxy with the churn-split's ends on CPUs 0 and 2: the same
// handoffs as fentry sees (kHandoffsPerConnection).

void check_dst_proxy(Checks& c, const GuestResult& r) {
    auto doc = load_json(c, r, "dst.json");
    if (!doc) return;
    const json* tot = total_of(*doc, "dst_release");
    if (!tot || !at(*tot, {"handoffs"})) {
        c.fail("dst.json: dst_release with handoffs is in the totals (seen: " + show(tot) + ")");
        return;
    }
    c.expect(tot->value("mechanism", "") == "tracepoint", "dst.json: dst_release by its tracepoint proxy",
             show(at(*tot, {"mechanism"})));
    const json* wl = at(*doc, {"workload"});
    double conns = wl ? wl->value("connections", 0.0) : 0;
    c.expect(conns >= 50 && at(*wl, {"cpus"}) && (*wl)["cpus"] == json({0, 2}),
             "churn-split made at least 50 connections on CPUs 0 and 2", show(wl));
    auto tracked = handoff_array(*tot, "tracked"), cross = handoff_array(*tot, "cross_node");
    double touches = tracked[0] + tracked[1] + tracked[2] + tracked[3];
    double idle = tracked[1] + tracked[3], bound = kLocalCrossNodeCalls + kLocalCrossNodeShare * touches;
    c.expect(tracked[0] > 0 && tracked[2] > 0 && idle <= bound,
             fmt::format("touches on the workload's CPUs 0 and 2; CPUs 1 and 3 at most {:.0f}", bound),
             "tracked per CPU " + per_cpu(tracked));
    double x = h_total(*tot, "cross_node_total"), all = h_total(*tot, "handoffs_total");
    c.expect(x >= kHandoffsPerConnection * conns && x >= 0.9 * all,
             fmt::format("cross-node handoffs >= {} per connection and >= 90% of all", kHandoffsPerConnection),
             fmt::format("{} of {} handoffs cross-node, {} connections", x, all, conns));
    c.expect(cross[0] > 0 && cross[2] > 0 && cross[1] + cross[3] <= bound && matrix_at(*tot, 0, 1) > 0 &&
                 matrix_at(*tot, 1, 0) > 0,
             "cross-node handoffs taken on CPUs 0 and 2, both ways in the node matrix",
             fmt::format("cross_node per CPU {}, matrix {}", per_cpu(cross), show(at(*tot, {"handoffs", "node_matrix"}))));
    c.note(fmt::format("dst proxy: {} connections, {:.3f} cross-node handoffs per connection", conns,
                       conns > 0 ? x / conns : 0.0));
}

void check_queue_proxy(Checks& c, const GuestResult& r) {
    auto doc = load_json(c, r, "queue.json");
    if (!doc) return;
    const json* tot = total_of(*doc, "queue_work_on");
    if (!tot) {
        c.fail("queue.json: queue_work_on is in the totals (seen: missing)");
        return;
    }
    c.expect(tot->value("mechanism", "") == "tracepoint", "queue.json: queue_work_on by its tracepoint proxy",
             show(at(*tot, {"mechanism"})));
    expect_per_write(c, "queue_work_on calls per CPU", json_per_cpu(at(*tot, {"calls"})), kRefreshCpus);
    expect_per_write(c, "work queued for another CPU (handoffs.remote) per CPU", handoff_array(*tot, "remote"),
                     kRefreshCpus - 1);
}

void check_proxy_nodes(Checks& c, const fs::path& dir) {
    GuestResult r = load_result(dir, "proxy-nodes");
    if (!reported(c, r)) return;
    check_dst_proxy(c, r);
    check_queue_proxy(c, r);
}

// The programs a recording's cost table lists: what the session loaded.
std::vector<std::string> loaded_programs(const json& doc) {
    std::vector<std::string> out;
    const json* cost = at(doc, {"cost"});
    if (cost && cost->is_array())
        for (auto& p : *cost)
            if (p.is_object()) out.push_back(p.value("program", ""));
    return out;
}

// One recording of the writes: totals.workqueue, whichever program queued.
void check_workq_recording(Checks& c, const GuestResult& r, const std::string& file, const std::string& queue_program) {
    auto doc = load_json(c, r, file);
    if (!doc) return;
    const json* w = at(*doc, {"totals", "workqueue"});
    if (!w) {
        c.fail(file + " has totals.workqueue (seen: missing)");
        return;
    }
    auto programs = loaded_programs(*doc);
    auto loaded = [&](const std::string& p) { return std::find(programs.begin(), programs.end(), p) != programs.end(); };
    const std::string other = queue_program == "hl_wq_queue" ? "hl_tp_queue_work_wq" : "hl_wq_queue";
    c.expect(loaded(queue_program) && !loaded(other), file + ": the queue side in " + queue_program + ", not " + other,
             fmt::format("programs {}", fmt::join(programs, ", ")));
    expect_per_write(c, file + ": work queued per queueing CPU (workqueue.queued)", json_per_cpu(at(*w, {"queued"})),
                     kRefreshCpus);
    expect_per_write(c, file + ": work queued for another CPU (workqueue.remote)", json_per_cpu(at(*w, {"remote"})),
                     kRefreshCpus - 1);
    double writes = 0;
    for (auto v : kRefreshWrites) writes += v;
    auto executed = json_per_cpu(at(*w, {"executed"}));
    // Each CPU runs the write's item, and a flush barrier when
    // schedule_on_each_cpu's flush_work finds that item not yet done (a
    // barrier is executed but never passes workqueue_queue_work): measured on
    // 6.1 80 writes gave 83-138 executions per CPU.
    double most = 2 * writes + kWorkNoiseCalls + kWorkNoiseShare * writes;
    c.expect(std::all_of(executed.begin(), executed.end(), [&](double v) { return v >= writes && v <= most; }),
             fmt::format("{}: every CPU executed one refresh_vm_stats item per write, on itself: {:.0f}..{:.0f} "
                         "(items, flush barriers, other work)",
                         file, writes, most),
             "executed per CPU " + per_cpu(executed));
    const json* fn = at(*w, {"work_functions", "refresh_vm_stats"});
    c.expect(fn && fn->is_number() && fn->get<double>() == kRefreshCpus * writes,
             fmt::format("{}: work function refresh_vm_stats queued exactly {:.0f} times", file, kRefreshCpus * writes),
             show(fn));
    const json* lat = at(*w, {"queue_to_execute", "count"});
    c.expect(lat && lat->is_number() && lat->get<double>() >= kRefreshCpus * writes,
             fmt::format("{}: at least {:.0f} queue-to-execute times measured (each item queued and run inside the "
                         "recording)",
                         file, kRefreshCpus * writes),
             show(lat));
}

void check_workqueue_nodes(Checks& c, const fs::path& dir) {
    GuestResult r = load_result(dir, "workqueue-nodes");
    if (!reported(c, r)) return;
    check_workq_recording(c, r, "workq.json", "hl_wq_queue");
    check_workq_recording(c, r, "workq-proxy.json", "hl_tp_queue_work_wq");
}

// numa-local's irq_affinity change on the guest's device IRQ (--irqs-of): refused
// without --allow-global and nothing changed, an unknown name is bad usage, and with
// --allow-global the IRQ is on node 0's CPUs while held and back to its exact value after.
void check_irq_affinity(Checks& c, const fs::path& dir) {
    GuestResult r = load_result(dir, "irq-affinity");
    if (!reported(c, r)) return;
    auto file = [&](const char* name) { return trim(read_file(r.files / name).value_or("(missing)")); };
    std::string before = file("before.txt"), node0 = file("node0.txt");
    std::string what = fmt::format("IRQ {} ({})", file("irq.txt"), file("name.txt"));
    c.expect(before != node0, what + " starts off node 0's CPUs alone, so the fix has something to change",
             fmt::format("before {}, node 0 {}", before, node0));
    c.expect(file("refused.rc") == "64", "without --allow-global `fixes apply` is refused with exit 64",
             "exit " + file("refused.rc") + ": " + file("refused.out"));
    c.expect(file("refused.out").find("--allow-global") != std::string::npos, "the refusal says to add --allow-global",
             file("refused.out"));
    c.expect(file("after-refused.txt") == before, "the refused run left the affinity as it was",
             fmt::format("before {}, after {}", before, file("after-refused.txt")));
    c.expect(file("unknown.rc") == "64" && file("unknown.out").find("'no-such-device-irq'") != std::string::npos,
             "a name that matches no IRQ is bad usage (exit 64) naming it",
             "exit " + file("unknown.rc") + ": " + file("unknown.out"));
    c.expect(file("applied.rc") == "0", "`fixes apply numa-local --irqs-of NAME --allow-global` exits 0",
             "exit " + file("applied.rc") + ": " + file("applied.out"));
    std::string during = file("during.txt");
    c.expect(("\n" + during + "\n").find("\n" + node0 + "\n") != std::string::npos,
             what + " was on node 0's CPUs while the fix was held", "sampled: " + during);
    c.expect(file("after.txt") == before, what + " is back to its exact previous affinity",
             fmt::format("before {}, after {}", before, file("after.txt")));
}

}  // namespace vmcheck
