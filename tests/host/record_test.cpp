// SPDX-License-Identifier: Apache-2.0
// Privileged tests of `hotline probe` and `hotline record` on this machine's
// kernel.  What the kernel admits (fentry, kprobes), its lockdown mode and its
// nodes come from tests/lib/machine_facts.hpp, never from hotline's own reading.
#include <gtest/gtest.h>
#include <signal.h>

#include <map>
#include <thread>

#include "host_util.hpp"
#include "machine_facts.hpp"

using namespace hosttest;
using hostfacts::MachineFacts;

class HostTest : public ::testing::Test {
protected:
    void SetUp() override {
        if (geteuid() != 0) GTEST_FAIL() << "host tests need root (run them as CI does: as root)";
    }
};

// The topology hotline reports against the facts' nodes.
void expect_topology(const nlohmann::json& topo) {
    const MachineFacts& mf = MachineFacts::get();
    std::map<int, std::vector<int>> seen;
    for (auto& n : topo["nodes"]) seen[n["node"].get<int>()] = n["cpus"].get<std::vector<int>>();
    EXPECT_EQ(seen, mf.nodes()) << mf.why({"nodes"}) << "\nhotline reported: " << topo.dump();
}

TEST_F(HostTest, ProbeJsonReportsThePlanWithReasons) {
    const MachineFacts& mf = MachineFacts::get();
    CmdResult r = run(hosttest::hotline() + " probe --json");
    ASSERT_EQ(r.rc, 0) << r.err;
    auto j = nlohmann::json::parse(r.out);
    EXPECT_FALSE(j["kernel"]["release"].get<std::string>().empty());
    EXPECT_TRUE(j["kernel"]["btf"].get<bool>());
    EXPECT_EQ(j["kernel"]["lockdown"], mf.lockdown()) << mf.why({"lockdown"}) << "; hotline: " << j["kernel"];
    EXPECT_EQ(j["kernel"]["kprobes"], mf.kprobe_pmu()) << mf.why({"kprobe"}) << "; hotline: " << j["kernel"];
    EXPECT_TRUE(j["kernel"]["capabilities"]["missing"].empty());
    expect_topology(j["topology"]);
    const auto* q = find_target(j["plan"], "queue_work_on");
    const auto* c = find_target(j["plan"], "ipv4_dst_check");
    const auto* d = find_target(j["plan"], "dst_release");
    const auto* p = find_target(j["plan"], "tcp_prequeue");
    ASSERT_TRUE(q && c && d && p);
    for (auto [t, proxy, fidelity] : {std::tuple{q, true, "exact"}, std::tuple{c, false, ""},
                                      std::tuple{d, true, "partial"}}) {
        std::string wrong = plan_mismatch(*t, proxy, fidelity);
        EXPECT_TRUE(wrong.empty()) << wrong;
    }
    EXPECT_EQ((*p)["mechanism"], "unavailable");
    EXPECT_NE((*p)["reason"].get<std::string>().find("removed in 4.14"), std::string::npos);
    EXPECT_EQ(orphans_after_exit(), 0) << "probe must detach everything";
}

TEST_F(HostTest, ProbeTextExplainsLockdownAndPlan) {
    const MachineFacts& mf = MachineFacts::get();
    CmdResult r = run(hosttest::hotline() + " probe");
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_NE(r.out.find("lockdown    " + mf.lockdown() + "\n"), std::string::npos) << mf.why({"lockdown"}) << "\n"
                                                                                      << r.out;
    std::size_t n = mf.nodes().size();
    EXPECT_NE(r.out.find(std::to_string(n) + " NUMA node" + (n == 1 ? "\n" : "s\n")), std::string::npos)
        << mf.why({"nodes"}) << "\n" << r.out;
    EXPECT_NE(r.out.find("  queue_work_on    " + mf.planned(true)), std::string::npos) << mf.why({"fentry", "kprobe"})
                                                                                     << "\n" << r.out;
    for (auto& [mech, reason] : mf.rejections_before(true))
        EXPECT_NE(r.out.find(mech + ": " + reason), std::string::npos) << mf.why({"fentry", "kprobe"}) << "\n"
                                                                        << r.out;
}

