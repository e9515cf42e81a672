// Privileged tests of `hotline probe` and `hotline record` on this machine's kernel
// (6.18, fentry refused, no kprobes, tracepoints and cpu-clock sampling allowed).
#include <gtest/gtest.h>
#include <signal.h>

#include <thread>

#include "host_util.hpp"

using namespace hosttest;

class HostTest : public ::testing::Test {
protected:
    void SetUp() override {
        if (geteuid() != 0) GTEST_FAIL() << "host tests need root (run them as CI does: as root)";
    }
};

TEST_F(HostTest, ProbeJsonReportsThePlanWithReasons) {
    CmdResult r = run(hosttest::hotline() + " probe --json");
    ASSERT_EQ(r.rc, 0) << r.err;
    auto j = nlohmann::json::parse(r.out);
    EXPECT_FALSE(j["kernel"]["release"].get<std::string>().empty());
    EXPECT_TRUE(j["kernel"]["btf"].get<bool>());
    EXPECT_FALSE(j["kernel"]["lockdown"].get<std::string>().empty());
    EXPECT_TRUE(j["kernel"]["capabilities"]["missing"].empty());
    EXPECT_FALSE(j["topology"]["nodes"].empty());
    const auto* q = find_target(j["plan"], "queue_work_on");
    const auto* c = find_target(j["plan"], "ipv4_dst_check");
    const auto* d = find_target(j["plan"], "dst_release");
    const auto* p = find_target(j["plan"], "tcp_prequeue");
    ASSERT_TRUE(q && c && d && p);
    EXPECT_EQ((*q)["mechanism"], "tracepoint");
    EXPECT_EQ((*q)["fidelity"], "exact");
    EXPECT_EQ((*c)["mechanism"], "sampling");
    EXPECT_EQ((*c)["fidelity"], "sampled");
    EXPECT_EQ((*d)["mechanism"], "tracepoint");
    EXPECT_EQ((*d)["fidelity"], "partial");
    EXPECT_EQ((*p)["mechanism"], "unavailable");
    EXPECT_NE((*p)["reason"].get<std::string>().find("removed in 4.14"), std::string::npos);
    // fentry and kprobe refused, each with its reason
    for (const nlohmann::json* t : std::vector<const nlohmann::json*>{q, c, d}) {
        ASSERT_GE((*t)["rejected"].size(), 2u) << (*t)["target"];
        EXPECT_EQ((*t)["rejected"][0]["mechanism"], "fentry");
        EXPECT_NE((*t)["rejected"][0]["reason"].get<std::string>().find("EPERM at load"), std::string::npos);
        EXPECT_EQ((*t)["rejected"][1]["mechanism"], "kprobe");
        EXPECT_NE((*t)["rejected"][1]["reason"].get<std::string>().find("without kprobes"), std::string::npos);
    }
    EXPECT_EQ(orphans_after_exit(), 0) << "probe must detach everything";
}

TEST_F(HostTest, ProbeTextExplainsLockdownAndPlan) {
    CmdResult r = run(hosttest::hotline() + " probe");
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_NE(r.out.find("lockdown"), std::string::npos);
    EXPECT_NE(r.out.find("fentry: EPERM at load"), std::string::npos);
    EXPECT_NE(r.out.find("kprobe: kernel built without kprobes"), std::string::npos);
}

// Each write to vm.stat_refresh runs schedule_on_each_cpu(): one queue_work_on per
// online CPU, queued from the writing CPU.
TEST_F(HostTest, QueueWorkOnCountsMatchProvokedWork) {
    const int writes = 500;
    int ncpu = int(sysconf(_SC_NPROCESSORS_ONLN));
    std::string f = temp_path("qwo.json");
    std::string cmd = hosttest::hotline() + " record -q -t queue_work_on -i 500ms -o " + f +
                      " -- taskset -c 1 sh -c 'i=0; while [ $i -lt " + std::to_string(writes) +
                      " ]; do echo 1 > /proc/sys/vm/stat_refresh; i=$((i+1)); done'";
    CmdResult r = run(cmd);
    ASSERT_EQ(r.rc, 0) << r.err;
    auto j = load_json(f);
    unlink(f.c_str());
    const auto* t = find_target(j["totals"]["targets"], "queue_work_on");
    ASSERT_TRUE(t);
    std::uint64_t total = (*t)["calls_total"];
    std::uint64_t on_cpu1 = (*t)["calls"][1];
    double secs = j["totals"]["seconds"];
    // Background work on an idle machine measured at ~12/s; allow 100/s + 50.
    std::uint64_t expected = std::uint64_t(writes) * ncpu;
    std::uint64_t noise = std::uint64_t(100 * secs) + 50;
    EXPECT_GE(total, expected) << "every provoked work item must be counted";
    EXPECT_LE(total, expected + noise) << "more than background noise beyond the provoked work";
    EXPECT_GE(on_cpu1, expected) << "the work is queued from the writing CPU (1)";
    EXPECT_EQ((*t)["mechanism"], "tracepoint");
}

TEST_F(HostTest, ChurnGivesDstReleaseProxyCountsAndTotalsEqualIntervals) {
    std::string f = temp_path("churn.json");
    CmdResult r = run(hosttest::hotline() + " record -q -t dst_release,queue_work_on -d 3 -i 500ms --workload churn -o " + f);
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

TEST_F(HostTest, ForcedMechanismThatFailsIsAnError) {
    CmdResult r = run(hosttest::hotline() + " record -d 1 -m fentry -t dst_release");
    EXPECT_EQ(r.rc, 1);
    EXPECT_NE(r.err.find("fentry for dst_release"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("EPERM"), std::string::npos) << r.err;
    CmdResult k = run(hosttest::hotline() + " record -d 1 -m kprobe -t queue_work_on");
    EXPECT_EQ(k.rc, 1);
    EXPECT_NE(k.err.find("without kprobes"), std::string::npos) << k.err;
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
