// SPDX-License-Identifier: Apache-2.0
// validate --live's pieces without root: output metrics, the kernel counters
// an observed window reads, the user's command per trial, and the real-host
// fixes' plans (queue files listed, a CPU set for the placement).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "fix_test_util.hpp"
#include "hotline/fix/fix.hpp"
#include "hotline/workload/live.hpp"
#include "hotline/workload/scenario.hpp"

using namespace hotline;
using hotline::test::TempDir;

namespace {

FixCatalog builtin() {
    auto c = FixCatalog::builtin();
    if (!c) ADD_FAILURE() << c.error().message();
    return c ? std::move(*c) : FixCatalog();
}

// Polls a trial to its end, as the validator loop does.
Result<LiveRun> run_trial(LiveTraffic& t, const std::vector<int>& cpus, double length_s) {
    if (auto st = t.begin(cpus, length_s); !st) return st.error();
    while (!t.done()) usleep(5000);
    return t.end();
}

LiveOptions command(std::vector<std::string> argv, std::vector<std::string> metrics = {}) {
    LiveOptions o;
    o.command = std::move(argv);
    for (auto& m : metrics) {
        auto om = parse_output_metric(m);
        EXPECT_TRUE(om) << om.error().message();
        if (om) o.metrics.push_back(*om);
    }
    return o;
}

}  // namespace

TEST(OutputMetric, ABareRegexIsTheThroughputAndNameEqualsRegexAnyOther) {
    auto bare = parse_output_metric("ops_per_s (\\S+)");
    ASSERT_TRUE(bare);
    EXPECT_EQ(bare->name, "ops_per_s");
    EXPECT_EQ(bare->pattern, "ops_per_s (\\S+)");
    auto named = parse_output_metric("p99_ms=p99=([0-9.]+)ms");
    ASSERT_TRUE(named);
    EXPECT_EQ(named->name, "p99_ms");
    EXPECT_EQ(named->pattern, "p99=([0-9.]+)ms");
    // An "=" after regex syntax is part of the pattern, not a name.
    auto eq = parse_output_metric("rate\\s*=\\s*(\\d+)");
    ASSERT_TRUE(eq);
    EXPECT_EQ(eq->name, "ops_per_s");
}

TEST(OutputMetric, PatternsWithoutAGroupOrThatDoNotCompileAreRefused) {
    auto none = parse_output_metric("ops_per_s \\S+");
    ASSERT_FALSE(none);
    EXPECT_NE(none.error().message().find("no capture group"), std::string::npos);
    auto bad = parse_output_metric("x=(unclosed");
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().message().find("not a regular expression"), std::string::npos);
}

TEST(OutputMetric, TheLastMatchCountsAndAMissOrANonNumberSaysWhat) {
    OutputMetric m{"ops_per_s", "ops_per_s (\\S+)"};
    auto v = read_output_metric(m, "ops_per_s 10\nwarming up\nops_per_s 2.5e3\n");
    ASSERT_TRUE(v) << v.error().message();
    EXPECT_DOUBLE_EQ(*v, 2500);
    auto miss = read_output_metric(m, "first\nsecond\nthird line\n");
    ASSERT_FALSE(miss);
    EXPECT_NE(miss.error().message().find("matched nothing"), std::string::npos);
    EXPECT_NE(miss.error().message().find("third line"), std::string::npos);
    auto word = read_output_metric(m, "ops_per_s fast\n");
    ASSERT_FALSE(word);
    EXPECT_NE(word.error().message().find("\"fast\", not a number"), std::string::npos);
    EXPECT_FALSE(read_output_metric(m, "ops_per_s nan\n"));
}

TEST(HostCounters, TcpOpensSegmentsAndPacketsFromProcFiles) {
    const char* snmp =
        "Ip: Forwarding DefaultTTL\nIp: 1 64\n"
        "Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets CurrEstab InSegs\n"
        "Tcp: 1 200 120000 -1 1500 1400 3 4 5 98765\n"
        "Udp: InDatagrams\nUdp: 7\n";
    auto tcp = parse_snmp_tcp(snmp);
    ASSERT_TRUE(tcp) << tcp.error().message();
    EXPECT_EQ(tcp->at("ActiveOpens"), 1500u);
    EXPECT_EQ(tcp->at("PassiveOpens"), 1400u);
    EXPECT_EQ(tcp->at("InSegs"), 98765u);
    EXPECT_EQ(tcp->at("MaxConn"), 0u);
    const char* dev =
        "Inter-|   Receive                            |  Transmit\n"
        " face |bytes    packets errs drop fifo frame compressed multicast|bytes packets\n"
        "    lo: 1000 10 0 0 0 0 0 0 1000 10\n"
        "  eth0: 555 32 0 0 0 0 0 0 66 2\n";
    auto rx = parse_netdev_rx_packets(dev);
    ASSERT_TRUE(rx) << rx.error().message();
    EXPECT_EQ(*rx, 42u);

    TempDir proc;
    proc.write("net/snmp", snmp);
    proc.write("net/dev", dev);
    EXPECT_EQ(*read_host_ops(HostOpsUnit::kConnections, proc.path()), 2900u);
    EXPECT_EQ(*read_host_ops(HostOpsUnit::kSegments, proc.path()), 98765u);
    EXPECT_EQ(*read_host_ops(HostOpsUnit::kPackets, proc.path()), 42u);
    EXPECT_FALSE(parse_host_ops_unit("bytes"));
    EXPECT_EQ(*parse_host_ops_unit("segments"), HostOpsUnit::kSegments);
}

