// SPDX-License-Identifier: Apache-2.0
// Scenario arithmetic and parsing without root: percentiles, /proc/stat, size
// sweeps, qperf output, option checking, the registry, and the leftover-owner logic.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "files.hpp"
#include "hotline/workload/netns.hpp"
#include "hotline/workload/scenario.hpp"
#include "hotline/workload/workload.hpp"

using namespace hotline;
namespace fs = std::filesystem;

namespace {

using testlib::slurp;
using testlib::TempDir;

std::string fixture(const std::string& rel) { return slurp(std::string(HOTLINE_FIXTURES) + "/" + rel); }

}  // namespace

// --- percentiles ---------------------------------------------------------------------------

TEST(LatencyHistogram, ExactBelow128AndNearestRank) {
    LatencyHistogram h;
    for (std::uint64_t v = 1; v <= 100; ++v) h.record(v);
    EXPECT_EQ(h.count(), 100u);
    EXPECT_EQ(h.percentile(50), 50u);   // rank ceil(0.5*100) = 50
    EXPECT_EQ(h.percentile(90), 90u);
    EXPECT_EQ(h.percentile(99), 99u);
    EXPECT_EQ(h.percentile(99.9), 100u);  // rank ceil(99.9) = 100
    EXPECT_EQ(h.percentile(100), 100u);
    EXPECT_EQ(h.min(), 1u);
    EXPECT_EQ(h.max(), 100u);
    EXPECT_DOUBLE_EQ(h.mean(), 50.5);
}

TEST(LatencyHistogram, BucketsCoverEveryValueOnce) {
    std::mt19937_64 rng(7);
    for (int i = 0; i < 100000; ++i) {
        std::uint64_t v = rng() >> (rng() % 40 + 18);
        std::size_t b = LatencyHistogram::bucket_of(v);
        ASSERT_LE(LatencyHistogram::bucket_low(b), v);
        ASSERT_LT(v, LatencyHistogram::bucket_low(b) + LatencyHistogram::bucket_width(b)) << v;
        // relative bucket width bounds the reported error
        if (v >= LatencyHistogram::kSub) {
            ASSERT_LE(double(LatencyHistogram::bucket_width(b)) / double(LatencyHistogram::bucket_low(b)), 1.0 / 128);
        }
    }
    EXPECT_EQ(LatencyHistogram::bucket_of(127), 127u);
    EXPECT_EQ(LatencyHistogram::bucket_of(128), 128u);
    EXPECT_EQ(LatencyHistogram::bucket_of(255), 255u);
    EXPECT_EQ(LatencyHistogram::bucket_of(256), 256u);  // width 2 from here on
    EXPECT_EQ(LatencyHistogram::bucket_of(257), 256u);
}

TEST(LatencyHistogram, MatchesSortedSampleWithinBound) {
    // Lognormal round trips around 50 us with a long tail, as on a busy host.
    std::mt19937_64 rng(42);
    std::lognormal_distribution<double> d(std::log(50000.0), 0.6);
    std::vector<std::uint64_t> v;
    LatencyHistogram h;
    for (int i = 0; i < 200000; ++i) {
        auto x = std::uint64_t(d(rng));
        v.push_back(x);
        h.record(x);
    }
    std::sort(v.begin(), v.end());
    for (double p : {50.0, 90.0, 99.0, 99.9}) {
        std::size_t rank = std::size_t(std::ceil(p / 100 * double(v.size())));
        double exact = double(v[rank - 1]);
        double got = double(h.percentile(p));
        EXPECT_NEAR(got, exact, exact / 256 + 1) << "p" << p;
    }
}

TEST(LatencyHistogram, MergeEqualsOneHistogram) {
    LatencyHistogram a, b, all;
    for (std::uint64_t v = 1000; v < 50000; v += 37) {
        (v % 2 ? a : b).record(v);
        all.record(v);
    }
    a.merge(b);
    EXPECT_EQ(a.count(), all.count());
    EXPECT_EQ(a.min(), all.min());
    EXPECT_EQ(a.max(), all.max());
    for (double p : {1.0, 50.0, 99.0}) EXPECT_EQ(a.percentile(p), all.percentile(p));
}

