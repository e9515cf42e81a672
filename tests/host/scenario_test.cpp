// SPDX-License-Identifier: Apache-2.0
// Scenarios on the real kernel (root): each builds its network, measures
// nonzero traffic with sane relations, and leaves nothing behind, even when its
// runner is killed.  Tolerances are stated where two measurements are compared.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fmt/format.h>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "fix_test_util.hpp"
#include "hotline/workload/netns.hpp"
#include "hotline/report/output.hpp"
#include "hotline/workload/scenario.hpp"
#include "hotline/workload/workload.hpp"

using namespace hotline;
namespace fs = std::filesystem;

namespace {

using Inode = std::pair<dev_t, ino_t>;
using hotline::test::TempDir;

using testlib::slurp;

Inode inode_of_fd(int fd) {
    struct stat st {};
    fstat(fd, &st);
    return {st.st_dev, st.st_ino};
}

std::optional<Inode> inode_of_path(const std::string& p) {
    struct stat st {};
    if (stat(p.c_str(), &st)) return std::nullopt;
    return Inode{st.st_dev, st.st_ino};
}

// Processes (any thread group leader) whose network namespace is one of `ns`.
std::vector<pid_t> processes_in(const std::set<Inode>& ns) {
    std::vector<pid_t> out;
    for (auto& e : fs::directory_iterator("/proc")) {
        std::string n = e.path().filename().string();
        if (n.empty() || !std::all_of(n.begin(), n.end(), ::isdigit)) continue;
        auto i = inode_of_path(e.path().string() + "/ns/net");
        if (i && ns.count(*i)) out.push_back(std::stoi(n));
    }
    return out;
}

// Names hotline would have made for `pid`, still present on the host.
std::vector<std::string> names_of(int pid) {
    std::vector<std::string> out;
    for (const char* dir : {"/run/netns", "/sys/class/net"}) {
        std::error_code ec;
        for (auto& e : fs::directory_iterator(dir, ec)) {
            auto n = e.path().filename().string();
            if (owner_of(n) == pid) out.push_back(std::string(dir) + "/" + n);
        }
    }
    if (fs::exists(fmt::format("/run/hotline/hl-{}.lock", pid))) out.push_back("lock of " + std::to_string(pid));
    return out;
}

// Polls for a condition with a generous deadline; the tests assert on what
// happened, never on how fast.
template <class F>
bool eventually(F f, double seconds = 30) {
    auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < end) {
        if (f()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return f();
}

void expect_clean(int owner, const std::set<Inode>& ns) {
    EXPECT_TRUE(names_of(owner).empty()) << "left behind: " << names_of(owner).front();
    // Teardown SIGKILLs what is left; the kernel then needs a moment to reap.
    EXPECT_TRUE(eventually([&] { return processes_in(ns).empty(); }, 10))
        << processes_in(ns).size() << " processes still inside the scenario's namespaces";
}

struct Running {
    std::unique_ptr<Scenario> sc;
    std::set<Inode> ns;
};

Running start(ScenarioOptions o) {
    auto s = Scenario::start(std::move(o));
    EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message());
    if (!s.ok()) return {};
    Running r;
    r.sc = std::move(*s);
    r.ns.insert(inode_of_fd(r.sc->network().client().fd()));
    r.ns.insert(inode_of_fd(r.sc->network().server().fd()));
    return r;
}

ScenarioResult finish(Running& r) {
    EXPECT_TRUE(eventually([&] { return r.sc->done(); }, 120));
    auto res = r.sc->stop();
    EXPECT_TRUE(res.ok()) << (res.ok() ? "" : res.error().message());
    return res.ok() ? *res : ScenarioResult{};
}

std::string host_sysctl(const char* path) { return slurp(path); }

// Runs the hotline binary with stdout/stderr to files; returns the child.
ChildProcess spawn_hotline(const std::vector<std::string>& args, const std::string& log) {
    std::vector<std::string> argv{HOTLINE_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    SpawnOptions so;
    so.stdout_fd = fd;
    so.die_with_parent = true;
    auto c = ChildProcess::spawn(argv, so);
    close(fd);
    EXPECT_TRUE(c.ok());
    return std::move(*c);
}

}  // namespace

// Every registered scenario whose traffic is hotline's own runs with its
// defaults, counts operations in its unit and leaves nothing behind: a new
// registry entry is covered here without a test of its own.
class EveryScenario : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryScenario, RunsWithItsDefaultsCountsOperationsAndCleansUp) {
    ScenarioOptions o;
    o.name = GetParam();
    // A size sweep keeps its default length (1 s per size); the rest run 2 s.
    o.duration_s = find_scenario(o.name)->options & kOptMsgSizes ? 0 : 2;
    auto r = start(o);
    ASSERT_TRUE(r.sc);
    int self = getpid();
    auto res = finish(r);
    EXPECT_GT(scenario_ops(res), 0) << o.name << " counted no operations";
    r.sc.reset();
    expect_clean(self, r.ns);
}

