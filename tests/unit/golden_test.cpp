// SPDX-License-Identifier: Apache-2.0
// Golden outputs: every renderer run on fixed, hand-built inputs and compared
// byte for byte with a file under tests/fixtures/golden/.  They pin what the
// recording JSON, the text reports, the verdicts (text, JSON, JUnit), the diff
// verdict, /metrics and the fix catalog look like, so a refactoring can prove
// that it changed nothing.  This file: the recording and text reports and
// /metrics; golden_verdict_test.cpp: the verdicts, the diff and the fixes.
//
// An intended change of an output: regenerate with
//     HOTLINE_UPDATE_GOLDEN=1 build/tests/unit_tests --gtest_filter='Golden*'
// (each rewritten file still fails its test, so an update never passes
// silently), review `git diff tests/fixtures/golden`, and run again.
//
// No kernel, no clock, no randomness but the validator's fixed seeds.  The only
// value replaced after rendering is the recording's tool.version (the project
// version, which changes with every release).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <limits>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "hotline/fix/fix.hpp"
#include "hotline/report/fix_output.hpp"
#include "hotline/report/verdict_output.hpp"
#include "hotline/report/output.hpp"
#include "hotline/report/prometheus.hpp"
#include "hotline/validate/validation.hpp"
#include "hotline/session/recording.hpp"
#include "hotline/validate/validator.hpp"
#include "golden_util.hpp"
#include "topology_fixtures.hpp"

using namespace hotline;
using namespace golden;