TEST(LatencyHistogram, EmptyIsZero) {
    LatencyHistogram h;
    EXPECT_EQ(h.percentile(50), 0u);
    EXPECT_EQ(h.min(), 0u);
    EXPECT_EQ(h.mean(), 0);
}

// --- /proc/stat ------------------------------------------------------------------------------

TEST(ProcStat, ParsesPerCpuLines) {
    auto r = parse_proc_stat(fixture("proc_stat_2cpu.txt"));
    ASSERT_TRUE(r.ok()) << r.error().message();
    ASSERT_EQ(r->size(), 2u);
    const CpuTicks& c0 = r->at(0);
    EXPECT_EQ(c0.user, 1132u);
    EXPECT_EQ(c0.idle, 11311718u);
    EXPECT_EQ(c0.softirq, 438u);
    EXPECT_EQ(c0.steal, 7u);
    EXPECT_EQ(c0.busy(), 1132u + 34 + 1441 + 127 + 438 + 7);
}

TEST(ProcStat, RejectsGarbage) {
    EXPECT_FALSE(parse_proc_stat("intr 1 2 3\n").ok());
    EXPECT_FALSE(parse_proc_stat("cpu0 1 2 x\n").ok());
}

// --- sizes -------------------------------------------------------------------------------------

TEST(SizeList, QperfSweepSyntax) {
    auto r = parse_size_list("4K:1M:*2");
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(r->size(), 9u);
    EXPECT_EQ(r->front(), 4096u);
    EXPECT_EQ(r->back(), 1048576u);
    EXPECT_EQ(format_size(r->at(4)), "64K");
    EXPECT_EQ(format_size(1048576), "1M");
    EXPECT_EQ(format_size(1000), "1000");
}

TEST(SizeList, CommaListAndErrors) {
    auto r = parse_size_list("64,4K,1m");
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(*r, (std::vector<std::uint64_t>{64, 4096, 1048576}));
    EXPECT_FALSE(parse_size_list("").ok());
    EXPECT_FALSE(parse_size_list("4X").ok());
    EXPECT_FALSE(parse_size_list("0").ok());
    EXPECT_FALSE(parse_size_list("1M:4K:*2").ok());
    EXPECT_FALSE(parse_size_list("4K:1M:*1").ok());
    EXPECT_FALSE(parse_size_list("4K:1M").ok());
    auto e = parse_size_list("4K,zz");
    ASSERT_FALSE(e.ok());
    EXPECT_NE(e.error().message().find("zz"), std::string::npos);
}

// --- qperf output --------------------------------------------------------------------------------

TEST(QperfParse, VerboseUnifiedSweep) {
    auto r = parse_qperf_output(fixture("qperf/tcp_lat_bw_verbose_unified.txt"));
    ASSERT_TRUE(r.ok()) << r.error().message();
    ASSERT_EQ(r->size(), 10u);
    EXPECT_EQ(r->at(0).test, "tcp_lat");
    EXPECT_DOUBLE_EQ(r->at(0).values.at("latency"), 8463);
    EXPECT_DOUBLE_EQ(r->at(0).values.at("msg_size"), 4096);
    EXPECT_DOUBLE_EQ(r->at(0).values.at("time"), 2e9);
    EXPECT_EQ(r->at(5).test, "tcp_bw");
    EXPECT_DOUBLE_EQ(r->at(5).values.at("bw"), 14668611584.0);

    ScenarioResult res;
    ASSERT_TRUE(apply_qperf_blocks(*r, res).ok());
    ASSERT_EQ(res.latency.size(), 5u);
    EXPECT_EQ(res.latency[0].msg_size, 4096u);
    EXPECT_DOUBLE_EQ(res.latency[0].one_way_ns, 8463);
    EXPECT_DOUBLE_EQ(res.latency[0].rtt_mean_ns, 2 * 8463);
    EXPECT_FALSE(res.latency[0].has_percentiles);
    EXPECT_EQ(res.latency[4].msg_size, 65536u);
    // every bw block ran 2 s: the mean of the five bandwidths
    double mean = (14668611584.0 + 15701311488.0 + 27909947392.0 + 22028877824.0 + 24125636608.0) / 5 / 1e6;
    EXPECT_NEAR(res.mbit_per_s, mean, 1e-6 * mean);
}

