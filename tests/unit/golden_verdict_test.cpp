// SPDX-License-Identifier: Apache-2.0
// Golden outputs of the verdicts (text, JSON, JUnit), the diff verdict and the
// fix catalog: golden_test.cpp says how they are compared and regenerated.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "golden_util.hpp"
#include "hotline/model/contention.hpp"
#include "hotline/fix/fix.hpp"
#include "hotline/report/fix_output.hpp"
#include "hotline/report/verdict_output.hpp"
#include "hotline/validate/validation.hpp"
#include "hotline/validate/validator.hpp"

using namespace hotline;
using namespace golden;

namespace {

// ============================================================ verdicts

Criterion criterion(CriterionKind kind, std::vector<std::string> metrics, Better better, double change,
                    std::string note = "", bool exact = false) {
    Criterion c;
    c.kind = kind;
    c.metrics = std::move(metrics);
    c.better = better;
    c.change = change;
    c.exact = exact;
    c.note = std::move(note);
    c.source = "golden_test.cpp";
    return c;
}

// One of each kind and outcome: PASS, FAIL (on the second alternative metric),
// a guardrail, an exact layout fact, a metric missing in some trials, and
// reported metrics (one with a zero baseline: an infinite ratio).
std::vector<Criterion> mixed_criteria() {
    return {
        criterion(CriterionKind::kExpect, {"calls.tcp_prequeue.per_op"}, Better::kLower, 0.9,
                  "prequeue is bypassed"),
        criterion(CriterionKind::kExpect,
                  {"handoff.dst_release.cross_node_per_op", "handoff.dst_release.cross_cpu_per_op"},
                  Better::kLower, 0.5, "no refcount taken in softirq & dropped by the <reader>"),
        criterion(CriterionKind::kGuardrail, {"scenario.ops_per_s"}, Better::kHigher, 0.05),
        criterion(CriterionKind::kExpect, {"layout.dst_entry.read_fields_on_refcnt_line"}, Better::kLower, 1.0,
                  "lwtstate and rt_genid leave the \"refcount\" line", true),
        criterion(CriterionKind::kExpect, {"work.mix_interrupt_randomness.queued_per_irq"}, Better::kLower, 0.9),
        criterion(CriterionKind::kReport, {"latency.dst_release.mean_ns"}, Better::kLower, 0),
        criterion(CriterionKind::kReport, {"share.mix_interrupt_randomness"}, Better::kHigher, 0),
    };
}

// Trial i of the ABAB sequence (even: baseline, odd: fix), values by formula.
Trial mixed_trial(int i) {
    const bool fix = i % 2 == 1;
    const double j = double(i / 2);  // 0..5 within the arm
    Trial t;
    t.arm = fix ? Arm::kCandidate : Arm::kBaseline;
    t.note = "trial-" + std::to_string(i) + ".json";
    auto& m = t.metrics;
    m["calls.tcp_prequeue.per_op"] = fix ? 0.02 + 0.001 * j : 1.0 + 0.01 * j;
    m["handoff.dst_release.cross_cpu_per_op"] = fix ? 0.70 + 0.01 * j : 0.80 - 0.01 * j;
    m["scenario.ops_per_s"] = fix ? 950 + 15 * ((i * 7) % 5) : 1000 + 12 * ((i * 3) % 5);
    m["layout.dst_entry.read_fields_on_refcnt_line"] = fix ? 0 : 2;
    if (i % 4 != 3) m["work.mix_interrupt_randomness.queued_per_irq"] = 0.015;
    m["latency.dst_release.mean_ns"] = fix ? 38.5 + j : 45.25 - j;
    m["share.mix_interrupt_randomness"] = fix ? 0.001 * (j + 1) : 0;
    if (i == 5) m["scenario.latency_p99_us"] = std::numeric_limits<double>::quiet_NaN();  // JSON: null
    return t;
}

ValidateOptions golden_options() {
    ValidateOptions o;
    o.min_each = 5;
    o.max_each = 8;
    o.confidence = 0.95;
    o.bootstrap_iterations = 2000;
    o.seed = 20240517;
    return o;
}

VerdictReport mixed_report() {
    std::vector<Trial> trials;
    for (int i = 0; i < 12; ++i) trials.push_back(mixed_trial(i));
    VerdictReport r = evaluate("early-demux-off", mixed_criteria(), trials, golden_options());
    r.scenario = "tcp-crr";
    r.notes = {"applied net.ipv4.ip_early_demux=0 in hl-a, hl-b", "restored 2 knobs"};
    r.context = {{"kernel", "6.1.0-18-amd64"}, {"scenario", {{"name", "tcp-crr"}, {"duration_s", 3}}}};
    return r;
}

// What a trial's session saw of dst_entry on 4 CPUs of 2 nodes: the baseline
// hands routes between every CPU, the fix keeps them on node 0's CPUs.
Interval trial_interval(Arm arm, int i) {
    Interval iv;
    TargetCounters t;
    t.target = "dst_release";
    t.object_type = "dst_entry";
    t.has_handoffs = true;
    HandoffCounters& h = t.handoffs;
    std::uint64_t k = 100 + 10 * std::uint64_t(i);
    if (arm == Arm::kBaseline) {
        h.cross_cpu = {k, k + 1, k + 2, k + 3};
        h.cross_node = {k, k, k, k};
        h.matrix = {{2 * k + 1, 2 * k}, {2 * k, 2 * k + 5}};
    } else {
        h.cross_cpu = {k / 10, k / 10, 0, 0};
        h.cross_node = {0, 0, 0, 0};
        h.matrix = {{2 * (k / 10), 0}, {0, 0}};
    }
    TargetCounters untracked;  // no handoff tracking: not in the contention
    untracked.target = "tcp_prequeue";
    iv.d.targets.push_back(t);
    iv.d.targets.push_back(untracked);
    return iv;
}

// Through the ABAB loop: every criterion decided, so it stops with a note.
VerdictReport pass_report() {
    std::vector<Criterion> crit = {mixed_criteria()[0], mixed_criteria()[3], mixed_criteria()[5]};
    Validation v("tcp-low-latency", crit, golden_options());
    std::vector<ObjectContention> contention;
    for (int i = 0; !v.finished(); ++i) {
        Trial t = mixed_trial(i);
        EXPECT_EQ(t.arm, v.next_arm());
        add_trial_contention(contention, t.arm, trial_interval(t.arm, i), 1000 + 10 * i);
        v.add_trial(std::move(t));
    }
    VerdictReport r = v.report();
    r.scenario = "dst-refcount";
    r.contention = std::move(contention);
    r.layouts = {dst_layout()};
    return r;
}

VerdictReport not_applicable() {
    const FixDef& f = builtin_fix("tcp-low-latency");
    return not_applicable_report(f.name, f.criteria,
                                 "tcp_prequeue does not exist on this kernel: prequeue was removed in v4.14");
}

VerdictReport error_report() {
    VerdictReport r = pass_report();
    r.context["error"] = "scenario tcp-crr: netns hl-a vanished <during> trial 7 & could not be rebuilt";
    return r;
}

void expect_verdict_golden(const std::string& stem, const VerdictReport& r) {
    expect_golden(stem + ".txt", render([&](std::ostream& os) { render_verdict_text(os, r); }));
    expect_golden(stem + ".json", render([&](std::ostream& os) { render_verdict_json(os, r); }));
    expect_golden(stem + ".xml", render([&](std::ostream& os) { render_junit(os, r); }));
}

// ============================================================ fixes

nlohmann::json fixes_json() {
    GoldenFacts facts;
    nlohmann::json arr = nlohmann::json::array();
    for (auto& f : catalog().fixes())
        arr.push_back({{"fix", to_json(f)}, {"here", to_json(check_applicability(f, facts))}});
    return arr;
}

std::string fixes_show_text() {
    GoldenFacts facts;
    std::string out = section("tcp-low-latency, no kernel");
    out += render([&](std::ostream& os) { render_fix_text(os, builtin_fix("tcp-low-latency"), nullptr); });
    for (auto& f : catalog().fixes()) {
        Applicability a = check_applicability(f, facts);
        out += section(f.name + " on the golden kernel");
        out += render([&](std::ostream& os) { render_fix_text(os, f, &a); });
    }
    return out;
}

}  // namespace