// Each write to vm.stat_refresh runs schedule_on_each_cpu(): one queue_work_on per
// online CPU, queued from the writing CPU.  perf counts the tracepoint around
// the recording: per CPU, hotline counts no more than the kernel queued.
TEST_F(HostTest, QueueWorkOnCountsMatchProvokedWork) {
    const int writes = 500;
    int ncpu = int(sysconf(_SC_NPROCESSORS_ONLN));
    const std::string event = "workqueue:workqueue_queue_work";
    std::string f = temp_path("qwo.json"), pf = temp_path("qwo-perf.txt");
    std::string cmd = perf_stat(pf, {event}) + hosttest::hotline() +
                      " record -q -t queue_work_on -m tracepoint -i 500ms -o " + f +
                      " -- taskset -c 1 sh -c 'i=0; while [ $i -lt " + std::to_string(writes) +
                      " ]; do echo 1 > /proc/sys/vm/stat_refresh; i=$((i+1)); done'";
    CmdResult r = run(cmd);
    ASSERT_EQ(r.rc, 0) << r.err;
    auto j = load_json(f);
    PerfCounts perf = read_perf(pf);
    unlink(f.c_str());
    unlink(pf.c_str());
    const auto* t = find_target(j["totals"]["targets"], "queue_work_on");
    ASSERT_TRUE(t);
    std::uint64_t expected = std::uint64_t(writes) * ncpu;
    EXPECT_GE((*t)["calls_total"].get<std::uint64_t>(), expected) << "every provoked work item must be counted";
    EXPECT_GE((*t)["calls"][1].get<std::uint64_t>(), expected) << "the work is queued from the writing CPU (1)";
    for (int cpu = 0; cpu < ncpu; ++cpu)
        EXPECT_LE((*t)["calls"][std::size_t(cpu)].get<std::uint64_t>(), perf.on(event, cpu))
            << "CPU " << cpu << ": more than the kernel queued in a window around the recording";
    EXPECT_EQ((*t)["mechanism"], "tracepoint");
}

TEST_F(HostTest, ChurnGivesDstReleaseProxyCountsAndTotalsEqualIntervals) {
    std::string f = temp_path("churn.json");
    CmdResult r = run(hosttest::hotline() +
                      " record -q -t dst_release,queue_work_on -m tracepoint -d 3 -i 500ms --workload churn -o " + f);
    ASSERT_EQ(r.rc, 0) << r.err;
    auto j = load_json(f);
    unlink(f.c_str());
    EXPECT_EQ(j["schema"], "hotline.recording");
    EXPECT_EQ(j["version"], 1);
    std::uint64_t conns = j["workload"]["connections"];
    ASSERT_GT(conns, 100u);
    const auto* d = find_target(j["totals"]["targets"], "dst_release");
    ASSERT_TRUE(d);
    EXPECT_EQ((*d)["fidelity"], "partial");
    std::uint64_t calls = (*d)["calls_total"];
    EXPECT_GT(calls, 0u);
    // Each connection frees at least one skb holding a refcounted dst (measured ~1.0).
    EXPECT_GE(double(calls), 0.5 * double(conns));
    // Totals equal the sum of the intervals, per target and per CPU.
    ASSERT_GE(j["intervals"].size(), 5u);
    for (auto& tot : j["totals"]["targets"]) {
        std::vector<std::uint64_t> sum(tot["calls"].size(), 0);
        for (auto& iv : j["intervals"]) {
            const auto* it = find_target(iv["targets"], tot["target"]);
            ASSERT_TRUE(it);
            for (std::size_t c = 0; c < sum.size(); ++c) sum[c] += (*it)["calls"][c].get<std::uint64_t>();
        }
        EXPECT_EQ(sum, tot["calls"].get<std::vector<std::uint64_t>>()) << tot["target"];
    }
    // The probes' own cost is in the recording.
    ASSERT_FALSE(j["cost"].empty());
    EXPECT_GT(j["cost"][0]["run_cnt"].get<std::uint64_t>(), 0u);
    EXPECT_EQ(orphans_after_exit(), 0);
}

