// SPDX-License-Identifier: Apache-2.0
// The Prometheus renderer on synthetic snapshots: formats, histogram buckets,
// handoff matrices, the series cap, escaping, negotiation, and /proc reading.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "files.hpp"
#include "hotline/report/prometheus.hpp"
#include "negotiation.hpp"
#include "serve_config.hpp"

using namespace hotline;

namespace {

Topology two_nodes() {
    auto t = read_topology(std::string(HOTLINE_FIXTURES) + "/sys2node");
    EXPECT_TRUE(t.ok());
    return *t;
}

// A snapshot with a counted target with latency, a sampled target, run costs and
// a 2x2 handoff matrix, on the 4-CPU, 2-node fixture.
Snapshot synthetic() {
    Snapshot s;
    s.t = 100;
    TargetCounters a;
    a.target = "dst_release";
    a.mechanism = Mechanism::kKprobe;
    a.fidelity = Fidelity::kExact;
    a.calls = {5, 7, 0, 11};
    a.events = {5, 7, 0, 11};
    a.has_latency = true;
    a.hist[0] = 1;   // 0..1 ns
    a.hist[6] = 10;  // 64..127 ns
    a.hist[7] = 4;   // 128..255 ns
    a.hist[HL_HIST_SLOTS - 1] = 2;
    a.lat_count = 17;
    a.lat_sum_ns = 2'000'000'000;
    a.lat_lost = 3;
    s.targets.push_back(a);
    TargetCounters b;
    b.target = "ipv4_dst_check";
    b.mechanism = Mechanism::kSampling;
    b.fidelity = Fidelity::kSampled;
    b.calls = {1, 0, 2, 1};
    s.targets.push_back(b);
    s.samples_total = {100, 100, 100, 100};
    s.samples_kernel = {50, 40, 30, 20};
    s.cost.push_back({"dst_release", "hl_kprobe", 23, 4600, 2});
    s.cost.push_back({"dst_release", "hl_kretprobe", 23, 2300, 1});
    s.cost.push_back({"(sampling)", "hl_sample", 400, 40000, 0});
    // dst_release objects: 9 handoffs within node 0, 4 from node 0 to 1, 6 from 1 to 0,
    // 1 within node 1; per-CPU totals agree with the matrix.
    auto& t0 = s.targets[0];
    t0.has_handoffs = true;
    t0.object_type = "dst_entry";
    t0.handoffs.tracked = {20, 10, 5, 5};
    t0.handoffs.cross_cpu = {0, 9, 0, 1};
    t0.handoffs.cross_node = {3, 3, 4, 0};
    t0.handoffs.matrix = {{9, 4}, {6, 1}};
    t0.handoffs.live_objects = 7;
    t0.handoffs.capacity = 16384;
    t0.handoffs.evictions = 2;
    return s;
}

ExporterInfo info_for(const Topology& topo) {
    ExporterInfo info;
    info.version = "0.1.0";
    info.kernel.release = "6.18.0-test";
    info.kernel.machine = "x86_64";
    info.kernel.lockdown = "integrity";
    info.kernel.btf = true;
    info.topo = topo;
    TargetPlan p1;
    p1.target = "dst_release";
    p1.mechanism = Mechanism::kKprobe;
    TargetPlan p2;
    p2.target = "ipv4_dst_check";
    p2.mechanism = Mechanism::kSampling;
    TargetPlan p3;
    p3.target = "tcp_prequeue";
    p3.unavailable_reason = "not in this kernel";
    info.plan.targets = {p1, p2, p3};
    return info;
}

std::string render(const Snapshot& s, const PromOptions& o, PromStats* st = nullptr,
                   ExporterCounters c = {}) {
    std::ostringstream os;
    auto r = render_prometheus(os, s, info_for(two_nodes()), c, o);
    if (st) *st = r;
    return os.str();
}

// "name{labels}" -> value, for samples; family -> type for # TYPE lines.
struct Parsed {
    std::map<std::string, std::string> samples;
    std::map<std::string, std::string> types;
    std::vector<std::string> order;  // sample keys in output order
    bool has(const std::string& k) const { return samples.count(k) > 0; }
    double num(const std::string& k) const {
        auto it = samples.find(k);
        EXPECT_NE(it, samples.end()) << "missing sample " << k;
        if (it == samples.end()) return NAN;
        if (it->second == "+Inf") return INFINITY;
        return std::stod(it->second);
    }
};

Parsed parse(const std::string& text) {
    Parsed p;
    std::istringstream is(text);
    for (std::string line; std::getline(is, line);) {
        if (line.rfind("# TYPE ", 0) == 0) {
            auto sp = line.find(' ', 7);
            p.types[line.substr(7, sp - 7)] = line.substr(sp + 1);
            continue;
        }
        if (line.empty() || line[0] == '#') continue;
        auto sp = line.rfind(' ');
        p.samples[line.substr(0, sp)] = line.substr(sp + 1);
        p.order.push_back(line.substr(0, sp));
    }
    return p;
}

}  // namespace