TEST(LiveTraffic, OneRunPerTrialWithAThroughputMetric) {
    auto t = LiveTraffic::create(command({"sh", "-c", "sleep 0.05; echo ops_per_s 200"}, {"ops_per_s (\\S+)"}));
    ASSERT_TRUE(t) << t.error().message();
    auto r = run_trial(**t, {}, 30);  // the run decides the length, not the 30 s
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(r->runs, 1);
    EXPECT_GE(r->seconds, 0.05);
    EXPECT_LT(r->seconds, 5);
    EXPECT_NEAR(r->ops / r->seconds, 200, 200 * 0.5);  // metric x the run's wall time
    EXPECT_GE(r->cpu_seconds, 0);
}

TEST(LiveTraffic, WithoutAMetricTheCommandRepeatsForTheTrialAndOpsAreRuns) {
    auto t = LiveTraffic::create(command({"true"}));
    ASSERT_TRUE(t);
    auto r = run_trial(**t, {}, 0.3);
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_GE(r->runs, 2);
    EXPECT_EQ(r->ops, r->runs);
    EXPECT_GE(r->seconds, 0.3);
}

TEST(LiveTraffic, ANonZeroExitEndsTheTrialWithItsStderrTail) {
    auto t = LiveTraffic::create(command({"sh", "-c", "echo first >&2; echo broke here >&2; exit 7"}));
    ASSERT_TRUE(t);
    auto r = run_trial(**t, {}, 5);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message().find("status 7"), std::string::npos) << r.error().message();
    EXPECT_NE(r.error().message().find("broke here"), std::string::npos) << r.error().message();
}

TEST(LiveTraffic, TheTrialsCpusBecomeTheCommandsAffinity) {
    std::vector<int> cpus = usable_cpus();
    ASSERT_FALSE(cpus.empty());
    const int last = cpus.back();
    auto t = LiveTraffic::create(command({"sh", "-c", "grep Cpus_allowed_list /proc/self/status"},
                                         {"cpu=Cpus_allowed_list:\\s+(\\d+)"}));
    ASSERT_TRUE(t);
    auto r = run_trial(**t, {last}, 0.01);
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(r->extra.at("cpu"), last);
}

// numa-local live binds the command's memory to the node it runs on.
TEST(LiveTraffic, TheTrialsMemoryNodesBindTheCommandsPages) {
    if (access("/proc/self/numa_maps", R_OK)) GTEST_SKIP() << "no /proc/self/numa_maps: a kernel without NUMA";
    auto t = LiveTraffic::create(command({"sh", "-c", "echo bound=$(grep -c 'bind:0 ' /proc/self/numa_maps)"},
                                         {"bound=bound=(\\d+)"}));
    ASSERT_TRUE(t);
    auto free_run = run_trial(**t, {}, 0.01);
    ASSERT_TRUE(free_run) << free_run.error().message();
    EXPECT_EQ(free_run->extra.at("bound"), 0);
    ASSERT_TRUE((*t)->begin({}, 0.01, {0}));
    while (!(*t)->done()) usleep(5000);
    auto bound = (*t)->end();
    ASSERT_TRUE(bound) << bound.error().message();
    EXPECT_GT(bound->extra.at("bound"), 0) << "no mapping of the command has the policy bind:0";
}

TEST(LiveTraffic, AMetricNeedsACommand) {
    LiveOptions o;
    o.metrics.push_back(OutputMetric{"ops_per_s", "(\\d+)"});
    auto t = LiveTraffic::create(o);
    ASSERT_FALSE(t);
    EXPECT_NE(t.error().message().find("no command"), std::string::npos);
}

