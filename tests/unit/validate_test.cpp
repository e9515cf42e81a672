// SPDX-License-Identifier: Apache-2.0
// Statistics and verdicts on synthetic samples with known effects (fixed seeds);
// the sequential method simulated at scale is in sequential_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "hotline/base/stats.hpp"
#include "hotline/validate/validation.hpp"
#include "hotline/kernel/btf_layout.hpp"
#include "hotline/report/verdict_output.hpp"
#include "validate_test_util.hpp"

using namespace hotline;
using namespace hotline::test;

TEST(Stats, MedianAndQuantile) {
    EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2);
    EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
    EXPECT_TRUE(std::isnan(median({})));
    std::vector<double> s{1, 2, 3, 4, 5};
    EXPECT_DOUBLE_EQ(quantile_sorted(s, 0.5), 3);
    EXPECT_DOUBLE_EQ(quantile_sorted(s, 0.25), 2);
    EXPECT_DOUBLE_EQ(quantile_sorted(s, 0.1), 1.4);
    EXPECT_DOUBLE_EQ(quantile_sorted(s, 1), 5);
}

TEST(Stats, SafeRatioConventions) {
    EXPECT_DOUBLE_EQ(safe_ratio(0, 0), 1);
    EXPECT_TRUE(std::isinf(safe_ratio(3, 0)));
    EXPECT_DOUBLE_EQ(safe_ratio(1, 4), 0.25);
}

TEST(Stats, RngIsDeterministicAndUnbiasedEnough) {
    Rng a(42), b(42), c(43);
    for (int i = 0; i < 5; ++i) EXPECT_EQ(a.next(), b.next());
    EXPECT_NE(Rng(42).next(), c.next());
    Rng r(7);
    int counts[3] = {0, 0, 0};
    for (int i = 0; i < 30000; ++i) ++counts[r.below(3)];
    for (int k : counts) EXPECT_NEAR(k, 10000, 400);  // > 5 sigma from a uniform split
}

TEST(Stats, BootstrapCoversTheTrueRatioAndIsSeeded) {
    Rng rng(1);
    auto a = normal(rng, 12, 100, 3);
    auto b = normal(rng, 12, 50, 1.5);
    BootstrapOptions o;
    o.seed = 9;
    auto ci = bootstrap_ratio_of_medians(a, b, o);
    EXPECT_LT(ci.low, 0.5);
    EXPECT_GT(ci.high, 0.5);
    EXPECT_LE(ci.low, ci.ratio);
    EXPECT_GE(ci.high, ci.ratio);
    EXPECT_LT(ci.high - ci.low, 0.1);
    auto again = bootstrap_ratio_of_medians(a, b, o);
    EXPECT_EQ(ci.low, again.low);
    EXPECT_EQ(ci.high, again.high);
}

TEST(Stats, BootstrapOfConstantArmsIsAPoint) {
    auto ci = bootstrap_ratio_of_medians({4, 4, 4}, {2, 2, 2}, {});
    EXPECT_DOUBLE_EQ(ci.ratio, 0.5);
    EXPECT_DOUBLE_EQ(ci.low, 0.5);
    EXPECT_DOUBLE_EQ(ci.high, 0.5);
}