TEST(PromNegotiation, PicksOpenMetricsOnlyWhenAskedFor) {
    // What Prometheus 2.x sends.
    EXPECT_EQ(negotiate_exposition("application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
                                   "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"),
              ExpositionFormat::kOpenMetrics100);
    EXPECT_EQ(negotiate_exposition(""), ExpositionFormat::kText004);
    EXPECT_EQ(negotiate_exposition("*/*"), ExpositionFormat::kText004);
    EXPECT_EQ(negotiate_exposition("text/plain;version=0.0.4"), ExpositionFormat::kText004);
    EXPECT_EQ(negotiate_exposition("application/openmetrics-text; q=0"), ExpositionFormat::kText004);
    EXPECT_EQ(negotiate_exposition("application/openmetrics-text;q=0.3, text/plain;q=0.9"),
              ExpositionFormat::kText004);
    EXPECT_EQ(negotiate_exposition("Application/OpenMetrics-Text"), ExpositionFormat::kOpenMetrics100);
    EXPECT_EQ(negotiate_exposition("application/openmetrics-text;version=2.0.0"), ExpositionFormat::kText004);
    EXPECT_EQ(content_type(ExpositionFormat::kText004), "text/plain; version=0.0.4; charset=utf-8");
    EXPECT_EQ(content_type(ExpositionFormat::kOpenMetrics100),
              "application/openmetrics-text; version=1.0.0; charset=utf-8");
}

