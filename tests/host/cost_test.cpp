// SPDX-License-Identifier: Apache-2.0
// Privileged tests of `hotline cost` and of user-named functions (--func).
#include <gtest/gtest.h>

#include "host_util.hpp"

using namespace hosttest;

TEST(CostHost, EveryVariantRunsNextToAnEmptyProgram) {
    CmdResult r =
        run(hosttest::hotline() + " cost --json -t queue_work_on -m tracepoint -- " + PTY_PINGPONG_BIN + " 3000 alt");
    ASSERT_EQ(r.rc, 0) << r.err;
    auto j = nlohmann::json::parse(r.out);
    ASSERT_EQ(j["rows"].size(), 1u);
    auto& row = j["rows"][0];
    EXPECT_EQ(row["attach"], "tp_btf/workqueue_queue_work");
    // The rate is the empty program's runs over the measured time.
    EXPECT_NEAR(row["hits_per_s"].get<double>() * j["seconds"].get<double>(),
                double(row["variants"][0]["run_cnt"].get<std::uint64_t>()), 1.0);
    std::map<std::string, nlohmann::json> v;
    for (auto& x : row["variants"]) v[x["variant"]] = x;
    ASSERT_TRUE(v.count("empty") && v.count("count") && v.count("handoff"));
    // Every variant saw the same events (each write queues the work item once).
    for (auto& [name, x] : v) EXPECT_GE(x["run_cnt"].get<std::uint64_t>(), 2900u) << name;
    EXPECT_NEAR(double(v["count"]["run_cnt"]), double(v["empty"]["run_cnt"]), 50);
    EXPECT_GT(v["empty"]["ns_per_run"].get<double>(), 0);
    EXPECT_GT(v["count"]["ratio_to_empty"].get<double>(), 0);
    EXPECT_GT(v["handoff"]["ratio_to_empty"].get<double>(), 0);
    EXPECT_TRUE(v["handoff"].contains("extra_cpu_ns_per_s"));
    // Every variant over its budget is named in "misses", and only those.
    std::size_t over = 0;
    for (auto& [name, x] : v)
        if (name != "empty" && x["ratio_to_empty"].get<double>() > x["budget"].get<double>()) ++over;
    EXPECT_EQ(j["misses"].size(), over) << j["misses"].dump(1);
    EXPECT_EQ(j["within_budget"], over == 0);
    EXPECT_EQ(v["count"]["program"], "hl_tp_queue_work");
    EXPECT_EQ(v["handoff"]["program"], "hl_tp_queue_work_track");
    EXPECT_EQ(j["budgets"]["handoff"], 3.0);
    EXPECT_EQ(orphans_after_exit(), 0);
}

// fentry and kprobe, where the kernel admits them, are priced on the function
// itself; where it refuses them, cost says so and prices nothing.
TEST(CostHost, DirectMechanismsArePricedWhereTheKernelAdmitsThem) {
    const auto& mf = hostfacts::MachineFacts::get();
    for (auto [mech, admitted] : {std::pair{"fentry", mf.fentry_loads()}, std::pair{"kprobe", mf.kprobe_attaches()}}) {
        CmdResult r = run(hosttest::hotline() + " cost --json -t queue_work_on -m " + mech + " -- " + PTY_PINGPONG_BIN +
                          " 1000 alt");
        const std::string why = mf.why({"fentry", "kprobe"}) + "\nhotline: " + r.out + r.err;
        if (!admitted) {
            EXPECT_NE(r.rc, 0) << mech << ": " << why;
            continue;
        }
        ASSERT_EQ(r.rc, 0) << mech << ": " << why;
        auto j = nlohmann::json::parse(r.out);
        ASSERT_EQ(j["rows"].size(), 1u) << why;
        EXPECT_EQ(j["rows"][0]["attach"], std::string(mech) + "/queue_work_on") << why;
        for (auto& v : j["rows"][0]["variants"]) EXPECT_GE(v["run_cnt"].get<std::uint64_t>(), 950u) << v.dump();
    }
    EXPECT_EQ(orphans_after_exit(), 0);
}

TEST(CostHost, DefaultWorkloadGivesQueueWorkEnoughHitsToPrice) {
    // The pty writer of the built-in workload drives workqueue_queue_work.
    CmdResult r = run(hosttest::hotline() + " cost --json -t queue_work_on --workload pty -d 2s");
    ASSERT_EQ(r.rc, 0) << r.err;
    auto j = nlohmann::json::parse(r.out);
    ASSERT_EQ(j["rows"].size(), 1u);
    EXPECT_GE(j["rows"][0]["variants"][0]["run_cnt"].get<std::uint64_t>(), 1000u) << j.dump(1);
    for (auto& n : j["notes"]) EXPECT_EQ(n.get<std::string>().find("too few"), std::string::npos) << n;
    CmdResult bad = run(hosttest::hotline() + " cost --workload bogus -d 1s");
    EXPECT_EQ(bad.rc, hotline::kExitUsage);
    EXPECT_NE(bad.err.find("churn+pty"), std::string::npos) << bad.err;
    EXPECT_EQ(orphans_after_exit(), 0);
}

// A user-named function has no tracepoint proxy: fentry or kprobe where the
// kernel admits them (tests/lib/machine_facts.hpp), else sampling.
TEST(FuncHost, UserNamedFunctionTakesWhatTheKernelAdmits) {
    CmdResult r = run(hosttest::hotline() + " probe --json -t queue_work_on --func tcp_v4_rcv:arg0");
    ASSERT_EQ(r.rc, 0) << r.err;
    auto j = nlohmann::json::parse(r.out);
    const auto* f = find_target(j["plan"], "tcp_v4_rcv");
    ASSERT_TRUE(f);
    std::string wrong = plan_mismatch(*f, false, "");
    EXPECT_TRUE(wrong.empty()) << wrong;
    if ((*f)["rejected"].size() > 2) {
        EXPECT_EQ((*f)["rejected"][2]["reason"], "no tracepoint proxy for tcp_v4_rcv");
    }
}

TEST(FuncHost, BadFuncSpecsAreNamed) {
    CmdResult a = run(hosttest::hotline() + " record -d 1 --func tcp_v4_rcv:arg9");
    EXPECT_EQ(a.rc, hotline::kExitUsage);
    EXPECT_NE(a.err.find("arg0..arg4"), std::string::npos) << a.err;
    CmdResult b = run(hosttest::hotline() + " record -d 1 --func tcp_v4_rcv:arg1");
    // tcp_v4_rcv(struct sk_buff *skb): argument 1 does not exist
    EXPECT_EQ(b.rc, 1);
    EXPECT_NE(b.err.find("not a pointer to a struct"), std::string::npos) << b.err;
    CmdResult c = run(hosttest::hotline() + " record -d 1 -t dst_release --func dst_release");
    EXPECT_EQ(c.rc, hotline::kExitUsage);
    EXPECT_NE(c.err.find("given twice"), std::string::npos) << c.err;
}
