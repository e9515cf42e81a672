// SPDX-License-Identifier: Apache-2.0
// The benchmarks' shared statistics and their JSON check (tests/bench/bench_util.hpp):
// the loss interval bench_overhead prints, and the smoke runs' rules for figures.
#include <gtest/gtest.h>

#include "../bench/bench_util.hpp"

using namespace hotline::bench;

TEST(BenchUtil, StudentTQuantileMatchesTablesAcrossDegreesOfFreedom) {
    EXPECT_DOUBLE_EQ(t975(1), 12.706);
    EXPECT_DOUBLE_EQ(t975(19), 2.093);
    EXPECT_DOUBLE_EQ(t975(30), 2.042);
    // Beyond the table: the expansion against published values.
    EXPECT_NEAR(t975(40), 2.021, 0.001);
    EXPECT_NEAR(t975(60), 2.000, 0.001);
    EXPECT_NEAR(t975(120), 1.980, 0.001);
    EXPECT_NEAR(t975(100000), 1.960, 0.001);
}

TEST(BenchUtil, MeanIntervalOfKnownSample) {
    MeanCi m = mean_ci95({1, 2, 3, 4, 5});
    EXPECT_DOUBLE_EQ(m.mean, 3);
    EXPECT_NEAR(m.sd, 1.5811, 1e-4);
    EXPECT_NEAR(m.half_width, 2.776 * 1.5811 / std::sqrt(5.0), 1e-3);
    EXPECT_NEAR(m.low(), 3 - m.half_width, 1e-12);
    EXPECT_EQ(mean_ci95({7}).half_width, 0);
    EXPECT_EQ(mean_ci95({}).n, 0u);
}

// The same-work goals: a geometric mean of paired ratios, judged on its interval.
TEST(BenchUtil, RatioIntervalIsGeometricAndJudgedOnItsEnds) {
    RatioCi r = ratio_ci95({0.2, 0.4});
    EXPECT_NEAR(r.estimate, std::sqrt(0.08), 1e-12);
    const double half = 12.706 * (std::log(0.4) - std::log(0.2)) / std::sqrt(2.0) / std::sqrt(2.0);
    EXPECT_NEAR(r.low, r.estimate * std::exp(-half), 1e-9);
    EXPECT_NEAR(r.high, r.estimate * std::exp(half), 1e-9);
    EXPECT_EQ(r.n, 2u);
    EXPECT_EQ(ratio_ci95({0.3, 0, -1}).n, 1u) << "a round without a figure is left out";
    EXPECT_EQ(ceiling_verdict(ratio_ci95({0.20, 0.21, 0.22}), 0.25), "met (target <= 0.25)");
    EXPECT_EQ(ceiling_verdict(ratio_ci95({0.30, 0.31, 0.32}), 0.25), "MISSED (target <= 0.25)");
    EXPECT_EQ(ceiling_verdict(ratio_ci95({0.20, 0.30}), 0.25), "undecided: the interval holds the target 0.25");
    EXPECT_EQ(ceiling_verdict(ratio_ci95({0.1}), 0.25), "undecided: 1 round (target <= 0.25)");
}

TEST(BenchUtil, FigureCheckAllowsSignedKeysOnlyWhereNamed) {
    FigureRules rules{{"throughput_loss_pct"}, {"missed", "summary"}};
    nlohmann::json j = {{"loss", {{{"throughput_loss_pct", {{"estimate", -0.4}, {"low", -1.2}}},
                                   {"bpf_ns_per_op", 12.5}}}},
                        {"summary", nlohmann::json::array()},
                        {"missed", nlohmann::json::array()}};
    std::vector<std::string> problems;
    check_figures(j, "", rules, problems);
    EXPECT_TRUE(problems.empty()) << problems.front();

    j["loss"][0]["bpf_ns_per_op"] = 0;  // a zero measured nothing
    j["trigger"] = nlohmann::json::array();
    check_figures(j, "", rules, problems);
    ASSERT_EQ(problems.size(), 2u);
    EXPECT_NE(problems[0].find("/loss/0/bpf_ns_per_op = 0"), std::string::npos);
    EXPECT_NE(problems[1].find("/trigger is empty"), std::string::npos);
}

TEST(BenchUtil, FinishFailsOnAMissingSectionOrAFailedPart) {
    nlohmann::json out = {{"loss", {{"x", 1.0}}}, {"summary", nlohmann::json::array()}};
    FigureRules rules{{}, {"summary"}};
    EXPECT_EQ(finish("t", out, "", {"loss", "summary"}, {}, rules), 0);
    EXPECT_EQ(finish("t", out, "", {"loss", "trigger"}, {}, rules), 1);
    EXPECT_EQ(finish("t", out, "", {"loss"}, {"perf counted no hits"}, rules), 1);
}

// A round whose run of one arm failed drops out; the rounds after it still
// pair with their own.
TEST(BenchUtil, PairedRatiosPairEachRoundWithItself) {
    RoundFigures rounds{{{"hotline-track", 100}, {"bpftrace-track", 400}},
                        {{"bpftrace-track", 800}},  // hotline's run failed
                        {{"hotline-track", 300}, {"bpftrace-track", 600}},
                        {{"hotline-track", 50}, {"bpftrace-track", 0}}};
    EXPECT_EQ(paired_ratios(rounds, "hotline-track", "bpftrace-track"), (std::vector<double>{0.25, 0.5}));
    EXPECT_TRUE(paired_ratios(rounds, "hotline-track", "empty").empty());
}