TEST(QperfParse, DefaultUnits) {
    auto r = parse_qperf_output(fixture("qperf/default_units.txt"));
    ASSERT_TRUE(r.ok()) << r.error().message();
    ASSERT_EQ(r->size(), 2u);
    EXPECT_DOUBLE_EQ(r->at(0).values.at("latency"), 270e3);
    EXPECT_DOUBLE_EQ(r->at(1).values.at("bw"), 3.73 * 8e9);
}

TEST(QperfParse, VerboseUnitsAndExactSize) {
    auto v = parse_qperf_output(fixture("qperf/verbose_units.txt"));
    ASSERT_TRUE(v.ok()) << v.error().message();
    EXPECT_DOUBLE_EQ(v->at(0).values.at("latency"), 3190);
    EXPECT_DOUBLE_EQ(v->at(0).values.at("msg_rate"), 313e3);
    EXPECT_DOUBLE_EQ(v->at(0).values.at("time"), 1e9);
    EXPECT_EQ(v->at(1).test, "udp_lat");
    auto k = parse_qperf_output(fixture("qperf/verbose_kib.txt"));
    ASSERT_TRUE(k.ok()) << k.error().message();
    EXPECT_DOUBLE_EQ(k->at(0).values.at("msg_size"), 4096);  // "4 KiB (4,096)"
    EXPECT_DOUBLE_EQ(k->at(1).values.at("send_cost"), 2.15e9);
    auto b = parse_qperf_output(fixture("qperf/bits_default.txt"));
    ASSERT_TRUE(b.ok()) << b.error().message();
    EXPECT_DOUBLE_EQ(b->at(0).values.at("bw"), 31.4e9);
    EXPECT_DOUBLE_EQ(b->at(1).values.at("latency"), 64e3);
}

TEST(QperfParse, FailureTextIsAnError) {
    auto r = parse_qperf_output(fixture("qperf/failed_connect.txt"));
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("failed to connect"), std::string::npos);
    EXPECT_FALSE(parse_qperf_output("").ok());
    EXPECT_FALSE(parse_qperf_output("tcp_lat:\n    latency = 3 parsecs\n").ok());
}

// --- options ------------------------------------------------------------------------------------

TEST(ScenarioOptions, DefaultsFollowTheReports) {
    ScenarioOptions o;
    o.name = "dst-refcount";
    ASSERT_TRUE(resolve_scenario_options(o, {0, 1}).ok());
    EXPECT_EQ(o.cpus, (std::vector<int>{0, 1}));
    EXPECT_EQ(o.flows_per_cpu, 3);
    EXPECT_EQ(o.msg_size, 64);
    EXPECT_EQ(o.sockbuf, 65536);
    EXPECT_EQ(o.duration_s, 10);

    ScenarioOptions l;
    l.name = "irq-lat";
    ASSERT_TRUE(resolve_scenario_options(l, {0, 1}).ok());
    EXPECT_EQ(l.msg_sizes.size(), 9u);
    EXPECT_EQ(l.duration_s, 9);  // 1 s per size

    ScenarioOptions c;
    c.name = "tcp-crr";
    ASSERT_TRUE(resolve_scenario_options(c, {0, 1}).ok());
    EXPECT_EQ(c.flows_per_cpu, 1);
}

TEST(ScenarioOptions, BadInputNamesTheProblem) {
    ScenarioOptions o;
    o.name = "nope";
    auto st = resolve_scenario_options(o, {0});
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message().find("dst-refcount"), std::string::npos);

    ScenarioOptions c;
    c.name = "dst-refcount";
    c.cpus = {5};
    st = resolve_scenario_options(c, {0, 1});
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message().find("CPU 5"), std::string::npos);

    ScenarioOptions e;
    e.name = "exec";
    EXPECT_FALSE(resolve_scenario_options(e, {0}).ok());

    ScenarioOptions q;
    q.name = "qperf";
    q.duration_s = 3;  // 9 sizes need 9 s: qperf takes whole seconds
    EXPECT_FALSE(resolve_scenario_options(q, {0}).ok());

    ScenarioOptions f;
    f.name = "dst-refcount";
    f.flows_per_cpu = 100;
    EXPECT_FALSE(resolve_scenario_options(f, {0}).ok());
}

