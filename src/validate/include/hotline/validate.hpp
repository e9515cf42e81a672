// Fix validation without kernel access: criteria from the fix catalog, per-trial
// metric values from the caller, verdicts with confidence intervals and the
// adaptive ABAB trial rule.  The verdict's types are in verdict.hpp, its
// renderers in verdict_output.hpp.  docs/validate-design.md
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
#include "hotline/verdict.hpp"

namespace hotline {

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

// Returns a problem description when the options make no sense, else nullopt.
std::optional<std::string> check_options(const ValidateOptions& o);

// Judges every criterion on the trials given (no adaptivity).  This is also what
// `hotline diff` uses, with one "trial" per interval or recording.
VerdictReport evaluate(const std::string& fix, const std::vector<Criterion>& criteria,
                       const std::vector<Trial>& trials, const ValidateOptions& opts);

CriterionResult evaluate_criterion(const Criterion& c, const std::vector<Trial>& trials,
                                   const ValidateOptions& opts, std::uint64_t seed);

// A verdict without trials: the fix does not apply here (or could not be applied).
VerdictReport not_applicable_report(const std::string& fix, const std::vector<Criterion>& criteria,
                                    const std::string& reason);

// Judges a fix's preconditions on the first kPreconditionTrials baseline trials:
// held as soon as the median of the first n reaches the floor, failed when none
// of the first kPreconditionTrials did (or the metric was never measured),
// pending before that.
PreconditionResult judge_precondition(const Precondition& p, const std::vector<Trial>& trials);

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
    Validation(std::string fix, std::vector<Criterion> criteria, ValidateOptions opts,
               std::vector<Precondition> preconditions = {});

    Arm next_arm() const;
    void add_trial(Trial t);
    // True when both arms have min_each trials in complete pairs and every required
    // criterion is decided (or one failed and stop_on_fail), or max_each is reached.
    // A failed precondition finishes the run at once (the verdict is NOT-APPLICABLE);
    // while one is pending, the next trial is a baseline trial.
    bool finished() const;
    std::string stop_reason() const;  // why finished() is true, empty otherwise
    VerdictReport report() const;
    std::string progress_line() const;
    // After trial `trial_no` (of `arm`): counts, bounds, the required criteria's
    // current verdicts, and the log line "trial N (arm): progress_line()".
    TrialProgress progress(int trial_no, Arm arm) const;
    int count(Arm a) const;
    const std::vector<Trial>& trials() const { return trials_; }

private:
    std::string fix_;
    std::vector<Criterion> criteria_;
    ValidateOptions opts_;
    std::vector<Precondition> preconditions_;
    std::vector<Trial> trials_;

    std::vector<PreconditionResult> judge_preconditions() const;
    bool preconditions_pending() const;
    const PreconditionResult* failed_precondition(const std::vector<PreconditionResult>& r) const;
};

}  // namespace hotline
