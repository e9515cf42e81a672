// SPDX-License-Identifier: Apache-2.0
// Between recordings and the rules: what a recording stores for diagnosis, how
// it is read back, and the command line that confirms a prescribed fix.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <string_view>

#include "hotline/diagnose/diagnose.hpp"
#include "hotline/report/fix_output.hpp"
#include "hotline/model/recording_metrics.hpp"
#include "hotline/base/util.hpp"

namespace hotline {

nlohmann::json diagnosis_analysis(const FixCatalog& cat, const KernelFacts& facts,
                                  TrialMetrics whole, const std::vector<std::pair<std::string, std::string>>& knobs) {
    for (auto& [name, value] : knobs) {
        try {
            whole["knob." + name] = std::stod(value);
        } catch (const std::exception&) {
            // Not a number (a list-valued sysctl): no rule compares it.
        }
    }
    nlohmann::json applicability = nlohmann::json::object();
    for (auto& f : cat.fixes()) applicability[f.name] = to_json(check_applicability(f, facts));
    return {{"metrics", whole}, {"applicability", applicability}};
}

std::vector<std::pair<std::string, std::string>> read_knobs(const std::vector<std::string>& sysctls,
                                                            const KnobRoots& roots) {
    std::vector<std::pair<std::string, std::string>> out;
    for (auto& name : sysctls) {
        auto rel = knob_relpath(KnobKind::kSysctl, name);
        if (!rel) continue;
        if (auto text = read_file(roots.proc_sys + "/" + *rel)) out.emplace_back(name, std::string(trim(*text)));
    }
    return out;
}

nlohmann::json live_diagnosis_analysis(const KernelFacts& facts, const Interval& whole, const ScenarioNumbers& ops,
                                       const std::vector<LineLayout>& layouts, const KnobRoots& roots) {
    auto cat = FixCatalog::builtin();
    if (!cat) return {{"error", cat.error().message()}};
    auto rules = RuleSet::builtin(*cat);
    if (!rules) return {{"error", rules.error().message()}};
    TrialMetrics m = trial_metrics(whole, ops);
    for (auto& l : layouts) add_layout_metrics(m, l);
    return diagnosis_analysis(*cat, facts, std::move(m), read_knobs(rule_knobs(*rules), roots));
}

namespace {

TargetPlan target_plan_from_json(const nlohmann::json& j) {
    TargetPlan t;
    t.target = j.value("target", "");
    t.mechanism = parse_mechanism(j.value("mechanism", "")).value_or(Mechanism::kUnavailable);
    std::string fid = j.value("fidelity", "none");
    for (Fidelity f : {Fidelity::kExact, Fidelity::kPartial, Fidelity::kSampled, Fidelity::kNone})
        if (to_string(f) == fid) t.fidelity = f;
    t.attach = j.value("attach", "");
    t.unavailable_reason = j.value("reason", "");
    for (auto& r : j.value("rejected", nlohmann::json::array()))
        t.rejected.push_back({parse_mechanism(r.value("mechanism", "")).value_or(Mechanism::kUnavailable),
                              r.value("reason", "")});
    return t;
}

}  // namespace

namespace {

bool is_bool_or_absent(const nlohmann::json& o, const char* key) { return !o.contains(key) || o[key].is_boolean(); }

// What fix_status reads of one fix's stored applicability, checked before it
// is read: a recording is outside input, and a wrong type must be an error.
bool applicability_entry_ok(const nlohmann::json& a) {
    if (!a.is_object() || !is_bool_or_absent(a, "applicable")) return false;
    if (a.contains("carries_fix") && !a["carries_fix"].is_boolean() && !a["carries_fix"].is_null()) return false;
    if (a.contains("checks")) {
        if (!a["checks"].is_array()) return false;
        for (auto& c : a["checks"])
            if (!c.is_object() || !is_bool_or_absent(c, "held")) return false;
    }
    if (a.contains("reasons")) {
        if (!a["reasons"].is_array()) return false;
        for (auto& r : a["reasons"])
            if (!r.is_string()) return false;
    }
    return true;
}

// discover.<type>.handoffs_per_s, .cross_node_per_s and .handoff_share (of the
// type's touches) from a recording's discover section.
void add_discover_metrics(TrialMetrics& m, const nlohmann::json& discover) {
    for (const auto& t : discover.value("types", nlohmann::json::array())) {
        const std::string prefix = "discover." + t.value("type", std::string("?")) + ".";
        const double touches = t.value("touches_per_s", 0.0), handoffs = t.value("handoffs_per_s", 0.0);
        m[prefix + "handoffs_per_s"] = handoffs;
        m[prefix + "cross_node_per_s"] = t.value("cross_node_per_s", 0.0);
        m[prefix + "handoff_share"] = touches > 0 ? handoffs / touches : 0.0;
    }
}

Result<DiagnoseInput> read_diagnosis(const nlohmann::json& doc, const nlohmann::json& an, const std::string& name) {
    DiagnoseInput in;
    in.recording = name;
    if (doc.contains("kernel")) in.kernel = doc["kernel"].value("release", "");
    in.metrics = an["diagnosis"].value("metrics", TrialMetrics{});
    in.applicability = an["diagnosis"].value("applicability", nlohmann::json::object());
    if (!in.applicability.is_object())
        return make_error(name + ": \"analysis.diagnosis.applicability\" is not an object", EINVAL);
    for (auto& [fix, a] : in.applicability.items())
        if (!applicability_entry_ok(a))
            return make_error(name + ": the applicability stored for fix " + fix + " has a field of the wrong type",
                              EINVAL, "record it again with `hotline record -o FILE`");
    for (auto& t : doc.value("plan", nlohmann::json::array())) in.plan.targets.push_back(target_plan_from_json(t));
    if (doc.contains("discover") && doc["discover"].is_object()) {
        in.discover = doc["discover"];
        add_discover_metrics(in.metrics, in.discover);
    }
    if (doc.contains("command") && doc["command"].is_object())
        for (auto& arg : doc["command"].value("argv", nlohmann::json::array()))
            if (arg.is_string()) in.command.push_back(arg.get<std::string>());
    std::string workq = an.value("workqueue_programs", "");
    if (!workq.empty() && workq.rfind("attached", 0) != 0) in.notes.push_back("queue_work_on attribution: " + workq);
    return in;
}

}  // namespace

Result<DiagnoseInput> input_from_recording(const nlohmann::json& doc, const std::string& name) {
    const auto schema = doc.is_object() && doc.contains("schema") ? doc["schema"] : nlohmann::json();
    if (!schema.is_string() || schema.get<std::string>() != "hotline.recording")
        return make_error(name + ": not a hotline recording", EINVAL, "record one with `hotline record -o FILE`");
    const auto& an = doc.contains("analysis") ? doc["analysis"] : nlohmann::json();
    if (!an.is_object() || !an.contains("diagnosis"))
        return make_error(name + ": the recording has no diagnosis analysis (\"analysis.diagnosis\")", EINVAL,
                          "record it again with this version of `hotline record -o FILE`");
    try {
        return read_diagnosis(doc, an, name);
    } catch (const nlohmann::json::exception& e) {
        return make_error(name + ": a field of the recording has the wrong type (" + e.what() + ")", EINVAL,
                          "record it again with `hotline record -o FILE`");
    }
}

namespace {

// Every watched function the fix's criteria measure: what the confirming run must watch.
std::vector<std::string> criteria_targets(const FixDef& fix) {
    std::vector<std::string> out;
    for (auto& c : fix.criteria)
        for (auto& metric : c.metrics)
            if (auto m = match_metric_name(metric); m && m->part == MetricPart::kTarget &&
                                                    std::find(out.begin(), out.end(), m->subject) == out.end())
                out.push_back(m->subject);
    return out;
}

// A fix that can run on the user's own workload: not one that gives each
// CPU's flows their own addresses inside hotline's scenario.
bool runs_live(const FixDef& fix) {
    return std::none_of(fix.changes.begin(), fix.changes.end(), [](const Change& c) {
        return c.kind == ChangeKind::kCpuPlacement && c.value == "cpu-local";
    });
}

// Live, a fix changes the host when any required change is global or per
// namespace (the host's own namespace then).
bool changes_host(const FixDef& fix) {
    return std::any_of(fix.changes.begin(), fix.changes.end(), [](const Change& c) {
        return !c.optional && c.kind != ChangeKind::kCpuPlacement;
    });
}

std::string confirm_scenario(const FixDef& fix, const RuleDef& rule) {
    if (!rule.scenario.empty() &&
        std::find(fix.scenarios.begin(), fix.scenarios.end(), rule.scenario) != fix.scenarios.end())
        return rule.scenario;
    return fix.scenarios.empty() ? "" : fix.scenarios.front();
}

}  // namespace

void set_confirmation(FixAdvice& a, const FixDef& fix, const RuleDef& rule, const std::vector<std::string>& command) {
    const std::string scenario = confirm_scenario(fix, rule);
    if (fix.mode == FixMode::kRuntime) {
        auto targets = criteria_targets(fix);
        const std::string watch = targets.empty() ? "" : fmt::format(" --targets {}", fmt::join(targets, ","));
        const bool live = runs_live(fix) && (!command.empty() || scenario.empty());
        if (!live) {
            a.confirm = fmt::format("hotline validate --fix {}{}{}", fix.name,
                                    scenario.empty() ? "" : " --scenario " + scenario, watch);
            return;
        }
        a.confirm = fmt::format("hotline validate --fix {} --live{}{} {}", fix.name,
                                changes_host(fix) ? " --allow-global" : "", watch,
                                command.empty() ? "--observe 10s" : "-- " + shell_words(command));
        return;
    }
    // `ab` records the fix's own scenario in a guest of each kernel the catalog names.
    a.confirm = fmt::format("hotline ab --fix {}", fix.name);
}

}  // namespace hotline

namespace hotline {

Result<LiveDiagnosis> LiveDiagnosis::open(const KernelFacts& facts, Plan plan, std::vector<LineLayout> layouts,
                                          std::string kernel, const KnobRoots& roots) {
    auto cat = FixCatalog::builtin();
    if (!cat) return cat.error();
    auto rules = RuleSet::builtin(*cat);
    if (!rules) return rules.error();
    TrialMetrics fixed;
    for (auto& l : layouts) add_layout_metrics(fixed, l);
    nlohmann::json an = diagnosis_analysis(*cat, facts, std::move(fixed), read_knobs(rule_knobs(*rules), roots));
    LiveDiagnosis d(std::move(*cat), std::move(*rules));
    d.base_.kernel = std::move(kernel);
    d.base_.plan = std::move(plan);
    d.base_.metrics = an["metrics"].get<TrialMetrics>();
    d.base_.applicability = an["applicability"];
    return d;
}

Diagnosis LiveDiagnosis::judge(const Interval& window) const {
    DiagnoseInput in = base_;
    for (auto& [k, v] : trial_metrics(window, {})) in.metrics[k] = v;
    return diagnose(rules_, cat_, in);
}

}  // namespace hotline