std::vector<std::string> scenarios_with_own_traffic() {
    std::vector<std::string> names;
    for (const auto& d : scenario_registry())
        if (!d.command_is_traffic) names.emplace_back(d.name);
    return names;
}

INSTANTIATE_TEST_SUITE_P(Registry, EveryScenario, ::testing::ValuesIn(scenarios_with_own_traffic()),
                         [](const auto& info) {
                             std::string n = info.param;
                             std::replace(n.begin(), n.end(), '-', '_');
                             return n;
                         });

TEST(ScenarioHost, DstRefcountMeasuresAndCleansUp) {
    const char* cork = "/proc/sys/net/ipv4/tcp_autocorking";
    std::string host_cork = host_sysctl(cork);
    ScenarioOptions o;
    o.name = "dst-refcount";
    o.duration_s = 2;
    auto r = start(o);
    ASSERT_TRUE(r.sc);
    int self = getpid();
    EXPECT_TRUE(fs::exists(fmt::format("/run/netns/hl-{}-c", self)));
    EXPECT_TRUE(fs::exists(fmt::format("/run/netns/hl-{}-s", self)));
    auto inside = r.sc->network().client().read_sysctl("net.ipv4.tcp_autocorking");
    ASSERT_TRUE(inside.ok());
    if (inside->has_value()) {
        EXPECT_EQ(**inside, "0");
    }
    auto res = finish(r);
    EXPECT_EQ(host_sysctl(cork), host_cork) << "the host's own sysctl must not change";

    EXPECT_GT(res.messages, 0u);
    EXPECT_GT(res.messages_per_s, 0);
    EXPECT_GT(res.mbit_per_s, 0);
    // What the receivers read matches what the senders wrote, up to what sits
    // in socket buffers at the window's edges (a few MB against hundreds).
    double sent_bytes = double(res.messages) * 64;
    EXPECT_NEAR(double(res.bytes) / sent_bytes, 1.0, 0.1);
    EXPECT_GT(res.cpu.sender_pct, 0);
    EXPECT_GT(res.cpu.receiver_pct, 0);
    EXPECT_GT(res.cpu.busy_pct, 0);
    EXPECT_EQ(res.params["flows_per_cpu"], 3);
    EXPECT_EQ(res.params["msg_size"], 64);
    EXPECT_EQ(res.network["mode"], "veth");
    r.sc.reset();
    expect_clean(self, r.ns);
}

TEST(ScenarioHost, TcpCrrChurnsConnections) {
    ScenarioOptions o;
    o.name = "tcp-crr";
    o.duration_s = 2;
    auto r = start(o);
    ASSERT_TRUE(r.sc);
    auto res = finish(r);
    EXPECT_GT(res.connections, 0u);
    EXPECT_GT(res.connections_per_s, 0);
    EXPECT_GT(res.cpu.sender_pct, 0);
    EXPECT_GT(res.cpu.receiver_pct, 0);
    r.sc.reset();
    expect_clean(getpid(), r.ns);
}

TEST(ScenarioHost, IrqLatLatencyGrowsWithMessageSize) {
    ScenarioOptions o;
    o.name = "irq-lat";
    o.msg_sizes = {4096, 65536, 1048576};
    o.duration_s = 3;
    auto r = start(o);
    ASSERT_TRUE(r.sc);
    auto res = finish(r);
    ASSERT_EQ(res.latency.size(), 3u);
    for (auto& p : res.latency) {
        EXPECT_GT(p.exchanges, 0u) << p.msg_size;
        EXPECT_TRUE(p.has_percentiles);
        EXPECT_LE(p.rtt_min_ns, p.p50_ns);
        EXPECT_LE(p.p50_ns, p.p90_ns);
        EXPECT_LE(p.p90_ns, p.p99_ns);
        EXPECT_LE(p.p99_ns, p.p999_ns);
        EXPECT_LE(p.p999_ns, p.rtt_max_ns);
        EXPECT_DOUBLE_EQ(p.one_way_ns, p.rtt_mean_ns / 2);
    }
    // Moving 1 MiB each way costs far more than 4 KiB on any host; the median
    // resists the scheduling noise of a shared machine.
    EXPECT_GT(res.latency[2].p50_ns, res.latency[0].p50_ns);
    EXPECT_GT(res.latency[2].rtt_mean_ns, res.latency[0].rtt_mean_ns);
    r.sc.reset();
    expect_clean(getpid(), r.ns);
}