namespace {

// ============================================================ machine

using hotline::test::two_nodes;

Topology flat_two_cpus() {
    Topology t;
    t.cpus = {0, 1};
    t.nodes = {0};
    t.cpu_node = {{0, 0}, {1, 0}};
    t.from_sysfs_nodes = false;
    return t;
}

KernelInfo kernel_root() {
    KernelInfo k;
    k.release = "6.1.0-18-amd64";
    k.machine = "x86_64";
    k.btf = true;
    k.lockdown = "none";
    k.tracefs_mounted = true;
    k.kprobes = true;
    k.pmu = false;
    k.caps.root = true;
    k.caps.held = {"CAP_BPF", "CAP_PERFMON", "CAP_SYS_ADMIN"};
    return k;
}

KernelInfo kernel_unprivileged() {
    KernelInfo k;
    k.release = "5.10.0-28-arm64";
    k.machine = "aarch64";
    k.btf = false;
    k.lockdown = "unknown (\"odd\\value\")";  // escaped in /metrics labels
    k.tracefs_mounted = false;
    k.kprobes = false;
    k.pmu = true;
    k.caps.held = {"CAP_PERFMON"};
    k.caps.missing = {"CAP_BPF", "CAP_SYS_ADMIN"};
    return k;
}

// ============================================================ plan

TargetPlan target_plan(std::string target, Mechanism m, Fidelity f, std::string attach, bool latency,
                       std::vector<Rejection> rejected) {
    TargetPlan t;
    t.target = std::move(target);
    t.mechanism = m;
    t.fidelity = f;
    t.attach = std::move(attach);
    t.latency = latency;
    t.rejected = std::move(rejected);
    return t;
}

Plan plan() {
    Plan p;
    p.targets.push_back(target_plan("dst_release", Mechanism::kFentry, Fidelity::kExact,
                                    "fentry+fexit dst_release", true, {}));
    p.targets.push_back(target_plan("ipv4_dst_check", Mechanism::kKprobe, Fidelity::kExact,
                                    "kprobe+kretprobe ipv4_dst_check", true,
                                    {{Mechanism::kFentry, "EINVAL at load: verifier says\ninvalid access"}}));
    p.targets.push_back(target_plan("queue_work_on", Mechanism::kTracepoint, Fidelity::kPartial,
                                    "tp_btf workqueue_queue_work", false,
                                    {{Mechanism::kFentry, "EPERM at load"}, {Mechanism::kKprobe, "EPERM at attach"}}));
    TargetPlan gone = target_plan("tcp_prequeue", Mechanism::kUnavailable, Fidelity::kNone, "", false,
                                  {{Mechanism::kFentry, "not in kernel BTF"},
                                   {Mechanism::kKprobe, "not in /proc/kallsyms"},
                                   {Mechanism::kTracepoint, "no tracepoint proxy"},
                                   {Mechanism::kSampling, "no address range to match samples against"}});
    gone.unavailable_reason = "tcp_prequeue does not exist on this kernel (prequeue was removed in v4.14)";
    p.targets.push_back(std::move(gone));
    p.targets.push_back(target_plan("mix_interrupt_randomness", Mechanism::kSampling, Fidelity::kSampled,
                                    "cpu-clock 999 Hz, IP in mix_interrupt_randomness", false,
                                    {{Mechanism::kFentry, "EPERM at load"}}));
    return p;
}

// ============================================================ snapshots
// Snapshot `step` holds cumulative counters of rate * tri(step), so interval n
// (from step n-1 to n) sees n * rate: the two intervals differ.

std::uint64_t tri(int step) { return std::uint64_t(step) * std::uint64_t(step + 1) / 2; }

std::vector<std::uint64_t> scaled(const std::vector<std::uint64_t>& rate, std::uint64_t k) {
    std::vector<std::uint64_t> v;
    for (auto r : rate) v.push_back(r * k);
    return v;
}

TargetCounters counters(std::string target, Mechanism m, Fidelity f, std::vector<std::uint64_t> calls) {
    TargetCounters c;
    c.target = std::move(target);
    c.mechanism = m;
    c.fidelity = f;
    c.events = calls;
    c.calls = std::move(calls);
    return c;
}

void add_latency(TargetCounters& c, std::uint64_t k, std::vector<std::pair<int, std::uint64_t>> slots,
                 std::uint64_t sum_ns_per_k, std::uint64_t lost_per_k) {
    c.has_latency = true;
    for (auto [slot, n] : slots) {
        c.hist[std::size_t(slot)] = n * k;
        c.lat_count += n * k;
    }
    c.lat_sum_ns = sum_ns_per_k * k;
    c.lat_lost = lost_per_k * k;
}

HandoffCounters dst_handoffs(std::uint64_t k) {
    HandoffCounters h;
    h.tracked = scaled({4000, 3000, 5000, 2000}, k);
    h.same_cpu = scaled({1000, 900, 1500, 600}, k);
    h.cross_cpu = scaled({1200, 700, 1300, 500}, k);
    h.cross_node = scaled({800, 400, 1200, 300}, k);
    h.new_objects = scaled({1000, 1000, 1000, 600}, k);
    h.remote = {0, 0, 0, 0};
    h.matrix = {scaled({1900, 1500}, k), scaled({1200, 1800}, k)};
    h.live_objects = 300 + 7 * k;
    h.capacity = 16384;
    h.evictions = 2 * k;
    return h;
}

HandoffCounters work_handoffs(std::uint64_t k) {
    HandoffCounters h;
    h.tracked = scaled({60, 40, 30, 20}, k);
    h.same_cpu = scaled({30, 20, 10, 10}, k);
    h.cross_cpu = scaled({10, 5, 5, 0}, k);
    h.cross_node = scaled({5, 5, 3, 2}, k);
    h.new_objects = scaled({15, 10, 12, 8}, k);
    h.remote = scaled({3, 1, 0, 2}, k);
    h.matrix = {scaled({12, 6}, k), scaled({4, 3}, k)};
    h.live_objects = 40;
    h.capacity = 4096;
    h.sample = 4;
    return h;
}

TargetCounters dst_release_at(std::uint64_t k) {
    auto c = counters("dst_release", Mechanism::kFentry, Fidelity::kExact, scaled({4000, 3000, 5000, 2000}, k));
    add_latency(c, k, {{5, 9000}, {6, 4500}, {8, 400}, {11, 100}}, 14000 * 45, 3);
    c.has_handoffs = true;
    c.object_type = "dst_entry";
    c.handoffs = dst_handoffs(k);
    return c;
}

TargetCounters ipv4_dst_check_at(std::uint64_t k) {
    auto c = counters("ipv4_dst_check", Mechanism::kKprobe, Fidelity::kExact, scaled({2000, 1500, 2500, 1000}, k));
    add_latency(c, k, {{6, 6000}, {7, 1000}}, 7000 * 90, 0);
    return c;
}

TargetCounters queue_work_on_at(std::uint64_t k) {
    auto c = counters("queue_work_on", Mechanism::kTracepoint, Fidelity::kPartial, scaled({60, 40, 30, 20}, k));
    c.has_handoffs = true;
    c.object_type = "work_struct";
    c.handoffs = work_handoffs(k);
    return c;
}

TargetCounters mix_sampled_at(std::uint64_t k) {
    return counters("mix_interrupt_randomness", Mechanism::kSampling, Fidelity::kSampled, scaled({3, 1, 0, 2}, k));
}

std::vector<HotObject> hot_objects_at(std::uint64_t k) {
    return {
        {"dst_release", "dst_entry", 1, 900 * k, 400 * k, 2, ""},
        {"dst_release", "dst_entry", 2, 1200 * k, 100 * k, 0, ""},
        {"dst_release", "dst_entry", 3, 0, 0, 1, ""},  // never handed over: not listed
        {"queue_work_on", "work_struct", 4, 30 * k, 15 * k, 3, "mix_interrupt_randomness"},
        {"queue_work_on", "work_struct", 5, 10 * k, 0, 1, "vmstat_update"},
    };
}

WorkqCounters workq_at(std::uint64_t k) {
    WorkqCounters w;
    w.irqs = scaled({5000, 1200, 800, 0}, k);
    w.queued = scaled({90, 20, 15, 5}, k);
    w.remote = scaled({6, 1, 0, 5}, k);
    w.executed = scaled({88, 20, 15, 5}, k);
    w.hist[10] = 80 * k;
    w.hist[12] = 40 * k;
    w.hist[15] = 8 * k;
    w.lat_count = 128 * k;
    w.lat_sum_ns = 128 * 3500 * k;
    w.lat_lost = k;
    w.funcs = {{"mix_interrupt_randomness", 78 * k}, {"vmstat_update", 9 * k},
               {"flush_to_ldisc", 30 * k}, {"idle_worker_timeout", 0}};
    return w;
}

// A session's estimates, scaled from the tenth of the runs its window timed.
std::vector<ProgCost> prog_cost_at(std::uint64_t k) {
    return {
        {"dst_release", "hl_fentry_dst_release", 14000 * k, 14000 * 210 * k, 0, 1400 * k},
        {"dst_release", "hl_fexit_dst_release", 14000 * k, 14000 * 95 * k, 2 * k, 1400 * k},
        {"ipv4_dst_check", "hl_kprobe_generic", 7000 * k, 7000 * 480 * k, k, 700 * k},
        {"queue_work_on", "hl_tp_queue_work", 150 * k, 150 * 330 * k, 0, 15 * k},
        {"mix_interrupt_randomness", "hl_sample", 6000 * k, 6000 * 150 * k, 0, 600 * k},
    };
}

Snapshot snapshot(int step) {
    const std::uint64_t k = tri(step);
    Snapshot s;
    s.t = 100 + 2.5 * step;
    s.attached_s = 10 + 2.5 * step;
    s.targets = {dst_release_at(k), ipv4_dst_check_at(k), queue_work_on_at(k), mix_sampled_at(k)};
    s.samples_total = scaled({2500, 2500, 2500, 2500}, k);
    s.samples_kernel = scaled({1800, 900, 1200, 300}, k);
    s.cost = prog_cost_at(k);
    s.objects = hot_objects_at(k);
    s.has_workq = true;
    s.workq = workq_at(k);
    return s;
}

// ============================================================ recording

nlohmann::json recording_analysis(const std::vector<Interval>& ivs) {
    nlohmann::json per = nlohmann::json::array();
    double ops = 9000;
    for (auto& iv : ivs) {
        ScenarioNumbers n;
        n.ops = ops;
        n.seconds = iv.seconds();
        n.cpu_seconds = 1.75;
        n.extra = {{"latency_p50_us", 31.5}, {"latency_p99_us", 88.25}};
        per.push_back(trial_metrics(iv, n));
        ops += 1500;
    }
    GoldenFacts facts;
    return {{"diff", diff_facts(catalog(), facts, {dst_layout()})},
            {"interval_metrics", per},
            {"interval_ops", "spread"},
            {"layouts", {to_json(dst_layout())}}};
}

nlohmann::json recording_doc() {
    RecordingWriter rec(kernel_root(), two_nodes(), plan());
    rec.set_options({{"interval_s", 2.5}, {"per_cpu", false}, {"targets", nlohmann::json::array()},
                     {"handoff_sample", 1}, {"workload", "none"}});
    const Snapshot s0 = snapshot(0), s1 = snapshot(1), s2 = snapshot(2);
    const Interval i1 = delta(s0, s1), i2 = delta(s1, s2);
    rec.add_interval(i1);
    rec.add_interval(i2);
    rec.set("analysis", recording_analysis({i1, i2}));
    rec.finish(delta(s0, s2), 0, {"qperf", "-t", "5", "10.0.0.2", "tcp_lat"});
    // The writer stamps the project version: checked, then pinned.
    nlohmann::json tool = rec.doc()["tool"];
    EXPECT_EQ(tool["name"], "hotline");
    EXPECT_EQ(tool["version"], HOTLINE_VERSION);
    tool["version"] = "<HOTLINE_VERSION>";
    rec.set("tool", tool);
    return rec.doc();
}

// ============================================================ /metrics

ExporterInfo exporter_info(const KernelInfo& k) {
    ExporterInfo info;
    info.version = "0.9.0-golden";
    info.kernel = k;
    info.topo = two_nodes();
    info.plan = plan();
    info.run_stats = true;
    return info;
}

ExporterCounters exporter_counters() {
    ExporterCounters c;
    c.series_dropped = 3;
    c.read_errors = 1;
    c.http_rejected = {{"auth", 2}, {"too_large", 1}, {"method", 0}};
    ProcessStats p;
    p.cpu_seconds = 12.34;
    p.resident_bytes = 41943040;
    p.virtual_bytes = 268435456;
    p.open_fds = 23;
    p.max_fds = 1024;
    p.start_time_seconds = 1700000000.5;
    c.process = p;
    return c;
}

std::string metrics_text(const ExporterInfo& info, ExpositionFormat format, bool per_cpu, std::size_t max_series) {
    PromOptions o;
    o.format = format;
    o.per_cpu = per_cpu;
    o.max_series = max_series;
    return render([&](std::ostream& os) { render_prometheus(os, snapshot(2), info, exporter_counters(), o); });
}

}  // namespace