TEST(Stats, MannWhitneySeparatesAndTies) {
    std::vector<double> a{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, b{11, 12, 13, 14, 15, 16, 17, 18, 19, 20};
    auto m = mann_whitney(a, b);
    EXPECT_DOUBLE_EQ(m.u, 100);
    EXPECT_DOUBLE_EQ(m.prob_superiority, 1);
    EXPECT_LT(m.p_two_sided, 0.001);
    auto same = mann_whitney(a, a);
    EXPECT_DOUBLE_EQ(same.prob_superiority, 0.5);
    EXPECT_GT(same.p_two_sided, 0.9);
    auto constant = mann_whitney({5, 5, 5}, {5, 5, 5});
    EXPECT_DOUBLE_EQ(constant.p_two_sided, 1);
}

TEST(Stats, HodgesLehmannRatioOfScaledSamples) {
    std::vector<double> a{1, 2, 3, 5, 8}, b;
    for (double x : a) b.push_back(3 * x);
    auto hl = hodges_lehmann_ratio(a, b);
    ASSERT_TRUE(hl.has_value());
    EXPECT_NEAR(*hl, 3, 1e-12);
    EXPECT_FALSE(hodges_lehmann_ratio({0, 1}, {1, 2}).has_value());
}

TEST(Criterion, ThresholdsAndDescriptions) {
    auto e = expect_down("handoff.dst_release.cross_node_per_op", 0.5);
    EXPECT_DOUBLE_EQ(e.threshold(), 0.5);
    EXPECT_EQ(e.describe(), "handoff.dst_release.cross_node_per_op down >= 50%");
    auto g = guard_higher("scenario.ops_per_s", 0.05);
    EXPECT_DOUBLE_EQ(g.threshold(), 0.95);
    EXPECT_EQ(g.describe(), "scenario.ops_per_s not down by more than 5%");
    Criterion cpu = g;
    cpu.better = Better::kLower;
    cpu.change = 0.1;
    EXPECT_DOUBLE_EQ(cpu.threshold(), 1.1);
}

TEST(Verdict, ClearImprovementPasses) {
    Rng rng(11);
    // 100 -> 30 against "down >= 50%": the sequential test decides it at the 5-pair
    // minimum (100 -> 40 with this noise needs more pairs than 5).
    auto trials = abab(normal(rng, 5, 100, 5), normal(rng, 5, 30, 5), "m.x");
    auto r = evaluate("f", {expect_down("m.x", 0.5)}, trials, {});
    ASSERT_EQ(r.criteria.size(), 1u);
    EXPECT_EQ(r.criteria[0].verdict, Verdict::kPass) << r.criteria[0].reason;
    EXPECT_EQ(r.overall, Verdict::kPass);
    EXPECT_EQ(exit_code(r.overall), 0);
    EXPECT_LT(r.criteria[0].ratio->high, 0.5);
    ASSERT_TRUE(r.criteria[0].mann_whitney);
    EXPECT_LT(r.criteria[0].mann_whitney->p_two_sided, 0.05);
}

TEST(Verdict, NoEffectFails) {
    Rng rng(12);
    auto trials = abab(normal(rng, 5, 100, 5), normal(rng, 5, 100, 5), "m.x");
    auto r = evaluate("f", {expect_down("m.x", 0.5)}, trials, {});
    EXPECT_EQ(r.criteria[0].verdict, Verdict::kFail) << r.criteria[0].reason;
    EXPECT_EQ(r.overall, Verdict::kFail);
    EXPECT_EQ(exit_code(r.overall), 1);
    EXPECT_GT(r.criteria[0].ratio->low, 0.5);
    EXPECT_NE(r.reason.find("m.x down >= 50%"), std::string::npos) << r.reason;
}

TEST(Verdict, GuardrailBreachFailsDespiteTheExpectedEffect) {
    Rng rng(13);
    auto good = abab(normal(rng, 5, 100, 3), normal(rng, 5, 30, 3), "m.x");
    auto thr_a = normal(rng, 5, 1000, 20), thr_b = normal(rng, 5, 700, 20);  // 30% slower
    int ia = 0, ib = 0;
    for (auto& t : good) t.metrics["scenario.ops_per_s"] = t.arm == Arm::kBaseline ? thr_a[ia++] : thr_b[ib++];
    auto r = evaluate("f", {expect_down("m.x", 0.5), guard_higher("scenario.ops_per_s", 0.05)}, good, {});
    EXPECT_EQ(r.criteria[0].verdict, Verdict::kPass);
    EXPECT_EQ(r.criteria[1].verdict, Verdict::kFail) << r.criteria[1].reason;
    EXPECT_EQ(r.overall, Verdict::kFail);
    EXPECT_NE(r.reason.find("guardrail"), std::string::npos);
}

TEST(Verdict, HighNoiseIsInconclusiveAndAsksForMoreTrials) {
    Rng rng(14);
    // A true halving, tested against "down >= 50%": the interval must straddle.
    auto a = lognormal(rng, 30, 100, 0.8), b = lognormal(rng, 30, 50, 0.8);
    ValidateOptions o;
    o.min_each = 5;
    o.max_each = 12;
    Validation v("f", {expect_down("m.x", 0.5)}, o);
    int ia = 0, ib = 0;
    while (!v.finished()) {
        Arm arm = v.next_arm();
        v.add_trial({arm, {{"m.x", arm == Arm::kBaseline ? a[ia++] : b[ib++]}}, ""});
        if (v.count(Arm::kBaseline) == 5 && v.count(Arm::kCandidate) == 5) {
            EXPECT_FALSE(v.finished()) << "noisy data at the minimum must ask for more trials: " << v.progress_line();
        }
    }
    EXPECT_EQ(v.count(Arm::kBaseline), 12);
    EXPECT_EQ(v.count(Arm::kCandidate), 12);
    auto r = v.report();
    EXPECT_EQ(r.overall, Verdict::kInconclusive) << r.reason;
    EXPECT_EQ(exit_code(r.overall), 2);
    EXPECT_NE(v.stop_reason().find("maximum"), std::string::npos);
}

TEST(Validation, AlternatesArmsStartingWithBaseline) {
    Validation v("f", {expect_down("m.x", 0.5)}, {});
    std::vector<Arm> seen;
    for (int i = 0; i < 6; ++i) {
        Arm a = v.next_arm();
        seen.push_back(a);
        v.add_trial({a, {{"m.x", 1.0}}, ""});
    }
    EXPECT_EQ(seen, (std::vector<Arm>{Arm::kBaseline, Arm::kCandidate, Arm::kBaseline, Arm::kCandidate,
                                      Arm::kBaseline, Arm::kCandidate}));
}

static Precondition baseline_floor(const std::string& m, double at_least) {
    Precondition p;
    p.metrics = {m};
    p.at_least = at_least;
    p.why = "nothing to remove";
    return p;
}

TEST(Precondition, HeldAtOnceWhenTheFirstBaselineReachesTheFloor) {
    std::vector<Trial> t = {{Arm::kBaseline, {{"h.x", 1.8}}, ""}};
    PreconditionResult r = judge_precondition(baseline_floor("h.x", 0.1), t);
    EXPECT_EQ(r.state, PreconditionState::kHeld);
    EXPECT_EQ(r.values, std::vector<double>{1.8});
    EXPECT_EQ(judge_precondition(baseline_floor("h.x", 0.1), {}).state, PreconditionState::kPending);
}

TEST(Precondition, FailsAfterThreeBaselineTrialsBelowTheFloorWithTheNumbers) {
    std::vector<Trial> t;
    for (double v : {0.0, 0.02}) t.push_back({Arm::kBaseline, {{"h.x", v}}, ""});
    EXPECT_EQ(judge_precondition(baseline_floor("h.x", 0.1), t).state, PreconditionState::kPending);
    t.push_back({Arm::kBaseline, {{"h.x", 0.01}}, ""});
    t.push_back({Arm::kBaseline, {{"h.x", 5.0}}, ""});  // past the judged trials: ignored
    PreconditionResult r = judge_precondition(baseline_floor("h.x", 0.1), t);
    EXPECT_EQ(r.state, PreconditionState::kFailed);
    EXPECT_EQ(r.values, (std::vector<double>{0.0, 0.02, 0.01}));
    EXPECT_EQ(r.describe(), "h.x: median 0.01 of 3 baseline trials (0, 0.02, 0.01) < 0.1");
}

TEST(Precondition, OneLowTrialIsNotEnoughAndUnmeasuredFails) {
    std::vector<Trial> t = {{Arm::kBaseline, {{"h.x", 0.0}}, ""}, {Arm::kBaseline, {{"h.x", 0.5}}, ""}};
    EXPECT_EQ(judge_precondition(baseline_floor("h.x", 0.1), t).state, PreconditionState::kHeld);  // median 0.25
    std::vector<Trial> none(3, Trial{Arm::kBaseline, {{"other.y", 1.0}}, ""});
    PreconditionResult r = judge_precondition(baseline_floor("h.x", 0.1), none);
    EXPECT_EQ(r.state, PreconditionState::kFailed);
    EXPECT_EQ(r.describe(), "h.x: not measured in the baseline");
}

TEST(Validation, NothingToRemoveStopsWithinThreeBaselineTrialsBeforeAnyFixTrial) {
    Validation v("f", {expect_down("h.x", 0.95)}, {}, {baseline_floor("h.x", 0.1)});
    int trials = 0;
    while (!v.finished()) {
        ASSERT_EQ(v.next_arm(), Arm::kBaseline) << "no fix trial before the baseline shows something";
        v.add_trial({Arm::kBaseline, {{"h.x", 0.001}}, ""});
        ASSERT_LE(++trials, kPreconditionTrials);
    }
    EXPECT_EQ(trials, kPreconditionTrials);
    VerdictReport r = v.report();
    EXPECT_EQ(r.overall, Verdict::kNotApplicable);
    EXPECT_EQ(exit_code(r.overall), 3);
    EXPECT_NE(r.reason.find("median 0.001 of 3 baseline trials"), std::string::npos) << r.reason;
    EXPECT_NE(r.reason.find("nothing to remove"), std::string::npos) << r.reason;
    ASSERT_EQ(r.preconditions.size(), 1u);
    auto j = verdict_to_json(r);
    EXPECT_EQ(j["verdict"], "NOT-APPLICABLE");
    EXPECT_EQ(j["preconditions"][0]["state"], "failed");
    EXPECT_EQ(j["preconditions"][0]["values"].size(), 3u);
}

TEST(Validation, AHeldPreconditionLeavesTheAbabScheduleAlone) {
    Validation v("f", {expect_down("h.x", 0.95)}, {}, {baseline_floor("h.x", 0.1)});
    std::vector<Arm> seen;
    for (int i = 0; i < 4; ++i) {
        Arm a = v.next_arm();
        seen.push_back(a);
        v.add_trial({a, {{"h.x", a == Arm::kBaseline ? 1.8 : 0.0}}, ""});
    }
    EXPECT_EQ(seen, (std::vector<Arm>{Arm::kBaseline, Arm::kCandidate, Arm::kBaseline, Arm::kCandidate}));
    EXPECT_EQ(v.report().preconditions.at(0).state, PreconditionState::kHeld);
    EXPECT_FALSE(verdict_to_json(Validation("g", {expect_down("h.x", 0.5)}, {}).report()).contains("preconditions"));
}

TEST(Validation, ClearEffectStopsAtTheMinimum) {
    Rng rng(15);
    auto a = normal(rng, 20, 100, 2), b = normal(rng, 20, 20, 2);
    Validation v("f", {expect_down("m.x", 0.5)}, {});
    int ia = 0, ib = 0;
    while (!v.finished()) {
        Arm arm = v.next_arm();
        v.add_trial({arm, {{"m.x", arm == Arm::kBaseline ? a[ia++] : b[ib++]}}, ""});
        ASSERT_LE(v.trials().size(), 40u);
    }
    EXPECT_EQ(v.count(Arm::kBaseline), 5);
    EXPECT_EQ(v.count(Arm::kCandidate), 5);
    EXPECT_EQ(v.report().overall, Verdict::kPass);
    EXPECT_EQ(v.stop_reason(), "every criterion is decided");
}

TEST(Validation, NoisyButRealEffectIsDecidedWithMoreTrials) {
    Rng rng(16);
    auto a = lognormal(rng, 40, 100, 0.5), b = lognormal(rng, 40, 25, 0.5);
    ValidateOptions o;
    o.max_each = 40;
    Validation v("f", {expect_down("m.x", 0.5)}, o);
    int ia = 0, ib = 0;
    bool undecided_at_min = false;
    while (!v.finished()) {
        Arm arm = v.next_arm();
        v.add_trial({arm, {{"m.x", arm == Arm::kBaseline ? a[ia++] : b[ib++]}}, ""});
        if (v.count(Arm::kBaseline) == 5 && v.count(Arm::kCandidate) == 5) undecided_at_min = !v.finished();
    }
    auto r = v.report();
    EXPECT_EQ(r.overall, Verdict::kPass) << r.reason;
    // This seed's noise leaves the minimum undecided; the rule then keeps going.
    EXPECT_TRUE(undecided_at_min);
    EXPECT_GT(v.count(Arm::kBaseline), 5);
    EXPECT_LT(v.count(Arm::kBaseline), 40);
}

TEST(Validation, RequiredFailureStopsEarly) {
    Rng rng(17);
    auto a = normal(rng, 20, 100, 2), b = normal(rng, 20, 99, 2);
    ValidateOptions o;
    o.max_each = 20;
    Validation v("f", {expect_down("m.x", 0.5)}, o);
    int ia = 0, ib = 0;
    while (!v.finished()) {
        Arm arm = v.next_arm();
        v.add_trial({arm, {{"m.x", arm == Arm::kBaseline ? a[ia++] : b[ib++]}}, ""});
    }
    EXPECT_EQ(v.count(Arm::kBaseline), 5);
    EXPECT_EQ(v.stop_reason(), "a required criterion failed");
    EXPECT_EQ(v.report().overall, Verdict::kFail);
}

TEST(Verdict, TooFewTrialsIsInconclusive) {
    auto r = evaluate("f", {expect_down("m.x", 0.5)}, abab({100, 101}, {10, 11}, "m.x"), {});
    EXPECT_EQ(r.criteria[0].verdict, Verdict::kInconclusive);
    EXPECT_NE(r.criteria[0].reason.find("5 trials per arm"), std::string::npos);
}

TEST(Verdict, MissingMetricIsNamedAndAlternativesAreUsed) {
    Criterion c = expect_down("calls.ipv4_dst_check.per_op", 0.3);
    auto trials = abab({10, 10, 10, 10, 10}, {4, 4, 4, 4, 4}, "share.ipv4_dst_check");
    auto r = evaluate("f", {c}, trials, {});
    EXPECT_EQ(r.criteria[0].verdict, Verdict::kInconclusive);
    EXPECT_NE(r.criteria[0].reason.find("calls.ipv4_dst_check.per_op missing in 10 of 10 trials"), std::string::npos)
        << r.criteria[0].reason;
    c.metrics.push_back("share.ipv4_dst_check");
    r = evaluate("f", {c}, trials, {});
    EXPECT_EQ(r.criteria[0].metric, "share.ipv4_dst_check");
    EXPECT_EQ(r.criteria[0].verdict, Verdict::kPass);
}

// Every required criterion must hold for a PASS: one that passed beside one
// left undecided (its metric never measured) is INCONCLUSIVE, and says which.
TEST(Verdict, OnePassBesideAnUndecidedCriterionIsInconclusive) {
    Rng rng(19);
    auto trials = abab(normal(rng, 5, 100, 5), normal(rng, 5, 30, 5), "m.x");
    auto r = evaluate("f", {expect_down("m.x", 0.5), expect_down("m.y", 0.5)}, trials, {});
    ASSERT_EQ(r.criteria.size(), 2u);
    EXPECT_EQ(r.criteria[0].verdict, Verdict::kPass) << r.criteria[0].reason;
    EXPECT_EQ(r.criteria[1].verdict, Verdict::kInconclusive) << r.criteria[1].reason;
    EXPECT_EQ(r.overall, Verdict::kInconclusive) << r.reason;
    EXPECT_EQ(exit_code(r.overall), 2);
    EXPECT_NE(r.reason.find("1 of 2 criteria undecided"), std::string::npos) << r.reason;
}

TEST(Verdict, ReportCriteriaNeverDecide) {
    Rng rng(18);
    auto trials = abab(normal(rng, 5, 100, 5), normal(rng, 5, 40, 5), "m.x");
    Criterion rep;
    rep.kind = CriterionKind::kReport;
    rep.metrics = {"m.x"};
    auto r = evaluate("f", {rep}, trials, {});
    EXPECT_EQ(r.criteria[0].verdict, Verdict::kInfo);
    EXPECT_EQ(r.overall, Verdict::kInconclusive);  // no expectation: nothing confirms the fix
    EXPECT_NE(r.reason.find("no expected metric"), std::string::npos);
    r = evaluate("f", {expect_down("m.x", 0.5), rep}, trials, {});
    EXPECT_EQ(r.overall, Verdict::kPass);
}

TEST(Verdict, ExactMetricDecidesWithOneTrialPerArm) {
    Criterion c = expect_down("layout.dst_entry.read_fields_on_refcnt_line", 1.0);
    c.exact = true;
    auto r = evaluate("dst-refcnt-false-sharing", {c}, abab({2}, {0}, c.metrics[0]), {});
    EXPECT_EQ(r.criteria[0].verdict, Verdict::kPass) << r.criteria[0].reason;
    EXPECT_EQ(r.overall, Verdict::kPass);
    r = evaluate("x", {c}, abab({2}, {1}, c.metrics[0]), {});
    EXPECT_EQ(r.overall, Verdict::kFail);
    r = evaluate("x", {c}, abab({2, 3}, {0, 0}, c.metrics[0]), {});
    EXPECT_EQ(r.criteria[0].verdict, Verdict::kInconclusive);
}

TEST(Verdict, ZeroInBothArmsCannotConfirm) {
    auto r = evaluate("f", {expect_down("m.x", 0.5)}, abab({0, 0, 0, 0, 0}, {0, 0, 0, 0, 0}, "m.x"), {});
    EXPECT_EQ(r.criteria[0].verdict, Verdict::kInconclusive);
    EXPECT_NE(r.criteria[0].reason.find("0 in both arms"), std::string::npos);
}

TEST(Verdict, AppearingFromZeroIsAFailure) {
    auto r = evaluate("f", {expect_down("m.x", 0.5)}, abab({0, 0, 0, 0, 0}, {3, 4, 5, 3, 4}, "m.x"), {});
    EXPECT_EQ(r.criteria[0].verdict, Verdict::kFail);
}

TEST(Verdict, OptionsAreChecked) {
    ValidateOptions o;
    EXPECT_FALSE(check_validate_options(o));
    o.max_each = 2;
    EXPECT_TRUE(check_validate_options(o));
    o = {};
    o.confidence = 1.5;
    EXPECT_TRUE(check_validate_options(o));
    o = {};
    o.bootstrap_iterations = 10;
    EXPECT_TRUE(check_validate_options(o));
}

TEST(Render, JsonCarriesEveryCriterionAndNoInfinity) {
    auto trials = abab({0, 0, 0, 0, 0}, {3, 4, 5, 3, 4}, "m.x");
    auto r = evaluate("f", {expect_down("m.x", 0.5)}, trials, {});
    r.scenario = "tcp-crr";
    std::ostringstream os;
    render_verdict_json(os, r);
    auto j = nlohmann::json::parse(os.str());
    EXPECT_EQ(j["schema"], kVerdictSchema);
    EXPECT_EQ(j["verdict"], "FAIL");
    EXPECT_EQ(j["exit_code"], 1);
    EXPECT_EQ(j["criteria"].size(), 1u);
    EXPECT_TRUE(j["criteria"][0]["ratio"]["estimate"].is_null());  // inf is not JSON
    EXPECT_EQ(j["trials"].size(), 10u);
    EXPECT_EQ(j["trials"][1]["arm"], "fix");
}

TEST(Render, JunitNamesEachCriterionAndEscapes) {
    Rng rng(19);
    auto trials = abab(normal(rng, 5, 100, 5), normal(rng, 5, 40, 5), "m.x");
    for (auto& t : trials) t.metrics["scenario.ops_per_s"] = t.arm == Arm::kBaseline ? 1000 : 600;
    Criterion noisy = expect_down("m.missing", 0.5);
    Criterion g = guard_higher("scenario.ops_per_s", 0.05);
    g.note = "throughput <must> not drop & that's that";
    auto r = evaluate("a&b", {expect_down("m.x", 0.5), g, noisy}, trials, {});
    std::ostringstream os;
    render_junit(os, r);
    std::string x = os.str();
    auto count = [&](const std::string& s) {
        std::size_t n = 0;
        for (auto p = x.find(s); p != std::string::npos; p = x.find(s, p + 1)) ++n;
        return n;
    };
    EXPECT_EQ(count("<testcase "), 3u);
    EXPECT_EQ(count("<failure "), 1u);
    EXPECT_EQ(count("<skipped "), 1u);
    EXPECT_NE(x.find("tests=\"3\" failures=\"1\" errors=\"0\" skipped=\"1\""), std::string::npos);
    EXPECT_NE(x.find("name=\"expect: m.x down &gt;= 50%\""), std::string::npos);
    EXPECT_NE(x.find("hotline.validate.a&amp;b"), std::string::npos);
    EXPECT_NE(x.find("&lt;must&gt;"), std::string::npos);
    EXPECT_EQ(x.find("<must>"), std::string::npos);
    EXPECT_EQ(x.find("a&b"), std::string::npos);
}

TEST(Render, NotApplicableSaysWhyEverywhere) {
    auto r = not_applicable_report("tcp-low-latency", {expect_down("m.x", 0.5)},
                                   "tcp_prequeue does not exist on this kernel");
    EXPECT_EQ(r.overall, Verdict::kNotApplicable);
    EXPECT_EQ(exit_code(r.overall), 3);
    std::ostringstream text, junit;
    render_verdict_text(text, r);
    render_junit(junit, r);
    EXPECT_NE(text.str().find("NOT-APPLICABLE"), std::string::npos);
    EXPECT_NE(text.str().find("tcp_prequeue does not exist"), std::string::npos);
    EXPECT_NE(junit.str().find("name=\"applicability\""), std::string::npos);
    EXPECT_NE(junit.str().find("NOT-APPLICABLE: tcp_prequeue does not exist"), std::string::npos);
}

TEST(Render, AnErrorOverridesThePartialVerdictEverywhere) {
    // Trials that already PASS, then the run fails: exit 4 in every view, never 0.
    auto trials = abab({100, 101, 99, 100, 102}, {10, 11, 9, 10, 12}, "m.x");
    auto r = evaluate("f", {expect_down("m.x", 0.5)}, trials, {});
    ASSERT_EQ(r.overall, Verdict::kPass);
    r.context["error"] = "trial 11: scenario failed";
    std::ostringstream text, json, junit;
    render_verdict_text(text, r);
    render_verdict_json(json, r);
    render_junit(junit, r);
    auto j = nlohmann::json::parse(json.str());
    EXPECT_EQ(j["verdict"], "ERROR");
    EXPECT_EQ(j["exit_code"], kExitValidateError);
    EXPECT_EQ(j["error"], "trial 11: scenario failed");
    EXPECT_EQ(j["partial_verdict"], "PASS");
    EXPECT_NE(text.str().find("fix f: ERROR"), std::string::npos) << text.str();
    EXPECT_NE(text.str().find("trial 11: scenario failed"), std::string::npos) << text.str();
    EXPECT_NE(junit.str().find("errors=\"1\""), std::string::npos) << junit.str();
    EXPECT_NE(junit.str().find("<error type=\"ERROR\" message=\"trial 11: scenario failed\"/>"), std::string::npos);
    EXPECT_NE(junit.str().find("name=\"verdict\" value=\"ERROR\""), std::string::npos);
}

TEST(Render, TextShowsTheTableAndUndecidedReasons) {
    Rng rng(20);
    auto trials = abab(normal(rng, 5, 100, 5), normal(rng, 5, 40, 5), "m.x");
    auto r = evaluate("f", {expect_down("m.x", 0.5), expect_down("m.gone", 0.1)}, trials, {});
    std::ostringstream os;
    render_verdict_text(os, r);
    std::string s = os.str();
    EXPECT_NE(s.find("fix f: INCONCLUSIVE"), std::string::npos) << s;
    EXPECT_NE(s.find("m.x down >= 50%"), std::string::npos);
    EXPECT_NE(s.find("not measured: m.gone missing"), std::string::npos) << s;
}

TEST(TrialMetrics, NamesFollowTheCatalogVocabulary) {
    Interval iv;
    iv.t_start = 0;
    iv.t_end = 2;
    TargetCounters exact;
    exact.target = "dst_release";
    exact.fidelity = Fidelity::kExact;
    exact.calls = {300, 100};
    exact.has_latency = true;
    exact.lat_count = 400;
    exact.lat_sum_ns = 40000;
    TargetCounters sampled;
    sampled.target = "ipv4_dst_check";
    sampled.fidelity = Fidelity::kSampled;
    sampled.calls = {2, 6};
    TargetCounters proxy;
    proxy.target = "queue_work_on";
    proxy.fidelity = Fidelity::kPartial;
    proxy.calls = {50, 0};
    iv.d.targets = {exact, sampled, proxy};
    iv.d.samples_total = {100, 300};
    ScenarioNumbers s;
    s.ops = 200;
    s.seconds = 2;
    s.cpu_seconds = 0.5;
    s.extra["latency_p50_us"] = 12.5;
    auto m = trial_metrics(iv, s);
    EXPECT_DOUBLE_EQ(m.at("scenario.ops_per_s"), 100);
    EXPECT_DOUBLE_EQ(m.at("scenario.cpu_us_per_op"), 2500);
    EXPECT_DOUBLE_EQ(m.at("scenario.latency_p50_us"), 12.5);
    EXPECT_DOUBLE_EQ(m.at("calls.dst_release.per_op"), 2);
    EXPECT_DOUBLE_EQ(m.at("latency.dst_release.mean_ns"), 100);
    EXPECT_DOUBLE_EQ(m.at("share.ipv4_dst_check"), 0.02);
    EXPECT_DOUBLE_EQ(m.at("proxy.queue_work_on.per_op"), 0.25);
    EXPECT_EQ(m.count("calls.ipv4_dst_check.per_op"), 0u);  // a sampled function has no exact count
}

TEST(TrialMetrics, HandoffsAndWorkItems) {
    Interval iv;
    TargetCounters t;
    t.target = "dst_release";
    t.fidelity = Fidelity::kExact;
    t.calls = {10, 10};
    t.has_handoffs = true;
    t.handoffs.cross_cpu = {3, 1};
    t.handoffs.cross_node = {2, 2};
    t.handoffs.sample = 2;
    iv.d.targets = {t};
    iv.d.has_workq = true;
    iv.d.workq.irqs = {600, 400};
    iv.d.workq.funcs["mix_interrupt_randomness"] = 16;
    ScenarioNumbers s;
    s.ops = 4;
    s.seconds = 1;
    auto m = trial_metrics(iv, s);
    EXPECT_DOUBLE_EQ(m.at("handoff.dst_release.cross_node_per_op"), 4.0 * 2 / 4);
    EXPECT_DOUBLE_EQ(m.at("handoff.dst_release.cross_cpu_per_op"), 8.0 * 2 / 4);
    EXPECT_DOUBLE_EQ(m.at("work.mix_interrupt_randomness.queued_per_irq"), 0.016);
}

TEST(TrialMetrics, LayoutCountsOnlyReadMostlyFieldsOnTheRefcountLine) {
    // The watched-field verdicts object_layout() gives for the two dst layouts
    // in kernel-facts.md: 6.1 and 6.12.
    LineLayout v61;
    v61.type = "dst_entry";
    v61.flagged = {"lwtstate", "rt_genid", "__use", "lastuse"};
    v61.clear = {"obsolete"};
    LineLayout v612 = v61;
    v612.flagged = {"__use", "lastuse"};
    v612.clear = {"obsolete", "lwtstate", "rt_genid"};
    TrialMetrics a, b;
    add_layout_metrics(a, v61);
    add_layout_metrics(b, v612);
    EXPECT_DOUBLE_EQ(a.at("layout.dst_entry.read_fields_on_refcnt_line"), 2);
    EXPECT_DOUBLE_EQ(b.at("layout.dst_entry.read_fields_on_refcnt_line"), 0);
    EXPECT_DOUBLE_EQ(a.at("layout.dst_entry.fields_on_hot_line"), 4);
    EXPECT_DOUBLE_EQ(b.at("layout.dst_entry.fields_on_hot_line"), 2);
}

TEST(Stats, HodgesLehmannEqualsTheBruteForceMedianOfAllPairs) {
    Rng rng(7);
    for (int round = 0; round < 200; ++round) {
        std::size_t n = 1 + rng.below(12), m = 1 + rng.below(12);
        std::vector<double> a(n), b(m);
        // Few distinct values, so ties are common.
        for (auto& x : a) x = 1 + double(rng.below(6)) * 0.5;
        for (auto& y : b) y = 1 + double(rng.below(6)) * 0.25;
        std::vector<double> logs;
        for (double x : a)
            for (double y : b) logs.push_back(std::log(y) - std::log(x));
        std::sort(logs.begin(), logs.end());
        std::size_t mid = logs.size() / 2;
        double med = logs.size() % 2 ? logs[mid] : (logs[mid - 1] + logs[mid]) / 2;
        auto hl = hodges_lehmann_ratio(a, b);
        ASSERT_TRUE(hl.has_value());
        EXPECT_DOUBLE_EQ(*hl, std::exp(med)) << "round " << round;
    }
}