TEST(ScenarioHost, LoopbackUsesOneNamespace) {
    ScenarioOptions o;
    o.name = "dst-refcount";
    o.loopback = true;
    o.duration_s = 1;
    o.flows_per_cpu = 1;
    auto r = start(o);
    ASSERT_TRUE(r.sc);
    EXPECT_EQ(r.ns.size(), 1u);
    EXPECT_FALSE(fs::exists(fmt::format("/run/netns/hl-{}-s", getpid())));
    auto res = finish(r);
    EXPECT_GT(res.messages, 0u);
    EXPECT_EQ(res.network["mode"], "loopback");
    EXPECT_EQ(res.network["server_addr"], "127.0.0.1");
    r.sc.reset();
    expect_clean(getpid(), r.ns);
}

TEST(ScenarioHost, ExecRunsCommandsInsideTheNamespaces) {
    TempDir dir;
    std::string f1 = dir / "client", f2 = dir / "server";
    ScenarioOptions o;
    o.name = "exec";
    o.server_command = {"sh", "-c", "readlink /proc/self/ns/net > " + f2 + ".tmp; mv " + f2 + ".tmp " + f2 + "; exec sleep 600"};
    o.command = {"sh", "-c",
                 "while [ ! -s " + f2 + " ]; do sleep 0.05; done; readlink /proc/self/ns/net > " + f1 +
                     "; echo $HOTLINE_SERVER_ADDR $HOTLINE_CLIENT_NETNS >> " + f1 + "; exit 3"};
    auto r = start(o);
    ASSERT_TRUE(r.sc);
    Inode c = inode_of_fd(r.sc->network().client().fd()), s = inode_of_fd(r.sc->network().server().fd());
    std::string client_ns = r.sc->network().client().name();
    auto res = finish(r);
    ASSERT_TRUE(res.command_status.has_value());
    EXPECT_EQ(*res.command_status, 3);
    std::istringstream in(slurp(f1));
    std::string link, addr, nsname;
    in >> link >> addr >> nsname;
    EXPECT_EQ(link, fmt::format("net:[{}]", c.second));
    EXPECT_EQ(addr, "10.201.0.2");
    EXPECT_EQ(nsname, client_ns);
    EXPECT_EQ(slurp(f2), fmt::format("net:[{}]\n", s.second));
    r.sc.reset();
    expect_clean(getpid(), r.ns);  // the server command (sleep 600) is gone too
}

// qperf's tcp_lat against the built-in irq-lat at one size, interleaved so both
// see the same background load.  Compared: qperf's latency (a mean, one-way)
// with irq-lat's mean round trip / 2, the median of three rounds each.
// Stated factor: 3.  Measured ratios on the shared 2-vCPU hosts: 0.4-1.2 under
// full load from other tenants (idle-vCPU wakeups and preemption dominate: ~10 us
// busy vs ~58 us idle for qperf alone), so anything beyond 3x means the two
// measure different things, not noise.
TEST(ScenarioHost, QperfAgreesWithIrqLatWithinFactorThree) {
    constexpr double kFactor = 3;
    std::vector<double> builtin, qperf;
    for (int round = 0; round < 3; ++round) {
        for (const char* name : {"irq-lat", "qperf"}) {
            ScenarioOptions o;
            o.name = name;
            o.msg_sizes = {65536};
            o.duration_s = 1;
            auto r = start(o);
            ASSERT_TRUE(r.sc);
            auto res = finish(r);
            ASSERT_EQ(res.latency.size(), 1u) << name;
            EXPECT_EQ(res.latency[0].msg_size, 65536u);
            EXPECT_GT(res.latency[0].exchanges, 0u);
            (std::string(name) == "qperf" ? qperf : builtin).push_back(res.latency[0].one_way_ns);
            EXPECT_EQ(res.generator, std::string(name) == "qperf" ? "qperf" : "built-in");
            r.sc.reset();
            expect_clean(getpid(), r.ns);
        }
    }
    std::sort(builtin.begin(), builtin.end());
    std::sort(qperf.begin(), qperf.end());
    double ratio = qperf[1] / builtin[1];
    RecordProperty("qperf_one_way_us", std::to_string(qperf[1] / 1e3));
    RecordProperty("irqlat_one_way_us", std::to_string(builtin[1] / 1e3));
    EXPECT_GT(ratio, 1 / kFactor) << "qperf " << qperf[1] << " ns, irq-lat " << builtin[1] << " ns";
    EXPECT_LT(ratio, kFactor) << "qperf " << qperf[1] << " ns, irq-lat " << builtin[1] << " ns";
}