// ============================================================ tests

TEST(Golden, VerdictMixed) { expect_verdict_golden("verdict_mixed", mixed_report()); }

TEST(Golden, VerdictPassAfterAbabLoop) { expect_verdict_golden("verdict_pass", pass_report()); }

TEST(Golden, VerdictNotApplicable) { expect_verdict_golden("verdict_not_applicable", not_applicable()); }

TEST(Golden, VerdictError) { expect_verdict_golden("verdict_error", error_report()); }

TEST(Golden, DiffVerdict) {
    auto r = diff_recordings(builtin_fix("dst-refcnt-false-sharing"), input_json("diff_baseline.json"),
                             input_json("diff_candidate.json"), "diff_baseline.json", "diff_candidate.json");
    ASSERT_TRUE(r) << r.error().message();
    expect_verdict_golden("diff_verdict", *r);
}

TEST(Golden, DiffVerdictSwapped) {
    auto r = diff_recordings(builtin_fix("dst-refcnt-false-sharing"), input_json("diff_candidate.json"),
                             input_json("diff_baseline.json"), "diff_candidate.json", "diff_baseline.json");
    ASSERT_TRUE(r) << r.error().message();
    expect_golden("diff_swapped.txt", render([&](std::ostream& os) { render_verdict_text(os, *r); }));
}

TEST(Golden, FixesList) {
    GoldenFacts facts;
    std::string out = section("no kernel facts");
    out += render([](std::ostream& os) { render_fix_list_text(os, catalog(), nullptr); });
    out += section("golden kernel facts");
    out += render([&](std::ostream& os) { render_fix_list_text(os, catalog(), &facts); });
    expect_golden("fixes_list.txt", out);
}

TEST(Golden, FixesShow) { expect_golden("fixes_show.txt", fixes_show_text()); }

TEST(Golden, FixesJson) { expect_golden("fixes.json", fixes_json().dump(2) + "\n"); }
