// Fix validation without kernel access: criteria from the fix catalog, per-trial
// metric values from the caller, verdicts with confidence intervals, the adaptive
// ABAB trial rule, and text / JSON / JUnit renderers.  docs/validate-design.md
// shows how the validator loop drives it.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "hotline/layout.hpp"
#include "hotline/metrics.hpp"
#include "hotline/stats.hpp"

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

std::string_view to_string(CriterionKind k);
std::string_view to_string(Better b);

enum class Verdict { kPass, kFail, kInconclusive, kNotApplicable, kInfo };
std::string_view to_string(Verdict v);  // PASS, FAIL, INCONCLUSIVE, NOT-APPLICABLE, INFO

// CLI exit status for an overall verdict: 0 pass, 1 fail, 2 inconclusive,
// 3 not applicable.  kExitValidateError (4) is for errors that prevent a verdict.
int exit_code(Verdict overall);
inline constexpr int kExitValidateError = 4;

enum class Arm { kBaseline, kCandidate };
std::string_view to_string(Arm a);

// One trial's measured values, keyed by metric name (see docs/validate-design.md).
using TrialMetrics = std::map<std::string, double>;

struct Trial {
    Arm arm = Arm::kBaseline;
    TrialMetrics metrics;
    std::string note;  // e.g. the recording file of this trial
};

// What a scenario run reports for one trial, in the units the metric names use.
struct ScenarioNumbers {
    double ops = 0;          // operations: messages (dst-refcount), connections (tcp-crr), requests (irq-lat)
    double seconds = 0;      // wall time of the measured part
    double cpu_seconds = 0;  // CPU time of the scenario's threads (all sides)
    std::map<std::string, double> extra;  // e.g. latency_p50_us; becomes scenario.<key>
};

// Builds one trial's metrics from the collector's interval and the scenario's
// numbers: scenario.ops_per_s, scenario.cpu_us_per_op, scenario.<extra>; per
// target calls.<t>.per_op (exact mechanisms), proxy.<t>.per_op (partial proxies),
// share.<t> (sampling), latency.<t>.mean_ns (when timed),
// handoff.<t>.cross_node_per_op and .cross_cpu_per_op (any other CPU, scaled
// by the object sampling rate); work.<func>.queued_per_irq from the workqueue
// attribution.  Names: docs/validate-design.md.
TrialMetrics trial_metrics(const Interval& iv, const ScenarioNumbers& s);

// Read-mostly fields on the refcount's cache line, the fact the 6.4 dst fix
// changed: layout.<type>.read_fields_on_refcnt_line (dst_entry: obsolete,
// lwtstate, rt_genid; __use and lastuse are written with the refcount, so they
// are true sharing and not counted) and layout.<type>.fields_on_hot_line (all
// watched fields on the line).
void add_layout_metrics(TrialMetrics& m, const LineLayout& l);

struct ValidateOptions {
    int min_each = 5;   // trials per arm before any stop
    int max_each = 20;  // per arm; the run stops here whatever the noise
    double confidence = 0.95;
    int bootstrap_iterations = 4000;
    std::uint64_t seed = 1;
    bool stop_on_fail = true;  // a required criterion confidently failed ends the run early
};

// Returns a problem description when the options make no sense, else nullopt.
std::optional<std::string> check_options(const ValidateOptions& o);

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
};

struct VerdictReport {
    std::string fix;
    std::string scenario;      // or the two recordings' names for a diff
    std::string mode = "trials";  // "trials" (ABAB on one kernel) or "diff" (two recordings)
    Verdict overall = Verdict::kInconclusive;
    std::string reason;           // one line on why the overall verdict is what it is
    std::vector<CriterionResult> criteria;
    int baseline_trials = 0;
    int candidate_trials = 0;
    ValidateOptions options;
    std::vector<Trial> trials;       // in the order they ran
    std::vector<std::string> notes;  // applied changes, restore outcome, ...
    nlohmann::json context = nlohmann::json::object();  // kernel, scenario parameters, ...
};

// Judges every criterion on the trials given (no adaptivity).  This is also what
// `hotline diff` uses, with one "trial" per interval or recording.
VerdictReport evaluate(const std::string& fix, const std::vector<Criterion>& criteria,
                       const std::vector<Trial>& trials, const ValidateOptions& opts);

CriterionResult evaluate_criterion(const Criterion& c, const std::vector<Trial>& trials,
                                   const ValidateOptions& opts, std::uint64_t seed);

// A verdict without trials: the fix does not apply here (or could not be applied).
VerdictReport not_applicable_report(const std::string& fix, const std::vector<Criterion>& criteria,
                                    const std::string& reason);

// The validator loop's state: which arm runs next (ABAB...), when to stop.
//
//   Validation v(fix.name, fix.criteria(), opts);
//   while (!v.finished()) {
//       Arm arm = v.next_arm();
//       ... apply or restore the fix for `arm`, run the scenario, collect ...
//       v.add_trial({arm, metrics});
//       progress(v.progress_line());
//   }
//   VerdictReport r = v.report();
class Validation {
public:
    Validation(std::string fix, std::vector<Criterion> criteria, ValidateOptions opts);

    Arm next_arm() const;
    void add_trial(Trial t);
    // True when both arms have min_each trials in complete pairs and every required
    // criterion is decided (or one failed and stop_on_fail), or max_each is reached.
    bool finished() const;
    std::string stop_reason() const;  // why finished() is true, empty otherwise
    VerdictReport report() const;
    std::string progress_line() const;
    int count(Arm a) const;
    const std::vector<Trial>& trials() const { return trials_; }

private:
    std::string fix_;
    std::vector<Criterion> criteria_;
    ValidateOptions opts_;
    std::vector<Trial> trials_;
};

// Renderers (to injected streams, so they are tested without root).
void render_verdict_text(std::ostream& os, const VerdictReport& r);
nlohmann::json verdict_to_json(const VerdictReport& r);
void render_verdict_json(std::ostream& os, const VerdictReport& r);
void render_junit(std::ostream& os, const VerdictReport& r);

inline constexpr const char* kVerdictSchema = "hotline.verdict";
inline constexpr int kVerdictVersion = 1;

}  // namespace hotline
