// SPDX-License-Identifier: Apache-2.0
// Diagnosis: finding rules (TOML data beside the fix catalog) judged on a
// recording's metrics, each finding tied to the catalog fixes that address it,
// their applicability here and the command that would confirm them.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hotline/model/finding.hpp"
#include "hotline/fix/fix.hpp"
#include "hotline/model/plan.hpp"
#include "hotline/model/recording_metrics.hpp"
#include "hotline/base/result.hpp"
#include "hotline/model/verdict.hpp"

namespace hotline {

enum class ConditionOp { kAbove, kBelow, kEquals };

// One condition of a rule: a recording metric compared with a threshold.
struct RuleCondition {
    std::string metric;  // a name of kMetricNames' forms
    ConditionOp op = ConditionOp::kAbove;
    double threshold = 0;
    int line = 0;
};

struct RuleDef {
    std::string name;
    Severity severity = Severity::kMedium;
    std::string summary;
    std::string meaning;
    std::vector<RuleCondition> when;  // all must hold
    std::vector<std::string> fixes;   // catalog fix names
    std::string scenario;  // the scenario a confirming run uses; empty: the fix's first
    std::string source;    // "builtin:12" or "DIR/file.toml:3"
};

class RuleSet {
public:
    // The embedded rules, checked against the catalog.  A failure is a build defect.
    static Result<RuleSet> builtin(const FixCatalog& cat);
    // TOML text holding [[rule]] tables ([[fix]] tables are the catalog's).
    // Errors name SOURCE:LINE; an unknown metric, fix or scenario field is one.
    static Result<RuleSet> parse(std::string_view text, const std::string& source, const FixCatalog& cat);
    // The [[rule]] tables of every *.toml of dir (sorted), as FixCatalog::add_dir reads them.
    Status add_dir(const std::string& dir, const FixCatalog& cat);

    const std::vector<RuleDef>& rules() const { return rules_; }
    const RuleDef* find(std::string_view name) const;

private:
    Status merge(RuleSet other);
    std::vector<RuleDef> rules_;
};

// The built-in rules plus the [[rule]] tables of `--fixes DIR`.
Result<RuleSet> load_rules(const FixCatalog& cat, const std::string& extra_dir = "");
std::string_view builtin_rules_text();

// What the rules are judged on.
struct DiagnoseInput {
    std::string recording = "live";
    std::string kernel;
    TrialMetrics metrics;  // the whole recording's metrics, layout facts and knob values
    Plan plan;             // how each target was observed, or why it was not
    std::vector<std::string> notes;  // other mechanisms refused (the workqueue programs, ...)
    // Applicability of each catalog fix on the recorded kernel, as stored at
    // record time (fix name -> to_json(Applicability)); a fix missing here is unknown.
    nlohmann::json applicability = nlohmann::json::object();
    // The recording's "discover" section (per struct type), null without one:
    // rules on discover.*.<metric> are judged once per type it lists.
    nlohmann::json discover;
    // The command the recording ran (`record -- COMMAND`), empty for a scenario
    // or built-in workload: fixes that run live are confirmed on it.
    std::vector<std::string> command;
};

// The sysctls the rules read (knob.<sysctl> metrics), to be stored with a recording.
std::vector<std::string> rule_knobs(const RuleSet& rules);

// The analysis a recording stores for diagnosis: "metrics" (the whole run's),
// "applicability" of every catalog fix here, the rules' knob values.
nlohmann::json diagnosis_analysis(const FixCatalog& cat, const KernelFacts& facts,
                                  TrialMetrics whole, const std::vector<std::pair<std::string, std::string>>& knobs);

// The values of the sysctls (under roots.proc_sys); a knob that does not exist is left out.
std::vector<std::pair<std::string, std::string>> read_knobs(const std::vector<std::string>& sysctls,
                                                            const KnobRoots& roots);

// The diagnosis analysis of a run on this kernel: the built-in catalog and
// rules, the whole run's metrics (with its operations when known), the layout
// facts and the rules' knobs read now.
nlohmann::json live_diagnosis_analysis(const KernelFacts& facts, const Interval& whole, const ScenarioNumbers& ops,
                                       const std::vector<LineLayout>& layouts, const KnobRoots& roots = {});

// Reads a recording file's document back into the rules' input.
Result<DiagnoseInput> input_from_recording(const nlohmann::json& doc, const std::string& name);

// Judges every rule.  Findings are ranked: severity, then distance past the thresholds.
Diagnosis diagnose(const RuleSet& rules, const FixCatalog& cat, const DiagnoseInput& in);

// Diagnosis of a running session (`hotline serve`): the catalog, the rules and
// the fixes' applicability are fixed at start; each window's metrics are judged.
class LiveDiagnosis {
public:
    static Result<LiveDiagnosis> open(const KernelFacts& facts, Plan plan, std::vector<LineLayout> layouts,
                                      std::string kernel, const KnobRoots& roots = {});
    Diagnosis judge(const Interval& window) const;

private:
    LiveDiagnosis(FixCatalog cat, RuleSet rules) : cat_(std::move(cat)), rules_(std::move(rules)) {}
    FixCatalog cat_;
    RuleSet rules_;
    DiagnoseInput base_;  // plan, kernel, applicability, layout and knob metrics
};

// The command that confirms a fix: `hotline validate` for runtime fixes, the
// kernel-pair procedure otherwise.  The one place these command lines are built.
// The command that confirms the fix: `validate --live ... -- COMMAND` for a
// fix that runs live when the recording was of a command (or a fix with no
// scenario: then --observe without one), the scenario form otherwise, `ab` for
// kernel pairs.
void set_confirmation(FixAdvice& a, const FixDef& fix, const RuleDef& rule, const std::vector<std::string>& command);

}  // namespace hotline
