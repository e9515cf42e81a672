// SPDX-License-Identifier: Apache-2.0
// The fixed-sample verdict (`hotline diff`, and `hotline ab` through it): a
// criterion passes only when the whole interval is on the good side of its
// threshold, fails only when the whole interval is on the bad side, and an
// interval that straddles the threshold decides nothing, in both directions.
#include <gtest/gtest.h>

#include "hotline/fix/fix.hpp"
#include "hotline/validate/validator.hpp"

using namespace hotline;

namespace {

// One recording: `values` of the metric m.x, one interval each.
nlohmann::json recording(const std::vector<double>& values) {
    nlohmann::json per = nlohmann::json::array();
    for (double v : values) per.push_back({{"m.x", v}});
    return {{"schema", "hotline.recording"}, {"version", 1}, {"analysis", {{"interval_metrics", per}}}};
}

// Nine values evenly from `low` to `high`: the median of a resample spreads
// over the middle of them, so the interval of the ratio to a constant
// baseline of 100 is inside [low, high] / 100 and wide enough to straddle the
// threshold at the middle.
std::vector<double> spread(double low, double high) {
    std::vector<double> v;
    for (int i = 0; i < 9; ++i) v.push_back(low + (high - low) * i / 8);
    return v;
}

struct Judged {
    Verdict verdict = Verdict::kInconclusive;
    RatioCi ci;
    std::string reason;
};

// The fix's candidate values against a constant baseline of 100, judged by
// `hotline diff` on a fix whose one criterion is an expectation.
Judged diff(Better better, double change, const std::vector<double>& candidate) {
    FixDef fix;
    fix.name = "f";
    fix.mode = FixMode::kKernelPair;
    Criterion c;
    c.kind = CriterionKind::kExpect;
    c.metrics = {"m.x"};
    c.better = better;
    c.change = change;
    fix.criteria = {c};
    auto r = diff_recordings(fix, recording(std::vector<double>(9, 100)), recording(candidate), "a.json", "b.json");
    EXPECT_TRUE(r) << r.error().message();
    if (!r || r->criteria.size() != 1 || !r->criteria[0].ratio) {
        ADD_FAILURE() << "no judged criterion";
        return {};
    }
    EXPECT_EQ(r->options.method, TestMethod::kBootstrap) << "diff's intervals are not pairs";
    return {r->criteria[0].verdict, *r->criteria[0].ratio, r->criteria[0].reason};
}

}  // namespace

// Lower is better (fix / baseline 0.5..0.7, a drop of 30-50%).
TEST(FixedSample, LowerIsBetterPassesOnlyWithTheWholeIntervalBelowTheThreshold) {
    const auto fix = spread(40, 80);
    // "down >= 40%": threshold 0.6, inside the interval.
    Judged straddle = diff(Better::kLower, 0.4, fix);
    ASSERT_LT(straddle.ci.low, 0.6);
    ASSERT_GT(straddle.ci.high, 0.6);
    EXPECT_EQ(straddle.verdict, Verdict::kInconclusive) << straddle.reason;
    EXPECT_NE(straddle.reason.find("straddles the threshold 0.6"), std::string::npos) << straddle.reason;
    // "down >= 10%": threshold 0.9, above the whole interval.
    Judged good = diff(Better::kLower, 0.1, fix);
    ASSERT_LT(good.ci.high, 0.9);
    EXPECT_EQ(good.verdict, Verdict::kPass) << good.reason;
    // "down >= 70%": threshold 0.3, below the whole interval.
    Judged bad = diff(Better::kLower, 0.7, fix);
    ASSERT_GT(bad.ci.low, 0.3);
    EXPECT_EQ(bad.verdict, Verdict::kFail) << bad.reason;
}

// Higher is better (fix / baseline 1.5..1.7, a gain of 50-70%).
TEST(FixedSample, HigherIsBetterPassesOnlyWithTheWholeIntervalAboveTheThreshold) {
    const auto fix = spread(140, 180);
    // "up >= 60%": threshold 1.6, inside the interval.
    Judged straddle = diff(Better::kHigher, 0.6, fix);
    ASSERT_LT(straddle.ci.low, 1.6);
    ASSERT_GT(straddle.ci.high, 1.6);
    EXPECT_EQ(straddle.verdict, Verdict::kInconclusive) << straddle.reason;
    // "up >= 20%": threshold 1.2, below the whole interval.
    Judged good = diff(Better::kHigher, 0.2, fix);
    ASSERT_GT(good.ci.low, 1.2);
    EXPECT_EQ(good.verdict, Verdict::kPass) << good.reason;
    // "up >= 100%": threshold 2, above the whole interval.
    Judged bad = diff(Better::kHigher, 1.0, fix);
    ASSERT_LT(bad.ci.high, 2.0);
    EXPECT_EQ(bad.verdict, Verdict::kFail) << bad.reason;
}

// Constant arms give a point interval: on the threshold is its good side
// (ratio <= t when lower is better, >= t when higher), just past it the bad side.
TEST(FixedSample, APointOnTheThresholdPasses) {
    EXPECT_EQ(diff(Better::kLower, 0.5, std::vector<double>(9, 50)).verdict, Verdict::kPass);
    EXPECT_EQ(diff(Better::kHigher, 0.5, std::vector<double>(9, 150)).verdict, Verdict::kPass);
    EXPECT_EQ(diff(Better::kLower, 0.5, std::vector<double>(9, 51)).verdict, Verdict::kFail);
    EXPECT_EQ(diff(Better::kHigher, 0.5, std::vector<double>(9, 149)).verdict, Verdict::kFail);
}