// --- the registry ---------------------------------------------------------------------------------

TEST(ScenarioRegistry, EveryEntryIsComplete) {
    auto problems = scenario_registry_problems(scenario_registry());
    std::string all;
    for (auto& p : problems) all += p + "\n";
    EXPECT_TRUE(problems.empty()) << all;
    for (auto& d : scenario_registry()) EXPECT_EQ(find_scenario(d.name), &d);
}

// The check itself: each kind of incomplete entry is named.
TEST(ScenarioRegistry, IncompleteEntriesAreNamed) {
    auto run = scenario_registry().front().run;
    auto problems = [](std::vector<ScenarioDef> entries) {
        std::string all;
        for (auto& p : scenario_registry_problems(entries)) all += p + "\n";
        return all;
    };
    auto has = [](const std::string& all, const char* what) { return all.find(what) != std::string::npos; };
    ScenarioDef good{.name = "ok", .summary = "one line", .ops = OpsUnit::kMessages, .run = run};
    EXPECT_EQ(problems({good}), "");
    EXPECT_TRUE(has(problems({{.name = "", .summary = "s", .ops = OpsUnit::kMessages, .run = run}}), "no name"));
    EXPECT_TRUE(has(problems({{.name = "a", .summary = "", .ops = OpsUnit::kMessages, .run = run}}), "a: no summary"));
    EXPECT_TRUE(has(problems({{.name = "a", .summary = "s", .ops = OpsUnit::kMessages}}), "a: no generator"));
    EXPECT_TRUE(has(problems({good, good}), "ok: duplicate name"));
    EXPECT_TRUE(has(problems({{.name = "two words", .summary = "s", .ops = OpsUnit::kMessages, .run = run}}),
                    "not one word"));
    ScenarioDef flows = good;
    flows.flows_per_cpu = 65;
    EXPECT_TRUE(has(problems({flows}), "default --flows-per-cpu 65 is out of range"));
    ScenarioDef msg = good;
    msg.msg_size = 0;
    EXPECT_TRUE(has(problems({msg}), "default --msg-size 0 is out of range"));
    ScenarioDef live = good;
    live.ops = OpsUnit::kExchanges;
    live.live_ops = true;
    EXPECT_TRUE(has(problems({live}), "live operation count"));
    ScenarioDef unit = good;
    unit.ops = OpsUnit::kNone;
    EXPECT_TRUE(has(problems({unit}), "no operation unit"));
}

// docs/scenarios.md lists exactly the registry's scenarios, in its order.
TEST(ScenarioRegistry, DocsListEveryScenario) {
    std::istringstream doc(slurp(std::string(HOTLINE_FIXTURES) + "/../../docs/scenarios.md"));
    std::vector<std::string> listed, registered;
    for (std::string line; std::getline(doc, line);)
        if (line.rfind("| `", 0) == 0) listed.push_back(line.substr(3, line.find('`', 3) - 3));
    for (auto& d : scenario_registry()) registered.emplace_back(d.name);
    EXPECT_EQ(listed, registered);
}

TEST(ScenarioRegistry, OperationsInEachScenariosUnit) {
    ScenarioResult crr;
    crr.scenario = "tcp-crr";
    crr.connections = 7;
    crr.messages = 100;  // not its unit
    EXPECT_EQ(scenario_ops(crr), 7);
    ScenarioResult lat;
    lat.scenario = "irq-lat";
    lat.latency.resize(2);
    lat.latency[0].exchanges = 3;
    lat.latency[1].exchanges = 4;
    EXPECT_EQ(scenario_ops(lat), 7);
    ScenarioResult bw;
    bw.scenario = "qperf";
    bw.messages = 5;
    EXPECT_EQ(scenario_ops(bw), 5);
    bw.latency = lat.latency;
    EXPECT_EQ(scenario_ops(bw), 7);
    ScenarioResult cmd;
    cmd.scenario = "exec";
    cmd.messages = 9;
    EXPECT_EQ(scenario_ops(cmd), 0);
}

