// SPDX-License-Identifier: Apache-2.0
// The fix validator on a live kernel: one Session, one scenario network kept up
// across trials, the fix applied through the journal before each fix trial and
// restored after it; and `hotline diff` of two recordings for kernel-pair fixes.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "hotline/fix/fix.hpp"
#include "hotline/base/result.hpp"
#include "hotline/probe/session.hpp"
#include "hotline/workload/live.hpp"
#include "hotline/workload/scenario.hpp"
#include "hotline/validate/validation.hpp"

namespace hotline {

// validate --live: the trials run the user's command (or watch the host's own
// traffic) in this host's namespace, and the fix's changes go to this host.
struct LiveValidation {
    bool on = false;
    LiveOptions traffic;
    // Asked once, before the first trial, with the changes the fix trials make
    // (one line each); false ends the run with nothing changed.  Unset: no question.
    std::function<bool(const std::vector<std::string>&)> confirm;
};

struct ValidatorOptions {
    std::string fix;
    std::string fixes_dir;          // extra *.toml catalog entries
    ScenarioOptions scenario;       // name empty: the fix's default scenario
    // Traffic per trial (--duration); unset: adapted to the noise for scenarios
    // with a running operation count, else TrialLengthOptions::fixed_s.
    std::optional<double> trial_s;
    ValidateOptions validate;       // min_each / max_each; trial_length is set from trial_s
    bool allow_global = false;
    std::vector<int> irqs;          // device IRQs an irq_affinity change pins (--irqs-of)
    std::vector<int> fix_cpus;      // a cpu-set placement's CPUs (--fix-cpus); empty: the workload's first CPU
    LiveValidation live;
    std::string journal_dir = kDefaultJournalDir;
    std::string owner;              // command line, stored in the journal
    SessionOptions collector;       // checked by check_tracing_options; targets empty: all built-in
    // Called after each trial instead of the progress text when set (a live display).
    std::function<void(const TrialProgress&)> on_trial;
};

struct ValidatorOutcome {
    VerdictReport report;
    int exit_code = kExitValidateError;
    std::string error;  // set when exit_code is kExitValidateError
};

// Runs the whole loop (docs/validate-design.md).  Blocks SIGINT/TERM/HUP for the
// calling thread first, so call it before any other thread starts.  Every knob
// it changed is restored before it returns, whatever the outcome.
ValidatorOutcome run_validator(const ValidatorOptions& o, const ProgressFn& progress);

// Compares two recordings (baseline kernel first) for a fix's criteria: one trial
// per recorded interval ("analysis.interval_metrics") plus the layout metrics.
// Errors name what a recording lacks.
Result<VerdictReport> diff_recordings(const FixDef& fix, const nlohmann::json& baseline,
                                      const nlohmann::json& candidate, const std::string& baseline_name,
                                      const std::string& candidate_name);

}  // namespace hotline