// The stop at 2.3 s leaves 0.3 s after the second interval: it joins that
// interval (2 intervals, the last about 1.3 s), never a partial third one whose
// rates would draw a cliff; the totals still equal the intervals' sum.
TEST_F(HostTest, AShortTailJoinsTheLastIntervalInsteadOfAPartialOne) {
    std::string f = temp_path("tail.json");
    CmdResult r = run(hosttest::hotline() + " record -q -t dst_release -d 2.3s -i 1s --workload churn -o " + f);
    ASSERT_EQ(r.rc, 0) << r.err;
    auto j = load_json(f);
    unlink(f.c_str());
    const auto& ivs = j["intervals"];
    ASSERT_EQ(ivs.size(), 2u) << ivs.dump(1).substr(0, 2000);
    EXPECT_NEAR(ivs[1]["seconds"].get<double>(), 1.3, 0.15);
    EXPECT_NEAR(ivs[1]["t_start"].get<double>(), ivs[0]["t_end"].get<double>(), 1e-9);
    const auto* tot = find_target(j["totals"]["targets"], "dst_release");
    ASSERT_TRUE(tot);
    std::uint64_t sum = 0;
    for (auto& iv : ivs)
        if (const auto* t = find_target(iv["targets"], "dst_release")) sum += (*t)["calls_total"].get<std::uint64_t>();
    EXPECT_EQ(sum, (*tot)["calls_total"].get<std::uint64_t>());
}

TEST_F(HostTest, SamplingGivesDstReleaseShare) {
    std::string f = temp_path("sample.json");
    CmdResult r = run(hosttest::hotline() + " record -q -t dst_release -m sampling -F 4999 -d 5 --workload churn -o " + f);
    ASSERT_EQ(r.rc, 0) << r.err;
    auto j = load_json(f);
    unlink(f.c_str());
    EXPECT_EQ(j["plan"][0]["mechanism"], "sampling");
    const auto* d = find_target(j["totals"]["targets"], "dst_release");
    ASSERT_TRUE(d);
    EXPECT_EQ((*d)["fidelity"], "sampled");
    std::uint64_t hits = (*d)["calls_total"];
    std::uint64_t samples = sum(j["totals"]["samples_total"]);
    // 4999 Hz x 2 CPUs x 5 s; measured ~0.3% of samples in dst_release under churn.
    EXPECT_GT(samples, 20000u);
    EXPECT_GE(hits, 12u) << "expected dozens of dst_release samples, got " << hits;
    EXPECT_LT(double(hits) / double(samples), 0.2);
}

// A forced mechanism the kernel admits records with it; one it refuses is an
// error naming the refusal, with no fallback.
void expect_forced(const std::string& mech, const std::string& target, bool admitted, const std::string& refusal,
                   const std::string& why) {
    std::string f = temp_path("forced.json");
    CmdResult r = run(hosttest::hotline() + " record -q -d 1 -m " + mech + " -t " + target + " -o " + f);
    if (admitted) {
        ASSERT_EQ(r.rc, 0) << why << "\n" << r.err;
        auto j = load_json(f);
        const auto* t = find_target(j["totals"]["targets"], target);
        ASSERT_TRUE(t) << why;
        EXPECT_EQ((*t)["mechanism"], mech) << why;
        EXPECT_EQ((*t)["fidelity"], "exact") << why;
    } else {
        EXPECT_EQ(r.rc, 1) << why << "\n" << r.err;
        EXPECT_NE(r.err.find(mech + " for " + target), std::string::npos) << r.err;
        EXPECT_NE(r.err.find(refusal), std::string::npos) << why << "\nhotline: " << r.err;
    }
    unlink(f.c_str());
}

TEST_F(HostTest, ForcedMechanismRecordsWhereAdmittedAndIsAnErrorWhereRefused) {
    const MachineFacts& mf = MachineFacts::get();
    expect_forced("fentry", "dst_release", mf.fentry_loads(), mf.fentry(), mf.why({"fentry"}));
    expect_forced("kprobe", "queue_work_on", mf.kprobe_attaches(),
                  mf.kprobe_pmu() ? mf.kprobe() : "without kprobes", mf.why({"kprobe"}));
    EXPECT_EQ(orphans_after_exit(), 0);
}