TEST(ScenarioRegistry, OptionsReadDecideParamsAndSweeps) {
    ScenarioOptions q;
    q.name = "qperf";
    EXPECT_EQ(shape_options_read(q), unsigned(kOptQperfTest | kOptMsgSizes));
    q.qperf_test = "tcp_bw";
    EXPECT_EQ(shape_options_read(q), unsigned(kOptQperfTest | kOptMsgSize));
    ASSERT_TRUE(resolve_scenario_options(q, {0, 1}).ok());
    EXPECT_EQ(q.duration_s, 10);  // not a sweep
    EXPECT_EQ(q.msg_size, 64 * 1024);
    ScenarioOptions unknown;
    unknown.name = "nope";
    EXPECT_EQ(shape_options_read(unknown), 0u);
    EXPECT_EQ(registry_defaults(kOptFlowsPerCpu), "dst-refcount 3, tcp-crr 1");
    EXPECT_EQ(scenarios_reading(kOptMsgSizes), "irq-lat, qperf");
}

TEST(ScenarioJson, QperfPointsHaveNullPercentiles) {
    ScenarioResult r;
    r.scenario = "qperf";
    r.generator = "qperf";
    LatencyPoint p;
    p.msg_size = 4096;
    p.one_way_ns = 1000;
    p.rtt_mean_ns = 2000;
    r.latency.push_back(p);
    auto j = to_json(r);
    EXPECT_TRUE(j["latency"][0]["p99_ns"].is_null());
    EXPECT_EQ(j["latency"][0]["one_way_ns"], 1000);
    EXPECT_FALSE(j.contains("throughput"));
    std::ostringstream os;
    render_scenario_text(os, r);
    EXPECT_NE(os.str().find("4K"), std::string::npos);
}

// --- names, owners, leftovers ------------------------------------------------------------------------

TEST(NetNames, OwnerOfOnlyOurExactPattern) {
    EXPECT_EQ(owned_name(1234, "c"), "hl-1234-c");
    EXPECT_EQ(owner_of("hl-1234-c"), 1234);
    EXPECT_EQ(owner_of("hl-1234-s"), 1234);
    EXPECT_EQ(owner_of("hl-4194304-s0"), 4194304);
    EXPECT_LE(owned_name(4194304, "c0").size(), 15u);  // IFNAMSIZ - 1
    for (const char* foreign : {"hl-", "hl--c", "hl-12", "hl-12-x", "hl-012-c", "hl-12-c1", "hl-abc-c", "hlx-12-c",
                                "hl-99999999-c", "eth0", "hl-12-c-extra"})
        EXPECT_FALSE(owner_of(foreign).has_value()) << foreign;
}

TEST(NetNames, SelectLeftoversOfDeadOwnersOnly) {
    std::vector<std::string> names = {"hl-100-c", "hl-100-s", "hl-200-c", "hl-300-s0", "hl-42-c", "eth0", "hl-foo-c", "other"};
    std::vector<int> asked;
    auto alive = [&](int pid) {
        asked.push_back(pid);
        return pid == 200;
    };
    auto left = select_leftovers(names, 42, alive);
    EXPECT_EQ(left, (std::vector<std::string>{"hl-100-c", "hl-100-s", "hl-300-s0"}));
    // asked once per owner, never about ourselves
    std::sort(asked.begin(), asked.end());
    EXPECT_EQ(asked, (std::vector<int>{100, 200, 300}));
}