// ============================================================ tests

TEST(Golden, RecordingJson) {
    nlohmann::json doc = recording_doc();
    EXPECT_TRUE(check_recording(doc).empty());
    expect_golden("recording.json", doc.dump(2) + "\n");
}

TEST(Golden, ProbeText) {
    std::string out = section("root, two nodes");
    out += render([](std::ostream& os) { render_probe_text(os, kernel_root(), two_nodes(), plan()); });
    out += section("unprivileged, no NUMA");
    out += render([](std::ostream& os) { render_probe_text(os, kernel_unprivileged(), flat_two_cpus(), plan()); });
    expect_golden("text_probe.txt", out);
}

TEST(Golden, IntervalText) {
    const Interval i1 = delta(snapshot(0), snapshot(1)), i2 = delta(snapshot(1), snapshot(2));
    std::string out = section("interval 1, per node");
    out += render([&](std::ostream& os) { render_interval_text(os, i1, two_nodes(), false, "interval 1"); });
    out += section("interval 2, per CPU");
    out += render([&](std::ostream& os) { render_interval_text(os, i2, two_nodes(), true, "interval 2"); });
    out += section("dst_release latency, interval 2");
    out += render([&](std::ostream& os) { render_log2_hist(os, i2.d.targets[0].hist, "nsecs"); });
    out += section("empty histogram");
    out += render([](std::ostream& os) { render_log2_hist(os, Log2Hist{}, "usecs"); });
    out += section("probe cost, interval 2");
    out += render([&](std::ostream& os) { render_cost_text(os, i2.d.cost, i2.seconds()); });
    out += section("probe cost, a half-second session its window missed");
    std::vector<ProgCost> untimed = i2.d.cost;
    for (auto& c : untimed) c.run_cnt = c.run_time_ns = c.timed_runs = 0;
    out += render([&](std::ostream& os) { render_cost_text(os, untimed, 0.5); });
    expect_golden("text_interval.txt", out);
}