TEST(PromEscape, EscapesAndRepairsUtf8) {
    EXPECT_EQ(escape_label_value("plain"), "plain");
    EXPECT_EQ(escape_label_value("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
    EXPECT_EQ(escape_label_value("n\xC3\xA9"), "n\xC3\xA9");          // valid 2-byte kept
    EXPECT_EQ(escape_label_value("x\xFFy"), "x\xEF\xBF\xBDy");         // stray byte replaced
    EXPECT_EQ(escape_label_value("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");  // overlong '/'
    EXPECT_EQ(escape_label_value("\xE2\x82"), "\xEF\xBF\xBD\xEF\xBF\xBD");  // truncated
}

TEST(PromValues, FormatsSpecialsAndShortestDecimals) {
    EXPECT_EQ(format_sample_value(INFINITY), "+Inf");
    EXPECT_EQ(format_sample_value(-INFINITY), "-Inf");
    EXPECT_EQ(format_sample_value(NAN), "NaN");
    EXPECT_EQ(format_sample_value(0.5), "0.5");
    EXPECT_EQ(std::stod(format_sample_value(1.023e-06)), 1.023e-06);
}

// Every integer latency v lands in slot floor(log2 v) (slot 0 for 0 and 1); its
// bucket's le must hold it and the previous bucket's le must not.
TEST(PromLatency, BucketBoundsMatchTheLog2Slots) {
    auto slot_of = [](std::uint64_t v) {
        int s = 0;
        while (v > 1) {
            v >>= 1;
            ++s;
        }
        return std::min(s, HL_HIST_SLOTS - 1);
    };
    EXPECT_DOUBLE_EQ(latency_le_seconds(0), 1e-9);
    EXPECT_DOUBLE_EQ(latency_le_seconds(9), 1023e-9);
    EXPECT_TRUE(std::isinf(latency_le_seconds(HL_HIST_SLOTS - 1)));
    for (std::uint64_t v : {0ull, 1ull, 2ull, 3ull, 4ull, 127ull, 128ull, 1000ull, 1023ull, 1024ull, 999'999ull,
                            (1ull << 38) - 1, 1ull << 38, (1ull << 39) - 1, 1ull << 39, 1ull << 45}) {
        int s = slot_of(v);
        double secs = double(v) / 1e9;
        EXPECT_LE(secs, latency_le_seconds(s)) << v;
        if (s > 0) {
            EXPECT_GT(secs, latency_le_seconds(s - 1)) << v;
        }
    }
}

TEST(PromRender, CallsAreFoldedPerNodeWithMechanism) {
    auto p = parse(render(synthetic(), {}));
    EXPECT_EQ(p.num("hotline_calls_total{target=\"dst_release\",node=\"0\",mechanism=\"kprobe\"}"), 12);
    EXPECT_EQ(p.num("hotline_calls_total{target=\"dst_release\",node=\"1\",mechanism=\"kprobe\"}"), 11);
    EXPECT_EQ(p.num("hotline_calls_total{target=\"ipv4_dst_check\",node=\"1\",mechanism=\"sampling\"}"), 3);
    for (const auto& [k, v] : p.samples) EXPECT_EQ(k.find("cpu=\""), std::string::npos) << k;
    EXPECT_EQ(p.types["hotline_calls_total"], "counter");
}

TEST(PromRender, PerCpuLabelsOnlyWhenConfigured) {
    PromOptions o;
    o.per_cpu = true;
    auto p = parse(render(synthetic(), o));
    EXPECT_EQ(p.num("hotline_calls_total{target=\"dst_release\",node=\"1\",cpu=\"3\",mechanism=\"kprobe\"}"), 11);
    EXPECT_EQ(p.num("hotline_calls_total{target=\"dst_release\",node=\"1\",cpu=\"2\",mechanism=\"kprobe\"}"), 0);
    EXPECT_EQ(p.num("hotline_samples_total{node=\"0\",cpu=\"1\"}"), 100);
    EXPECT_FALSE(p.has("hotline_calls_total{target=\"dst_release\",node=\"1\",mechanism=\"kprobe\"}"));
}

TEST(PromRender, HistogramIsCumulativeWithInfSumAndCount) {
    auto text = render(synthetic(), {});
    auto p = parse(text);
    EXPECT_EQ(p.types["hotline_latency_seconds"], "histogram");
    const std::string pre = "hotline_latency_seconds_bucket{target=\"dst_release\",le=\"";
    EXPECT_EQ(p.num(pre + "1e-09\"}"), 1);        // slot 0
    EXPECT_EQ(p.num(pre + "6.3e-08\"}"), 1);      // slot 5: 32..63 ns, nothing new
    EXPECT_EQ(p.num(pre + "1.27e-07\"}"), 11);    // slot 6 adds 10
    EXPECT_EQ(p.num(pre + "2.55e-07\"}"), 15);    // slot 7 adds 4
    EXPECT_EQ(p.num(pre + "+Inf\"}"), 17);        // the open-ended slot only reaches +Inf
    EXPECT_EQ(p.num("hotline_latency_seconds_count{target=\"dst_release\"}"), 17);
    EXPECT_DOUBLE_EQ(p.num("hotline_latency_seconds_sum{target=\"dst_release\"}"), 2.0);
    // Buckets ascend in le and never decrease in count.
    double last_le = -1, last_v = -1;
    int buckets = 0;
    for (const auto& k : p.order) {
        if (k.rfind(pre, 0) != 0) continue;
        std::string le = k.substr(pre.size(), k.size() - pre.size() - 2);
        double lev = le == "+Inf" ? INFINITY : std::stod(le);
        EXPECT_GT(lev, last_le) << k;
        EXPECT_GE(p.num(k), last_v) << k;
        last_le = lev;
        last_v = p.num(k);
        ++buckets;
    }
    EXPECT_EQ(buckets, HL_HIST_SLOTS);  // 39 finite + +Inf
    EXPECT_FALSE(p.has("hotline_latency_seconds_count{target=\"ipv4_dst_check\"}"));  // no latency there
}

TEST(PromRender, HandoffsComeFromTheSnapshotModel) {
    auto p = parse(render(synthetic(), {}));
    EXPECT_EQ(p.num("hotline_handoffs_total{target=\"dst_release\",from_node=\"0\",to_node=\"1\"}"), 4);
    EXPECT_EQ(p.num("hotline_handoffs_total{target=\"dst_release\",from_node=\"1\",to_node=\"0\"}"), 6);
    EXPECT_EQ(p.num("hotline_handoffs_total{target=\"dst_release\",from_node=\"1\",to_node=\"1\"}"), 1);
    EXPECT_EQ(p.num("hotline_cross_node_handoffs_total{target=\"dst_release\"}"), 10);

    EXPECT_EQ(p.num("hotline_handoff_tracked_hits_total{target=\"dst_release\"}"), 40);
    EXPECT_EQ(p.num("hotline_handoff_live_objects{target=\"dst_release\"}"), 7);
    EXPECT_EQ(p.num("hotline_handoff_owner_capacity{target=\"dst_release\"}"), 16384);
    EXPECT_EQ(p.num("hotline_drops_total{target=\"dst_release\",reason=\"owner_evicted\"}"), 2);
    EXPECT_FALSE(p.has("hotline_handoff_tracked_hits_total{target=\"ipv4_dst_check\"}"));

    Snapshot none = synthetic();
    none.targets[0].has_handoffs = false;
    auto text = render(none, {});
    EXPECT_EQ(text.find("hotline_handoffs"), std::string::npos);
    EXPECT_EQ(text.find("hotline_cross_node_handoffs"), std::string::npos);
}

TEST(PromRender, SamplingShareAndRawCounters) {
    auto p = parse(render(synthetic(), {}));
    EXPECT_DOUBLE_EQ(p.num("hotline_sampled_share{target=\"ipv4_dst_check\"}"), 4.0 / 400.0);
    EXPECT_FALSE(p.has("hotline_sampled_share{target=\"dst_release\"}"));
    EXPECT_EQ(p.num("hotline_samples_total{node=\"0\"}"), 200);
    EXPECT_EQ(p.num("hotline_kernel_samples_total{node=\"1\"}"), 50);
}

TEST(PromRender, ProbeStateCostAndDrops) {
    auto p = parse(render(synthetic(), {}));
    EXPECT_EQ(p.num("hotline_probe_attached{target=\"dst_release\",mechanism=\"kprobe\"}"), 1);
    EXPECT_EQ(p.num("hotline_probe_attached{target=\"tcp_prequeue\",mechanism=\"unavailable\"}"), 0);
    EXPECT_EQ(p.num("hotline_probe_runs_total{target=\"dst_release\",program=\"hl_kprobe\"}"), 23);
    EXPECT_DOUBLE_EQ(p.num("hotline_probe_run_seconds_total{target=\"dst_release\",program=\"hl_kprobe\"}"), 4.6e-6);
    EXPECT_EQ(p.num("hotline_drops_total{target=\"dst_release\",reason=\"recursion\"}"), 3);
    EXPECT_EQ(p.num("hotline_drops_total{target=\"dst_release\",reason=\"latency_lost\"}"), 3);
    EXPECT_EQ(p.num("hotline_probe_run_stats_enabled"), 1);
    EXPECT_EQ(p.num("hotline_build_info{version=\"0.1.0\"}"), 1);
    EXPECT_EQ(p.num("hotline_kernel_info{release=\"6.18.0-test\",machine=\"x86_64\",lockdown=\"integrity\",btf=\"true\"}"), 1);
}

// A session attached in windows says its share and its attached time, so that
// rates per second can be formed (docs/metrics.md).
TEST(PromRender, DutyCycleAndAttachedSeconds) {
    Snapshot s = synthetic();
    s.duty_percent = 25;
    s.attached_s = 12.5;
    s.duty_period_s = 10;
    auto p = parse(render(s, {}));
    EXPECT_DOUBLE_EQ(p.num("hotline_probe_duty_cycle_ratio"), 0.25);
    EXPECT_DOUBLE_EQ(p.num("hotline_probe_duty_period_seconds"), 10);
    EXPECT_EQ(p.types["hotline_probe_duty_period_seconds"], "gauge");
    EXPECT_DOUBLE_EQ(p.num("hotline_probe_attached_seconds_total"), 12.5);
    EXPECT_EQ(p.types["hotline_probe_duty_cycle_ratio"], "gauge");
    EXPECT_EQ(p.types["hotline_probe_attached_seconds_total"], "counter");
}

TEST(PromRender, SeriesCapDropsAndCounts) {
    PromOptions o;
    o.max_series = 5;
    PromStats st;
    ExporterCounters c;
    c.series_dropped = 100;  // from earlier scrapes
    auto p = parse(render(synthetic(), o, &st, c));
    // 4 call series fit (2 targets x 2 nodes), the 5th slot takes one handoff cell.
    EXPECT_EQ(st.series, 5u);
    // Dropped: 3 handoff cells, 1 cross-node, 1 tracked, 42 histogram lines, 4 sample counters, 1 share.
    EXPECT_EQ(st.dropped, 3u + 1u + 1u + (HL_HIST_SLOTS + 2) + 4u + 1u);
    EXPECT_EQ(p.num("hotline_series_dropped_total"), double(100 + st.dropped));
    EXPECT_FALSE(p.has("hotline_latency_seconds_count{target=\"dst_release\"}"));  // all or nothing
    // Exporter health is never capped.
    EXPECT_TRUE(p.has("hotline_probe_attached{target=\"dst_release\",mechanism=\"kprobe\"}"));
}

TEST(PromRender, LabelValuesAreEscapedInOutput) {
    Snapshot s = synthetic();
    s.targets[0].target = "we\"ird\\name\n";
    auto text = render(s, {});
    EXPECT_NE(text.find("target=\"we\\\"ird\\\\name\\n\""), std::string::npos);
}

TEST(PromRender, TextAndOpenMetricsFraming) {
    auto text = render(synthetic(), {});
    EXPECT_NE(text.find("# TYPE hotline_calls_total counter\n"), std::string::npos);
    EXPECT_NE(text.find("# TYPE hotline_build_info gauge\n"), std::string::npos);
    EXPECT_EQ(text.find("# EOF"), std::string::npos);
    EXPECT_EQ(text.find("# UNIT"), std::string::npos);

    PromOptions o;
    o.format = ExpositionFormat::kOpenMetrics100;
    auto om = render(synthetic(), o);
    EXPECT_NE(om.find("# TYPE hotline_calls counter\n"), std::string::npos);
    EXPECT_NE(om.find("\nhotline_calls_total{"), std::string::npos);
    EXPECT_NE(om.find("# TYPE hotline_build info\n"), std::string::npos);
    EXPECT_NE(om.find("\nhotline_build_info{"), std::string::npos);
    EXPECT_NE(om.find("# UNIT hotline_latency_seconds seconds\n"), std::string::npos);
    EXPECT_NE(om.find("# UNIT hotline_probe_run_seconds seconds\n"), std::string::npos);
    ASSERT_GE(om.size(), 6u);
    EXPECT_EQ(om.substr(om.size() - 6), "# EOF\n");
}

// Each family's metadata appears once, before its samples, which are contiguous.
TEST(PromRender, FamiliesAreContiguous) {
    for (auto fmt : {ExpositionFormat::kText004, ExpositionFormat::kOpenMetrics100}) {
        PromOptions o;
        o.format = fmt;
        ExporterCounters c;
        c.http_rejected = {{"busy", 2}, {"method", 1}};
        c.process = ProcessStats{1.5, 4096, 8192, 7, 1024, 1700000000};
        std::istringstream is(render(synthetic(), o, nullptr, c));
        std::map<std::string, int> seen;  // family -> times its TYPE appeared
        std::string current;
        std::vector<std::string> closed;
        for (std::string line; std::getline(is, line);) {
            if (line.rfind("# TYPE ", 0) == 0) {
                std::string fam = line.substr(7, line.find(' ', 7) - 7);
                EXPECT_EQ(++seen[fam], 1) << fam;
                if (!current.empty()) closed.push_back(current);
                current = fam;
                continue;
            }
            if (line.empty() || line[0] == '#') continue;
            std::string name = line.substr(0, line.find_first_of("{ "));
            EXPECT_EQ(name.rfind(current, 0), 0u) << name << " outside family " << current;
            for (const auto& c2 : closed) EXPECT_NE(name, c2) << "family " << c2 << " resumed";
        }
        EXPECT_EQ(seen.count(fmt == ExpositionFormat::kText004 ? "process_cpu_seconds_total" : "process_cpu_seconds"), 1u);
    }
}

// The real linter, when installed (the setup script installs the prometheus package).
TEST(PromRender, PromtoolAcceptsTheTextFormat) {
    if (system("command -v promtool >/dev/null 2>&1") != 0) GTEST_SKIP() << "promtool not installed";
    ExporterCounters c;
    c.http_rejected = {{"busy", 0}};
    c.process = ProcessStats{1.5, 4096, 8192, 7, 1024, 1700000000};
    PromOptions o;
    o.per_cpu = true;
    std::string path = testing::TempDir() + "/hotline_metrics.txt";
    {
        std::ofstream f(path);
        f << render(synthetic(), o, nullptr, c);
    }
    std::string cmd = "promtool check metrics < " + path + " 2>&1";
    FILE* pipe = popen(cmd.c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    std::string out;
    char buf[512];
    while (fgets(buf, sizeof buf, pipe)) out += buf;
    int rc = pclose(pipe);
    EXPECT_EQ(rc, 0) << out;
    EXPECT_EQ(out, "") << "promtool lint findings";
    std::remove(path.c_str());
}

// ---------------------------------------------------------------- dist/ files
namespace {

const std::string kDist = std::string(HOTLINE_FIXTURES) + "/../../dist";

using testlib::slurp;

std::string run(const std::string& cmd, int* rc) {
    FILE* pipe = popen((cmd + " 2>&1").c_str(), "r");
    std::string out;
    if (!pipe) {
        *rc = -1;
        return out;
    }
    char buf[512];
    while (fgets(buf, sizeof buf, pipe)) out += buf;
    int st = pclose(pipe);
    *rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return out;
}

std::vector<std::string> dashboard_exprs() {
    auto j = nlohmann::json::parse(slurp(kDist + "/grafana/hotline-dashboard.json"), nullptr, false);
    std::vector<std::string> out;
    if (j.is_discarded()) return out;
    for (const auto& p : j["panels"])
        if (p.contains("targets"))
            for (const auto& t : p["targets"]) out.push_back(t["expr"].get<std::string>());
    return out;
}

// hotline_* / process_* names a PromQL text refers to.
std::set<std::string> metric_names(const std::string& text) {
    std::set<std::string> out;
    std::regex re("\\b((hotline|process)_[a-z_]+)");
    for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it)
        out.insert((*it)[1]);
    return out;
}

}  // namespace

TEST(Dist, DashboardAndAlertsOnlyUseMetricsTheExporterWrites) {
    PromOptions o;
    ExporterCounters c;
    c.process = ProcessStats{1, 2, 3, 4, 5, 6};
    c.http_rejected = {{"busy", 0}};
    std::string exposition = render(synthetic(), o, nullptr, c);
    std::set<std::string> written;
    std::istringstream is(exposition);
    for (std::string line; std::getline(is, line);)
        if (!line.empty() && line[0] != '#') written.insert(line.substr(0, line.find_first_of("{ ")));
    auto exprs = dashboard_exprs();
    ASSERT_GE(exprs.size(), 10u) << "dashboard JSON did not parse or lost its panels";
    std::string all = slurp(kDist + "/prometheus/hotline-alerts.yml");
    for (const auto& e : exprs) all += "\n" + e;
    auto used = metric_names(all);
    EXPECT_GE(used.size(), 10u);
    for (const auto& m : used) EXPECT_TRUE(written.count(m)) << m << " is used but never written";
}

TEST(Dist, AlertRulesPassPromtoolCheckAndTest) {
    if (system("command -v promtool >/dev/null 2>&1") != 0) GTEST_SKIP() << "promtool not installed";
    int rc = 0;
    std::string out = run("promtool check rules " + kDist + "/prometheus/hotline-alerts.yml", &rc);
    EXPECT_EQ(rc, 0) << out;
    out = run("cd " + kDist + "/prometheus && promtool test rules hotline-alerts.test.yml", &rc);
    EXPECT_EQ(rc, 0) << out;
    // The same tests with the exporter scraped under another job name: no rule may depend on it.
    std::string dir = testing::TempDir() + "/hotline_alerts_job";
    std::string test_text = slurp(kDist + "/prometheus/hotline-alerts.test.yml");
    ASSERT_NE(test_text.find("job=\"hotline\""), std::string::npos);
    test_text = std::regex_replace(test_text, std::regex("job=\"hotline\""), "job=\"ebpf-fleet\"");
    test_text = std::regex_replace(test_text, std::regex("job: hotline"), "job: ebpf-fleet");
    run("mkdir -p " + dir + " && cp " + kDist + "/prometheus/hotline-alerts.yml " + dir, &rc);
    std::ofstream(dir + "/job.test.yml") << test_text;
    out = run("cd " + dir + " && promtool test rules job.test.yml", &rc);
    EXPECT_EQ(rc, 0) << "with job=\"ebpf-fleet\": " << out;
}

// Every alert links its section of docs/runbook.md, and no query names a job.
TEST(Dist, AlertsHaveRunbooksAndNoJobName) {
    std::string rules = slurp(kDist + "/prometheus/hotline-alerts.yml");
    std::string runbook = slurp(kDist + "/../docs/runbook.md");
    ASSERT_FALSE(runbook.empty());
    std::regex alert_re("- alert: (\\w+)");
    int alerts = 0;
    for (auto it = std::sregex_iterator(rules.begin(), rules.end(), alert_re); it != std::sregex_iterator(); ++it) {
        std::string name = (*it)[1];
        std::string lower = name;
        for (auto& ch : lower) ch = char(std::tolower(static_cast<unsigned char>(ch)));
        ++alerts;
        EXPECT_NE(rules.find("runbook.md#" + lower + "\""), std::string::npos) << name << " has no runbook_url";
        EXPECT_NE(runbook.find("## " + name + "\n"), std::string::npos) << "docs/runbook.md has no section " << name;
    }
    EXPECT_GE(alerts, 10);
    EXPECT_EQ(rules.find("job="), std::string::npos) << "an alert rule names a job";
    for (const auto& e : dashboard_exprs()) {
        EXPECT_EQ(e.find("job=\""), std::string::npos) << e;
        EXPECT_NE(e.find("job=~\"$job\""), std::string::npos) << "query ignores the job variable: " << e;
    }
}

TEST(Dist, DashboardHasAHeatmapPerTargetAndCpuInTheCpuPanel) {
    auto j = nlohmann::json::parse(slurp(kDist + "/grafana/hotline-dashboard.json"));
    bool heatmap_per_target = false;
    for (const auto& p : j["panels"]) {
        if (p.value("type", "") == "heatmap" && p.value("repeat", "") == "target") heatmap_per_target = true;
        std::string title = p.value("title", "");
        if (title.find("CPU") == std::string::npos || !p.contains("targets")) continue;
        for (const auto& t : p["targets"]) {
            std::string e = t["expr"];
            bool cpu = e.find("cpu") != std::string::npos || e.find("samples") != std::string::npos ||
                       e.find("run_seconds") != std::string::npos;
            EXPECT_TRUE(cpu) << "panel \"" << title << "\" says CPU but plots " << e;
        }
    }
    EXPECT_TRUE(heatmap_per_target);
}

// Grafana's variables replaced, each panel query must be valid PromQL.
TEST(Dist, DashboardQueriesAreValidPromQL) {
    if (system("command -v promtool >/dev/null 2>&1") != 0) GTEST_SKIP() << "promtool not installed";
    auto exprs = dashboard_exprs();
    ASSERT_FALSE(exprs.empty());
    std::string path = testing::TempDir() + "/hotline_dashboard_rules.yml";
    {
        std::ofstream f(path);
        f << "groups:\n  - name: dashboard\n    rules:\n";
        int i = 0;
        for (auto e : exprs) {
            e = std::regex_replace(e, std::regex("\\$__rate_interval"), "5m");
            e = std::regex_replace(e, std::regex("\\$(job|instance|target)"), ".*");
            nlohmann::json quoted = e;
            f << "      - record: hotline:dashboard_query_" << i++ << "\n        expr: " << quoted.dump() << "\n";
        }
    }
    int rc = 0;
    std::string out = run("promtool check rules " + path, &rc);
    EXPECT_EQ(rc, 0) << out;
    std::remove(path.c_str());
}

TEST(Dist, ServiceUnitKeepsItsPromises) {
    std::string unit = slurp(kDist + "/hotline.service.in");
    ASSERT_FALSE(unit.empty());
    EXPECT_NE(unit.find("\nType=notify\n"), std::string::npos);
    EXPECT_NE(unit.find("hotline restore"), std::string::npos);
    EXPECT_EQ(unit.find("ExecReload"), std::string::npos) << "serve is reload-free";
    std::smatch m;
    ASSERT_TRUE(std::regex_search(unit, m, std::regex("\nCapabilityBoundingSet=([^\n]*)")));
    std::istringstream caps(m[1].str());
    for (std::string cap; caps >> cap;)
        EXPECT_TRUE(cap == "CAP_BPF" || cap == "CAP_PERFMON" || cap == "CAP_SYSLOG" || cap == "CAP_SYS_ADMIN") << cap;
    // The example configuration is valid.
    auto cfg = load_serve_config(kDist + "/serve.toml");
    EXPECT_TRUE(cfg.ok()) << cfg.error().message();
}

// Active findings: one series per prescribed fix, fix="" when none applies here.
TEST(Prometheus, FindingGaugeNamesRuleAndPrescribedFix) {
    ExporterCounters c;
    Finding f;
    f.rule = "dst-cross-node-handoffs";
    f.severity = Severity::kHigh;
    FixAdvice applies, absent;
    applies.fix = "numa-local";
    applies.status = FixStatus::kApplies;
    absent.fix = "tcp-low-latency";
    absent.status = FixStatus::kNotApplicable;
    f.fixes = {applies, absent};
    Finding bare;
    bare.rule = "remote-work-queueing";
    bare.severity = Severity::kLow;
    c.findings = {f, bare};
    std::string out = render(Snapshot{}, PromOptions{}, nullptr, c);
    EXPECT_NE(out.find("# TYPE hotline_finding gauge"), std::string::npos) << out;
    EXPECT_NE(out.find("hotline_finding{rule=\"dst-cross-node-handoffs\",fix=\"numa-local\",severity=\"high\"} 1"),
              std::string::npos)
        << out;
    EXPECT_EQ(out.find("fix=\"tcp-low-latency\""), std::string::npos) << out;
    EXPECT_NE(out.find("hotline_finding{rule=\"remote-work-queueing\",fix=\"\",severity=\"low\"} 1"), std::string::npos)
        << out;
    EXPECT_EQ(render(Snapshot{}, PromOptions{}).find("hotline_finding{"), std::string::npos);
}
