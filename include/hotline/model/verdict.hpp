// SPDX-License-Identifier: Apache-2.0
// A fix's verdict: its criteria, the trials measured for it and the result per
// criterion.  Pure data shared by the validator, the fix catalog and renderers.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hotline/model/contention.hpp"
#include "hotline/model/exit_codes.hpp"
#include "hotline/model/layout.hpp"
#include "hotline/base/stats.hpp"

namespace hotline {

enum class CriterionKind {
    kExpect,     // the fix must move this metric by at least `change`
    kGuardrail,  // the fix must not make this metric worse by more than `change`
    kReport,     // measured and shown beside the verdict, never decides it
};
enum class Better { kLower, kHigher };

struct Criterion {
    CriterionKind kind = CriterionKind::kExpect;
    // Metric names in order of preference: the first one measured in every
    // trial of both arms is used (e.g. exact calls, then a sampled share).
    std::vector<std::string> metrics;
    Better better = Better::kLower;
    double change = 0;   // relative: 0.5 = 50%
    bool exact = false;  // deterministic (e.g. a BTF layout fact): one trial per arm decides
    std::string note;    // why this criterion, shown in reports
    std::string source;  // where it was defined, "builtin:41" or "dir/x.toml:12"

    // The ratio (candidate / baseline) that separates good from bad.
    double threshold() const;
    // "handoff.dst_release.cross_node_per_op down >= 50%"
    std::string describe() const;
    bool required() const { return kind != CriterionKind::kReport; }
};

// What a fix's baseline must show for the fix to have anything to remove: the
// first baseline trials decide, before any fix trial changes the kernel.
struct Precondition {
    std::vector<std::string> metrics;  // alternatives, as in Criterion: the first measured is used
    double at_least = 0;               // the baseline median must reach this
    std::string why;                   // said when it does not: what the fix would have removed
    std::string source;
    // "handoff.dst_release.cross_cpu_per_op >= 0.1 in the baseline"
    std::string describe() const;
};

// Baseline trials the preconditions may take before they decide (the first one
// that reaches every floor decides at once).
inline constexpr int kPreconditionTrials = 3;

enum class PreconditionState { kPending, kHeld, kFailed };
std::string_view to_string(PreconditionState s);  // pending, held, failed

struct PreconditionResult {
    Precondition precondition;
    std::string metric;          // the alternative used; empty when none was measured
    std::vector<double> values;  // the baseline trials it was judged on, in order
    double median = 0;
    PreconditionState state = PreconditionState::kPending;
    // "handoff.dst_release.cross_cpu_per_op: median 0.002 of 3 baseline trials (0, 0.004, 0.002) < 0.1"
    std::string describe() const;
};

std::string_view to_string(CriterionKind k);
std::string_view to_string(Better b);

enum class Verdict { kPass, kFail, kInconclusive, kNotApplicable, kInfo };
std::string_view to_string(Verdict v);  // PASS, FAIL, INCONCLUSIVE, NOT-APPLICABLE, INFO

// CLI exit status for an overall verdict: 0 pass, 1 fail, 2 inconclusive,
// 3 not applicable.  kExitValidateError (4) is for errors that prevent a verdict.
int exit_code(Verdict overall);

enum class Arm { kBaseline, kCandidate };
std::string_view to_string(Arm a);

// One trial's measured values, keyed by metric name (see docs/validate-design.md).
using TrialMetrics = std::map<std::string, double>;

struct Trial {
    Arm arm = Arm::kBaseline;
    TrialMetrics metrics;
    std::string note;  // e.g. the recording file of this trial
    double length_s = 0;  // the traffic time asked for (0: not recorded)
    double wall_s = 0;    // wall time of the whole trial: start, stop, apply, restore (0: not recorded)
    // TrialNoise::within of the workload's running operation count in this trial.
    std::optional<double> within_noise = std::nullopt;
};

// How a non-exact criterion is judged (docs/validate-design.md, "Statistics").
enum class TestMethod {
    // ABAB pairs, t-mixture e-value on fix - threshold * baseline; anytime-valid:
    // the error rate holds however often the validator looks.  `validate`.
    kSequential,
    // Independent arms, ratio of medians with a bootstrap CI; one look at a fixed
    // sample.  `hotline diff` (intervals of two recordings are not paired).
    kBootstrap,
};
std::string_view to_string(TestMethod m);  // "t-mixture-sequential", "bootstrap"

// How long each trial's traffic runs (docs/validate-design.md, "Trial length").
struct TrialLengthOptions {
    // true: the first kPilotPairs pairs run pilot_s long and measure the noise; the
    // trials after them run the Kalibera-Jones length, within [min_s, max_s].
    bool adapt = false;
    double fixed_s = 3;  // every trial when not adapting
    double pilot_s = 1;
    double min_s = 0.5;
    double max_s = 8;
};
// The pilot stage's pairs.  Two give the between-trial noise one degree of freedom.
inline constexpr int kPilotPairs = 2;

// The trial length in force and what it was chosen from.
struct TrialLengthChoice {
    bool adapted = false;  // false: fixed (--duration, or a scenario without a running count)
    bool pilot_done = false;
    double length_s = 0;   // of the trials after the pilot (of every trial when fixed)
    double pilot_s = 0;
    int pilot_pairs = 0;
    TrialNoise noise;      // measured in the pilot
    double optimal_s = 0;  // the Kalibera-Jones length before the bounds
    double min_s = 0, max_s = 0;
    std::string reason;    // one line: why this length
};

struct ValidateOptions {
    int min_each = 5;   // trials per arm (pairs) before any stop
    int max_each = 20;  // per arm; the run stops here whatever the noise
    double confidence = 0.95;  // 1 - the error rate per criterion
    TestMethod method = TestMethod::kSequential;
    double mixture_g = kDefaultMixtureG;  // kSequential: the e-value's mixture scale
    int bootstrap_iterations = 4000;      // kBootstrap
    std::uint64_t seed = 1;
    bool stop_on_fail = true;  // a required criterion confidently failed ends the run early
    TrialLengthOptions trial_length;
};

struct CriterionResult {
    Criterion criterion;
    std::string metric;  // the alternative actually used; empty when none was measured
    Verdict verdict = Verdict::kInconclusive;
    std::string reason;
    std::size_t n_baseline = 0;
    std::size_t n_candidate = 0;
    double median_baseline = 0;
    double median_candidate = 0;
    std::optional<RatioCi> ratio;  // set once both arms have values
    std::optional<MannWhitney> mann_whitney;
    std::optional<double> hl_ratio;
    // kSequential: ABAB pairs judged, the pairs after which the verdict was
    // reached (0: undecided), and the e-value then (or at the last look).
    int pairs = 0;
    int decided_after_pairs = 0;
    std::optional<double> e_value;
    // Adapted trial length: the pilot stage's e-value, a factor of e_value.
    std::optional<double> pilot_e_value;
};

// The ratio's interval as tables and progress lines show it: "[0.91, 0.92]",
// "[inf, inf]" for a rise from 0; "n/a (0 in both arms)" when it is unbounded
// because the metric never moved (cross-node handoffs on one NUMA node), "n/a"
// when it is otherwise unbounded; "-" before both arms have values.
std::string interval_text(const CriterionResult& c);

struct VerdictReport {
    std::string fix;
    std::string scenario;      // or the two recordings' names for a diff
    std::string mode = "trials";  // "trials" (ABAB on one kernel) or "diff" (two recordings)
    Verdict overall = Verdict::kInconclusive;
    std::string reason;           // one line on why the overall verdict is what it is
    std::vector<CriterionResult> criteria;
    std::vector<PreconditionResult> preconditions;  // the fix's, judged on the first baseline trials
    int baseline_trials = 0;
    int candidate_trials = 0;
    ValidateOptions options;
    std::vector<Trial> trials;       // in the order they ran
    std::optional<TrialLengthChoice> trial_length;  // validate: how long the trials ran and why
    std::vector<std::string> notes;  // applied changes, restore outcome, ...
    nlohmann::json context = nlohmann::json::object();  // kernel, scenario parameters, ...
    // validate: what each arm saw of the tracked objects, and their types' layouts.
    std::vector<ObjectContention> contention;
    std::vector<LineLayout> layouts;
};

// Where a validation run stands after a trial, for a live progress display.
struct TrialProgress {
    int trial_no = 0;  // 1-based, in run order
    Arm arm = Arm::kBaseline;
    int baseline_trials = 0, candidate_trials = 0;
    int min_each = 0, max_each = 0;  // the stopping rule's bounds per arm
    std::vector<std::pair<std::string, Verdict>> verdicts;  // required criteria: metric, current verdict
    std::string line;  // the same as one text line (the non-terminal log)
};

inline constexpr const char* kVerdictSchema = "hotline.verdict";
inline constexpr int kVerdictVersion = 1;

}  // namespace hotline