TEST(Golden, HandoffsText) {
    const Interval whole = delta(snapshot(0), snapshot(2));
    std::string out = section("handoffs, per node");
    out += render([&](std::ostream& os) { render_handoffs_text(os, whole, two_nodes(), false); });
    out += section("handoffs, per CPU");
    out += render([&](std::ostream& os) { render_handoffs_text(os, whole, two_nodes(), true); });
    out += section("hot objects, top 3");
    out += render([&](std::ostream& os) {
        render_hot_objects_text(os, top_objects(whole.d.objects, 3), whole.seconds());
    });
    out += section("hot objects, none");
    out += render([](std::ostream& os) { render_hot_objects_text(os, {}, 1); });
    out += section("layouts");
    out += render([](std::ostream& os) { render_layouts_text(os, {dst_layout()}); });
    expect_golden("text_handoffs.txt", out);
}

TEST(Golden, WorkqText) {
    const Interval whole = delta(snapshot(0), snapshot(2));
    std::string out = section("top 2 functions, with a finding");
    out += render([&](std::ostream& os) {
        render_workq_text(os, whole.d.workq, two_nodes(), whole.seconds(),
                          "mix_interrupt_randomness is queued from the interrupt path (kernel < 6.1)", 2);
    });
    out += section("all functions, no finding");
    out += render([&](std::ostream& os) { render_workq_text(os, whole.d.workq, two_nodes(), whole.seconds(), "", 10); });
    expect_golden("text_workq.txt", out);
}

TEST(Golden, MetricsText004) {
    expect_golden("metrics_text004.prom",
                  metrics_text(exporter_info(kernel_root()), ExpositionFormat::kText004, false, 10000));
}

TEST(Golden, MetricsOpenMetrics) {
    expect_golden("metrics_openmetrics.txt",
                  metrics_text(exporter_info(kernel_root()), ExpositionFormat::kOpenMetrics100, false, 10000));
}

// Per-CPU series, a kernel label needing escapes, and a series cap that drops
// some contention series.
TEST(Golden, MetricsPerCpuCapped) {
    expect_golden("metrics_percpu_capped.prom",
                  metrics_text(exporter_info(kernel_unprivileged()), ExpositionFormat::kText004, true, 30));
}
