// SPDX-License-Identifier: Apache-2.0
// `hotline diagnose` live on this machine: it says which mechanisms it could not
// use (tests/lib/machine_facts.hpp says which the kernel refuses), every finding
// it makes rests on conditions that were all measured by a mechanism that
// attached, and a cross-node finding appears exactly when the workload's CPUs
// lie on more than one node.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "host_util.hpp"
#include "machine_facts.hpp"

using namespace hosttest;
using hostfacts::MachineFacts;

TEST(HostDiagnose, NamesRefusedMechanismsAndMakesNoUnsupportedFinding) {
    if (geteuid() != 0) GTEST_FAIL() << "host tests need root (run them as CI does: as root)";
    const MachineFacts& mf = MachineFacts::get();
    CmdResult text = run(hosttest::hotline() + " diagnose -d 2s --workload churn-split");
    ASSERT_EQ(text.rc, 0) << text.err;
    auto rejected = mf.rejections_before(true);
    if (!rejected.empty()) {
        EXPECT_NE(text.out.find("mechanisms this kernel refused:"), std::string::npos) << text.out;
    }
    for (auto& [mech, reason] : rejected)
        EXPECT_NE(text.out.find(mech + " refused: " + reason), std::string::npos)
            << mf.why({"fentry", "kprobe"}) << "\n" << text.out;
    EXPECT_NE(text.out.find("tcp-prequeue-dst-bounce: calls.tcp_prequeue.per_s was not measured"), std::string::npos)
        << text.out;
    EXPECT_EQ(orphans_after_exit(), 0) << "diagnose must detach everything";

    CmdResult js = run(hosttest::hotline() + " diagnose -d 2s --workload churn-split --json");
    ASSERT_EQ(js.rc, 0) << js.err;
    auto j = nlohmann::json::parse(js.out);
    EXPECT_EQ(j["schema"], "hotline.findings");
    EXPECT_EQ(j["refused"].empty(), rejected.empty()) << mf.why({"fentry", "kprobe"}) << "\n" << j["refused"];
    // churn-split serves each connection on the next online CPU.
    std::set<int> nodes;
    for (int cpu = 0; cpu < int(sysconf(_SC_NPROCESSORS_ONLN)); ++cpu) nodes.insert(mf.node_of(cpu));
    const bool crosses = nodes.size() > 1;
    bool cross_finding = false, numa_local = false;
    for (auto& f : j["findings"]) {
        cross_finding |= f["rule"] == "dst-cross-node-handoffs";
        for (auto& e : f["evidence"]) {
            EXPECT_NE(e["mechanism"], "?") << f.dump();
            EXPECT_NE(e["mechanism"], "unavailable") << f.dump();
        }
        for (auto& a : f["fixes"]) numa_local |= a["fix"] == "numa-local" && a["prescribed"].get<bool>();
    }
    EXPECT_EQ(cross_finding, crosses) << "dst-cross-node-handoffs found: " << cross_finding
                                      << ", while the online CPUs lie on " << nodes.size() << " node(s); "
                                      << mf.why({"nodes"}) << "\nhotline found: " << j["findings"].dump(1);
    EXPECT_EQ(numa_local, crosses) << "numa-local prescribed: " << numa_local << "; " << mf.why({"nodes"});
}

// tcp-crr's connection churn on several CPUs of one node: the cross-CPU finding
// prescribes cpu-local in its scenario and rfs on this host, each with a
// command that, run (shortened to two trials per arm), reaches a verdict.
TEST(HostDiagnose, CrossCpuChurnPrescribesCpuLocalAndRfsWithCommandsThatReachAVerdict) {
    if (geteuid() != 0) GTEST_FAIL() << "host tests need root (run them as CI does: as root)";
    const MachineFacts& mf = MachineFacts::get();
    std::set<int> nodes;
    const int cpus = int(sysconf(_SC_NPROCESSORS_ONLN));
    for (int cpu = 0; cpu < cpus; ++cpu) nodes.insert(mf.node_of(cpu));
    if (cpus < 2 || nodes.size() > 1) GTEST_SKIP() << "needs two CPUs on one node; " << mf.why({"nodes"});
    CmdResult js = run(hosttest::hotline() + " diagnose --scenario tcp-crr -d 3s --json");
    ASSERT_EQ(js.rc, 0) << js.err;
    auto j = nlohmann::json::parse(js.out);
    std::map<std::string, std::string> confirm;
    for (auto& f : j["findings"])
        if (f["rule"] == "dst-cross-cpu-handoffs")
            for (auto& a : f["fixes"])
                if (a["prescribed"].get<bool>()) confirm[a["fix"]] = a["confirm"];
    ASSERT_TRUE(confirm.count("cpu-local")) << j["findings"].dump(1);
    ASSERT_TRUE(confirm.count("rfs")) << j["findings"].dump(1);
    EXPECT_NE(confirm["cpu-local"].find("--scenario tcp-crr"), std::string::npos) << confirm["cpu-local"];
    EXPECT_NE(confirm["rfs"].find("--live --allow-global"), std::string::npos) << confirm["rfs"];
    for (auto& [fix, cmd] : confirm) {
        if (fix != "cpu-local" && fix != "rfs") continue;
        std::string shortened = cmd + " --trials 2 --max-trials 2 --yes";
        if (auto at = shortened.find("--observe 10s"); at != std::string::npos) shortened.replace(at, 13, "--observe 1s");
        else shortened += " -d 1s";
        if (fix == "cpu-local") shortened.replace(shortened.find(" --yes"), 6, "");
        CmdResult v = run(shortened.replace(0, 7, hosttest::hotline()) + " --json");
        EXPECT_GE(v.rc, 0) << cmd;
        EXPECT_LE(v.rc, 3) << "no verdict from: " << shortened << "\n" << v.err;
    }
}

// Live, the fixes of --fixes DIR are judged on this kernel and prescribed by
// DIR's rules like the built-in ones.
TEST(HostDiagnose, FixesOfAFixesDirArePrescribedLive) {
    if (geteuid() != 0) GTEST_FAIL() << "host tests need root (run them as CI does: as root)";
    const std::string dir = temp_path("fixesdir");
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/mine.toml") << R"(
[[fix]]
name = "my-steering"
mode = "runtime"
summary = "a site's own fix"
scenarios = ["tcp-crr"]
  [[fix.change]]
  cpu_placement = "cpu-set"
  scope = "netns"
  [[fix.expect]]
  metric = "handoff.dst_release.cross_cpu_per_op"
  down = "50%"

[[rule]]
name = "site-any-route-release"
severity = "low"
summary = "routes are released at all"
meaning = "a rule of this site"
fixes = ["my-steering"]
  [[rule.when]]
  metric = "handoff.dst_release.cross_cpu_share"
  above = -1
)";
    CmdResult js = run(hosttest::hotline() + " diagnose -d 1s --workload churn --fixes " + dir + " --json");
    std::filesystem::remove_all(dir);
    ASSERT_EQ(js.rc, 0) << js.err;
    auto j = nlohmann::json::parse(js.out);
    bool prescribed = false;
    for (auto& f : j["findings"])
        for (auto& a : f["fixes"]) prescribed |= a["fix"] == "my-steering" && a["prescribed"].get<bool>();
    EXPECT_TRUE(prescribed) << j["findings"].dump(1);
}