TEST(LiveFixes, QueueFilesAreListedPerDeviceQueueNeverGlobbed) {
    TempDir sys;
    sys.write("class/net/lo/queues/rx-0/rps_flow_cnt", "0\n");
    sys.write("class/net/eth0/queues/rx-0/rps_flow_cnt", "0\n");
    sys.write("class/net/eth0/queues/rx-1/rps_flow_cnt", "0\n");
    sys.write("class/net/eth0/queues/tx-0/xps_cpus", "0\n");
    sys.write("class/net/eth0/queues/rx-1/rps_cpus", "0\n");
    EXPECT_EQ(list_queue_files("rx/rps_flow_cnt", sys.path()),
              (std::vector<std::string>{"class/net/eth0/queues/rx-0/rps_flow_cnt",
                                        "class/net/eth0/queues/rx-1/rps_flow_cnt",
                                        "class/net/lo/queues/rx-0/rps_flow_cnt"}));
    EXPECT_EQ(list_queue_files("tx/xps_cpus", sys.path()),
              (std::vector<std::string>{"class/net/eth0/queues/tx-0/xps_cpus"}));
    for (auto bad : {"rx/../x", "rx/*", "up/rps_cpus", "rx/", "rx/a/b"}) {
        SCOPED_TRACE(bad);
        EXPECT_FALSE(check_queue_file(bad));
        EXPECT_TRUE(list_queue_files(bad, sys.path()).empty());
    }
}

TEST(LiveFixes, RfsWritesTheGlobalTableAndEveryRxQueueOnlyWithAllowGlobal) {
    FixCatalog cat = builtin();
    const FixDef* rfs = cat.find("rfs");
    ASSERT_NE(rfs, nullptr);
    EXPECT_TRUE(rfs->scenarios.empty());  // this host's devices only: --live
    TempDir sys;
    sys.write("class/net/lo/queues/rx-0/rps_flow_cnt", "0\n");
    sys.write("class/net/eth0/queues/rx-0/rps_flow_cnt", "0\n");
    ApplyTarget t;
    t.sys_root = sys.path();
    auto p = plan_changes(*rfs, t);
    ASSERT_FALSE(p);
    EXPECT_NE(p.error().message().find("--allow-global"), std::string::npos);
    t.allow_global = true;
    p = plan_changes(*rfs, t);
    ASSERT_TRUE(p) << p.error().message();
    ASSERT_EQ(p->writes.size(), 3u);
    EXPECT_EQ(p->writes[0].name, "net.core.rps_sock_flow_entries");
    EXPECT_EQ(p->writes[0].kind, KnobKind::kSysctl);
    EXPECT_EQ(p->writes[1].name, "class/net/eth0/queues/rx-0/rps_flow_cnt");
    EXPECT_EQ(p->writes[2].name, "class/net/lo/queues/rx-0/rps_flow_cnt");
    for (auto& w : p->writes) EXPECT_EQ(w.scope, Scope::kGlobal);
}

TEST(LiveFixes, ThePlacementFixConfinesToTheGivenCpuSetAndNeedsOne) {
    FixCatalog cat = builtin();
    const FixDef* f = cat.find("placement");
    ASSERT_NE(f, nullptr);
    ApplyTarget t;
    auto p = plan_changes(*f, t);
    ASSERT_FALSE(p);
    EXPECT_NE(p.error().message().find("--fix-cpus"), std::string::npos);
    t.cpu_set = {1, 3};
    p = plan_changes(*f, t);
    ASSERT_TRUE(p) << p.error().message();
    ASSERT_TRUE(p->placement);
    EXPECT_EQ(p->placement->cpus, (std::vector<int>{1, 3}));
    EXPECT_FALSE(p->placement->per_cpu_routes);
    EXPECT_TRUE(p->writes.empty());  // nothing machine-wide
}

TEST(LiveFixes, QueueChangesParseOnlyAsGlobalQueueFiles) {
    const char* base = R"(
[[fix]]
name = "q"
mode = "runtime"
summary = "s"
  [[fix.change]]
  queues = "%s"
  value = "1"
  scope = "%s"
  [[fix.expect]]
  metric = "handoff.dst_release.cross_cpu_per_op"
  down = "20%%"
)";
    auto parse = [&](const char* q, const char* scope) {
        char buf[512];
        snprintf(buf, sizeof buf, base, q, scope);
        return FixCatalog::parse(buf, "test.toml");
    };
    EXPECT_TRUE(parse("tx/xps_cpus", "global"));
    auto netns = parse("tx/xps_cpus", "netns");
    ASSERT_FALSE(netns);
    auto bad = parse("rx/../../etc", "global");
    ASSERT_FALSE(bad);
}

TEST(LiveFixes, ACpuMaskIsLaidOutAsTheKnobPrintsIt) {
    EXPECT_EQ(cpu_mask_like({0, 1}, "0").value(), "3");
    EXPECT_EQ(cpu_mask_like({2, 3}, "0").value(), "c");
    EXPECT_EQ(cpu_mask_like({0, 33}, "00000000,00000000").value(), "00000002,00000001");
    EXPECT_EQ(cpu_mask_like({39}, "00,00000000").value(), "80,00000000");
    EXPECT_EQ(cpu_mask_like({}, "0000").value(), "0000");
    auto wide = cpu_mask_like({4}, "0");  // 4 bits: CPUs 0-3
    ASSERT_FALSE(wide);
    EXPECT_NE(wide.error().message().find("CPU 4"), std::string::npos) << wide.error().message();
}