TEST(ScenarioHost, SignalsStopTheRunnerAndItCleansUp) {
    TempDir d;
    const std::string log = d / "signal.log";
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
        auto c = spawn_hotline({"scenario", "run", "dst-refcount", "--duration", "60", "--flows-per-cpu", "1"},
                               log);
        int pid = c.pid();
        std::string cns = fmt::format("/run/netns/hl-{}-c", pid), sns = fmt::format("/run/netns/hl-{}-s", pid);
        ASSERT_TRUE(eventually([&] { return fs::exists(sns); })) << "runner never built its network";
        std::set<Inode> ns;
        for (auto& p : {cns, sns})
            if (auto i = inode_of_path(p)) ns.insert(*i);
        c.signal(sig);
        int status = c.wait();
        EXPECT_EQ(status, 128 + sig) << strsignal(sig) << "; log: " << slurp(log);
        expect_clean(pid, ns);
    }
}

TEST(ScenarioHost, SigkilledRunIsCleanedByTheNextOne) {
    TempDir d;
    const std::string log = d / "kill.log";
    // qperf: a server and a client process live inside the namespaces.
    auto c = spawn_hotline({"scenario", "run", "qperf", "--msg-sizes", "64K", "--duration", "60"},
                           log);
    int pid = c.pid();
    std::string cns = fmt::format("/run/netns/hl-{}-c", pid), sns = fmt::format("/run/netns/hl-{}-s", pid);
    std::set<Inode> ns;
    ASSERT_TRUE(eventually([&] {
        ns.clear();
        for (auto& p : {cns, sns})
            if (auto i = inode_of_path(p)) ns.insert(*i);
        // both qperf halves running: one process in each namespace at least
        if (ns.size() != 2) return false;
        auto pids = processes_in(ns);
        return pids.size() >= 2;
    })) << "qperf never started inside the namespaces; log: " << slurp(log);
    c.signal(SIGKILL);
    EXPECT_EQ(c.wait(), 128 + SIGKILL);
    // The owner is dead once the processes it forked (they share its lock's open
    // file until they exec or die) are gone too; on a busy machine that is not
    // the instant its parent reaps it.  A live owner's names are not cleaned.
    EXPECT_TRUE(eventually([&] { return !OwnerLock::held(NetPaths{}.lock_dir, pid); }, 10))
        << "the killed run's owner lock is still held";
    // The kill leaves the namespaces (so the next run has something to clean).
    EXPECT_TRUE(fs::exists(cns));
    EXPECT_TRUE(fs::exists(sns));

    ScenarioOptions o;
    o.name = "tcp-crr";
    o.duration_s = 1;
    auto r = start(o);
    ASSERT_TRUE(r.sc);
    auto cleaned = r.sc->network().cleaned_at_start().namespaces;
    std::sort(cleaned.begin(), cleaned.end());
    EXPECT_TRUE(std::binary_search(cleaned.begin(), cleaned.end(), fmt::format("hl-{}-c", pid)));
    EXPECT_TRUE(std::binary_search(cleaned.begin(), cleaned.end(), fmt::format("hl-{}-s", pid)));
    auto res = finish(r);
    EXPECT_GT(res.connections, 0u) << "the next run works";
    EXPECT_TRUE(res.network.contains("cleaned_at_start"));
    r.sc.reset();
    expect_clean(pid, ns);
    expect_clean(getpid(), r.ns);
}

TEST(ScenarioHost, RecordHoldsTheScenarioNextToTheCounters) {
    TempDir d;
    const std::string out = d / "record.json", log = d / "record.log";
    // No --duration: the recording ends when the scenario's sweep ends.
    auto c = spawn_hotline({"record", "--scenario", "irq-lat", "--msg-sizes", "4K,64K", "-q", "-o", out},
                           log);
    int pid = c.pid();
    int status = c.wait();
    ASSERT_EQ(status, 0) << slurp(log);
    auto doc = nlohmann::json::parse(slurp(out));
    for (const char* k : {"schema", "kernel", "plan", "intervals", "totals"}) EXPECT_TRUE(doc.contains(k)) << k;
    ASSERT_TRUE(doc.contains("scenario"));
    auto& s = doc["scenario"];
    EXPECT_EQ(s["scenario"], "irq-lat");
    EXPECT_EQ(s["params"]["msg_sizes"], nlohmann::json({4096, 65536}));
    ASSERT_EQ(s["latency"].size(), 2u);
    EXPECT_GT(s["latency"][0]["exchanges"].get<std::uint64_t>(), 0u);
    EXPECT_GT(s["latency"][1]["p50_ns"].get<double>(), 0);
    EXPECT_FALSE(doc["intervals"].empty());
    EXPECT_TRUE(names_of(pid).empty());
}