// Exit 3 is the contract for "nothing observable": a function this kernel does
// not have is the only target, so every mechanism refuses it.
TEST_F(HostTest, NothingObservableExits3) {
    CmdResult r = run(hosttest::hotline() + " record -d 1 --func hl_no_such_kernel_function");
    EXPECT_EQ(r.rc, 3) << r.out << r.err;
    EXPECT_NE(r.err.find("no target can be observed"), std::string::npos) << r.err;
    EXPECT_EQ(orphans_after_exit(), 0);
}

TEST_F(HostTest, CommandExitStatusPassesThrough) {
    CmdResult r = run(hosttest::hotline() + " record -q -t queue_work_on -- sh -c 'exit 7'");
    EXPECT_EQ(r.rc, 7) << r.err;
    CmdResult m = run(hosttest::hotline() + " record -q -t queue_work_on -- /nonexistent/cmd");
    EXPECT_EQ(m.rc, 1);
    EXPECT_NE(m.err.find("cannot run \"/nonexistent/cmd\""), std::string::npos) << m.err;
}

TEST_F(HostTest, BadInputNamesTheProblem) {
    CmdResult t = run(hosttest::hotline() + " record -d 1 -t dst_release,tcp_fastopen");
    EXPECT_EQ(t.rc, hotline::kExitUsage);
    EXPECT_NE(t.err.find("unknown target \"tcp_fastopen\""), std::string::npos) << t.err;
    EXPECT_NE(t.err.find("dst_release, ipv4_dst_check, tcp_prequeue, queue_work_on"), std::string::npos);
    CmdResult d = run(hosttest::hotline() + " record -d 5parsecs");
    EXPECT_EQ(d.rc, hotline::kExitUsage);
    EXPECT_NE(d.err.find("5parsecs"), std::string::npos);
    CmdResult m = run(hosttest::hotline() + " record -d 1 -m uprobe");
    EXPECT_EQ(m.rc, hotline::kExitUsage);
    EXPECT_NE(m.err.find("uprobe"), std::string::npos);
    CmdResult c = run(hosttest::hotline() + " record -d 1 --workload churn --workload-cpus 0,99");
    EXPECT_EQ(c.rc, hotline::kExitUsage);
    EXPECT_NE(c.err.find("CPU 99"), std::string::npos);
}

TEST_F(HostTest, UnprivilegedUserIsToldWhichCapability) {
    CmdResult r = run("setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all " + hosttest::hotline() +
                " record -d 1 -t queue_work_on");
    EXPECT_EQ(r.rc, 1);
    EXPECT_NE(r.err.find("CAP_BPF"), std::string::npos) << r.err;
}

TEST_F(HostTest, SigintEndsCleanlyWithSummaryAndDetaches) {
    std::string out = temp_path("sigint.out");
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        FILE* f = freopen(out.c_str(), "w", stdout);
        (void)f;
        execl(HOTLINE_BIN, "hotline", "record", "-q", "-t", "queue_work_on,dst_release", nullptr);
        _exit(127);
    }
    // Wait until the programs are attached, then interrupt.
    for (int i = 0; i < 100 && loaded_hotline_programs(pid) == 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_GT(loaded_hotline_programs(pid), 0);
    // No pause needed: record blocks its shutdown signals before it loads a
    // program, so this SIGINT waits for the loop rather than killing it.
    kill(pid, SIGINT);
    int st = 0;
    waitpid(pid, &st, 0);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    std::string text = slurp(out);
    unlink(out.c_str());
    EXPECT_NE(text.find("stopped by INT"), std::string::npos) << text;
    EXPECT_NE(text.find("totals"), std::string::npos);
    EXPECT_EQ(orphans_after_exit(), 0);
    EXPECT_EQ(loaded_hotline_programs(pid), 0);
}

TEST_F(HostTest, SigkillLeavesNothingAttached) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        FILE* f = freopen("/dev/null", "w", stdout);
        (void)f;
        execl(HOTLINE_BIN, "hotline", "record", "-q", nullptr);
        _exit(127);
    }
    for (int i = 0; i < 100 && loaded_hotline_programs(pid) < 3; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_GE(loaded_hotline_programs(pid), 3);
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    // Links are owned by the process's fds: the kernel drops them with the process.
    EXPECT_EQ(orphans_after_exit(), 0);
    EXPECT_EQ(loaded_hotline_programs(pid), 0);
}
