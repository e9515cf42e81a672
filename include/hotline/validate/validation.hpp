// SPDX-License-Identifier: Apache-2.0
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

#include "hotline/model/layout.hpp"
#include "hotline/model/metrics.hpp"
#include "hotline/model/recording_metrics.hpp"
#include "hotline/base/stats.hpp"
#include "hotline/model/verdict.hpp"

namespace hotline {

// Returns a problem description when the options make no sense, else nullopt.
std::optional<std::string> check_validate_options(const ValidateOptions& o);

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
    // How long the next trial's traffic runs, and the choice behind it (the
    // pilot's length until the pilot pairs are complete).
    double next_trial_length() const;
    TrialLengthChoice trial_length() const;
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
