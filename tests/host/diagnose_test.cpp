// `hotline diagnose` live on this machine (fentry and kprobes refused, one NUMA
// node): it says which mechanisms it could not use, and every finding it makes
// rests on conditions that were all measured by a mechanism that attached.
#include <gtest/gtest.h>

#include "host_util.hpp"

using namespace hosttest;

TEST(HostDiagnose, NamesRefusedMechanismsAndMakesNoUnsupportedFinding) {
    if (geteuid() != 0) GTEST_FAIL() << "host tests need root (run them as CI does: as root)";
    CmdResult text = run(hosttest::hotline() + " diagnose -d 2s --workload churn-split");
    ASSERT_EQ(text.rc, 0) << text.err;
    EXPECT_NE(text.out.find("mechanisms this kernel refused:"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("fentry refused: EPERM at load"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("kprobe refused: kernel built without kprobes"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("tcp-prequeue-dst-bounce: calls.tcp_prequeue.per_s was not measured"), std::string::npos)
        << text.out;
    EXPECT_EQ(orphans_after_exit(), 0) << "diagnose must detach everything";

    CmdResult js = run(hosttest::hotline() + " diagnose -d 2s --workload churn-split --json");
    ASSERT_EQ(js.rc, 0) << js.err;
    auto j = nlohmann::json::parse(js.out);
    EXPECT_EQ(j["schema"], "hotline.findings");
    EXPECT_FALSE(j["refused"].empty());
    for (auto& f : j["findings"]) {
        // One NUMA node: nothing can cross nodes, so no cross-node finding.
        EXPECT_NE(f["rule"], "dst-cross-node-handoffs") << f.dump();
        for (auto& e : f["evidence"]) {
            EXPECT_NE(e["mechanism"], "?") << f.dump();
            EXPECT_NE(e["mechanism"], "unavailable") << f.dump();
        }
        for (auto& a : f["fixes"])
            if (a["fix"] == "numa-local") {
                EXPECT_FALSE(a["prescribed"].get<bool>()) << "one node: " << f.dump();
            }
    }
}