TEST(OwnerLock, HeldWhileOwnedGoneAfter) {
    TempDir d;
    {
        auto l = OwnerLock::acquire(d.path(), 777);
        ASSERT_TRUE(l.ok()) << l.error().message();
        EXPECT_TRUE(OwnerLock::held(d.path(), 777));
        EXPECT_TRUE(fs::exists(d / "hl-777.lock"));
        EXPECT_FALSE(OwnerLock::acquire(d.path(), 777).ok());  // one owner at a time
    }
    EXPECT_FALSE(OwnerLock::held(d.path(), 777));
    EXPECT_FALSE(fs::exists(d / "hl-777.lock"));
    // A lock file nobody holds (its owner was SIGKILLed) means a dead owner.
    d.touch("hl-778.lock");
    EXPECT_FALSE(OwnerLock::held(d.path(), 778));
}

TEST(Leftovers, PidsInNetnsMatchByInode) {
    TempDir d;
    d.touch("netns/hl-5-c");
    d.touch("proc/other/ns/net");
    fs::create_directories(d / "proc/100/ns");
    fs::create_hard_link(d / "netns/hl-5-c", d / "proc/100/ns/net");
    d.touch("proc/200/ns/net");  // another namespace
    fs::create_directories(d / "proc/300");  // a zombie: no ns link
    auto pids = pids_in_netns(d / "proc", d / "netns/hl-5-c");
    EXPECT_EQ(pids, (std::vector<pid_t>{100}));
}

TEST(Leftovers, CleanRemovesDeadOwnersOnly) {
    TempDir d;
    NetPaths p;
    p.run_netns = d / "netns";
    p.lock_dir = d / "locks";
    p.proc = d / "proc";
    p.sys_class_net = d / "net";
    fs::create_directories(p.proc);
    fs::create_directories(p.sys_class_net);
    int self = getpid();
    d.touch("netns/hl-999991-c");  // dead owner, no lock file
    d.touch("netns/hl-999992-s");  // dead owner, stale lock file
    d.touch("locks/hl-999992.lock");
    d.touch("netns/hl-999993-c");  // live owner
    auto live = OwnerLock::acquire(p.lock_dir, 999993);
    ASSERT_TRUE(live.ok());
    d.touch("netns/" + owned_name(self, "c"));  // ours
    d.touch("netns/someone-else");
    auto rep = clean_leftovers(p);
    std::sort(rep.namespaces.begin(), rep.namespaces.end());
    EXPECT_EQ(rep.namespaces, (std::vector<std::string>{"hl-999991-c", "hl-999992-s"}));
    EXPECT_TRUE(rep.problems.empty());
    EXPECT_FALSE(fs::exists(d / "netns/hl-999991-c"));
    EXPECT_FALSE(fs::exists(d / "locks/hl-999992.lock"));
    EXPECT_TRUE(fs::exists(d / "netns/hl-999993-c"));
    EXPECT_TRUE(fs::exists(d / "locks/hl-999993.lock"));
    EXPECT_TRUE(fs::exists(d / ("netns/" + owned_name(self, "c"))));
    EXPECT_TRUE(fs::exists(d / "netns/someone-else"));
}

// --- child processes --------------------------------------------------------------------------------

TEST(Spawn, EnvironmentAndCapturedOutput) {
    auto r = run_capture({"sh", "-c", "echo out; echo err >&2"});
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(*r, "out\nerr\n");
    auto f = run_capture({"sh", "-c", "echo broken; exit 3"});
    ASSERT_FALSE(f.ok());
    EXPECT_NE(f.error().message().find("status 3"), std::string::npos);
    EXPECT_NE(f.error().message().find("broken"), std::string::npos);
    EXPECT_FALSE(run_capture({"/nonexistent/hotline-test-binary"}).ok());
}

TEST(Spawn, ExtraEnvironmentReachesTheCommand) {
    TempDir d;
    std::string out = d / "env";
    SpawnOptions so;
    so.env = {"HOTLINE_SERVER_ADDR=10.1.2.3", "HOME=/hotline-test"};
    auto c = ChildProcess::spawn({"sh", "-c", "echo $HOTLINE_SERVER_ADDR $HOME > " + out}, so);
    ASSERT_TRUE(c.ok()) << c.error().message();
    EXPECT_EQ(c->wait(), 0);
    EXPECT_EQ(slurp(out), "10.1.2.3 /hotline-test\n");
}