// A two-node machine: eth0's PCI function on node 1, eth1 with a firmware that
// says -1, lo virtual; node 0 is CPUs 0-1, node 1 CPUs 2-3.
static void two_node_cpus(const TempDir& sys) {
    sys.write("devices/system/cpu/possible", "0-3\n");
    sys.write("devices/system/node/node0/cpulist", "0-1\n");
    sys.write("devices/system/node/node1/cpulist", "2-3\n");
}

static void two_node_sys(const TempDir& sys) {
    namespace fs = std::filesystem;
    two_node_cpus(sys);
    sys.write("devices/pci0000:00/0000:00:03.0/numa_node", "1\n");
    sys.write("devices/pci0000:00/0000:00:03.0/virtio2/vendor", "x\n");
    sys.write("devices/pci0000:00/0000:00:04.0/numa_node", "-1\n");
    fs::create_directories(sys / "class/net/eth0");
    fs::create_directories(sys / "class/net/eth1");
    fs::create_directory_symlink(sys / "devices/pci0000:00/0000:00:03.0/virtio2", sys / "class/net/eth0/device");
    fs::create_directory_symlink(sys / "devices/pci0000:00/0000:00:04.0", sys / "class/net/eth1/device");
    for (auto dev : {"eth0", "eth1", "lo"}) sys.write(std::string("class/net/") + dev + "/queues/rx-0/rps_cpus", "0\n");
    sys.write("class/net/eth0/queues/tx-0/xps_cpus", "0\n");
    sys.write("class/net/eth0/queues/tx-1/xps_cpus", "");  // a queue with no XPS map reads nothing
}

TEST(LiveFixes, RpsNodeSteersEachDevicesQueuesToItsOwnNodeAndLeavesTheNodelessAlone) {
    TempDir sys;
    two_node_sys(sys);
    EXPECT_EQ(device_numa_node(sys.path(), "eth0"), std::optional<int>(1));
    EXPECT_EQ(device_numa_node(sys.path(), "eth1"), std::nullopt);
    EXPECT_EQ(device_numa_node(sys.path(), "lo"), std::nullopt);
    FixCatalog cat = builtin();
    const FixDef* f = cat.find("rps-node");
    ASSERT_NE(f, nullptr);
    EXPECT_TRUE(f->scenarios.empty());  // this host's devices only: --live
    ApplyTarget t;
    t.sys_root = sys.path();
    t.allow_global = true;
    auto p = plan_changes(*f, t);
    ASSERT_TRUE(p) << p.error().message();
    ASSERT_EQ(p->writes.size(), 2u);
    EXPECT_EQ(p->writes[0].name, "class/net/eth0/queues/rx-0/rps_cpus");
    EXPECT_EQ(p->writes[0].value, "c");
    EXPECT_EQ(p->writes[1].name, "class/net/eth0/queues/tx-0/xps_cpus");
    EXPECT_EQ(p->writes[1].value, "c");
    std::string notes;
    for (auto& n : p->notes) notes += n + "\n";
    EXPECT_NE(notes.find("eth1 has no NUMA node"), std::string::npos) << notes;
    EXPECT_NE(notes.find("lo has no NUMA node"), std::string::npos) << notes;
    EXPECT_NE(notes.find("tx-1/xps_cpus: cannot be read"), std::string::npos) << notes;
}

TEST(LiveFixes, RpsNodeWithNoDeviceOnANodeSaysSoAndChangesNothing) {
    TempDir sys;
    two_node_cpus(sys);
    sys.write("class/net/lo/queues/rx-0/rps_cpus", "0\n");
    FixCatalog cat = builtin();
    ApplyTarget t;
    t.sys_root = sys.path();
    t.allow_global = true;
    auto p = plan_changes(*cat.find("rps-node"), t);
    ASSERT_FALSE(p);
    EXPECT_NE(p.error().message().find("no rx queue here has rps_cpus"), std::string::npos) << p.error().message();
    // On one node every device is on it: a virtual device's queues get every CPU.
    TempDir one;
    one.write("devices/system/cpu/possible", "0-1\n");
    one.write("devices/system/node/node0/cpulist", "0-1\n");
    one.write("class/net/lo/queues/rx-0/rps_cpus", "0\n");
    t.sys_root = one.path();
    p = plan_changes(*cat.find("rps-node"), t);
    ASSERT_TRUE(p) << p.error().message();
    ASSERT_EQ(p->writes.size(), 1u);
    EXPECT_EQ(p->writes[0].value, "3");
}
