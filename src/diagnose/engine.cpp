// Judging the rules on a recording's metrics: evidence with its mechanism and
// distance past the threshold, the fixes' applicability on the recorded kernel,
// and, when nothing is found, the numbers that say so and what was not seen.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "hotline/diagnose/diagnose.hpp"
#include "hotline/model/recording_metrics.hpp"

namespace hotline {

namespace {

std::string_view op_word(ConditionOp op) {
    switch (op) {
    case ConditionOp::kAbove: return "above";
    case ConditionOp::kBelow: return "below";
    case ConditionOp::kEquals: return "equals";
    }
    return "?";
}

bool holds(const RuleCondition& c, double v) {
    switch (c.op) {
    case ConditionOp::kAbove: return v > c.threshold;
    case ConditionOp::kBelow: return v < c.threshold;
    case ConditionOp::kEquals: return std::fabs(v - c.threshold) < 1e-9;
    }
    return false;
}

// How many times past the threshold; 0 when a ratio says nothing (equals, a zero side).
double past(const RuleCondition& c, double v) {
    if (c.op == ConditionOp::kAbove && c.threshold > 0) return v / c.threshold;
    if (c.op == ConditionOp::kBelow && v > 0 && c.threshold > 0) return c.threshold / v;
    return 0;
}

// How a metric was measured, from the form of its name and the recording's plan.
std::pair<std::string, std::string> measured_by(const std::string& metric, const DiagnoseInput& in) {
    auto m = match_metric_name(metric);
    if (!m) return {"?", "?"};
    switch (m->part) {
    case MetricPart::kTarget:
        if (const TargetPlan* t = in.plan.find(m->subject))
            return {std::string(to_string(t->mechanism)), std::string(to_string(t->fidelity))};
        return {"?", "?"};
    case MetricPart::kSysctl: return {"sysctl", "exact"};
    case MetricPart::kType: return {"BTF", "exact"};
    default: break;
    }
    if (metric.rfind("work.", 0) == 0) return {"workqueue tracepoints", "exact"};
    if (metric.rfind("layout.", 0) == 0) return {"BTF", "exact"};
    return {"scenario", "exact"};
}

// The metric's value, or nullopt when it was not measured.  A work function
// never queued has no entry while the attribution ran: that is a measured 0.
std::optional<double> value_of(const std::string& metric, const DiagnoseInput& in) {
    if (auto it = in.metrics.find(metric); it != in.metrics.end()) return it->second;
    auto m = match_metric_name(metric);
    if (m && m->part == MetricPart::kFunc && in.metrics.count("work.queued_per_s")) return 0.0;
    return std::nullopt;
}

// Why a metric is missing: the target's plan, the workqueue programs, the knob.
std::string why_unmeasured(const std::string& metric, const DiagnoseInput& in) {
    auto m = match_metric_name(metric);
    std::string why = metric + " was not measured";
    if (m && m->part == MetricPart::kTarget) {
        const TargetPlan* t = in.plan.find(m->subject);
        if (!t) return why + ": " + m->subject + " was not watched in this recording";
        if (!t->observable()) return why + ": " + m->subject + " unavailable: " + t->unavailable_reason;
        auto tracked = in.metrics.find("handoff." + m->subject + ".tracked_per_s");
        if (tracked != in.metrics.end() && tracked->second == 0 && metric.rfind("handoff.", 0) == 0)
            return fmt::format("{}: no hit of {} went through handoff tracking ({}, {}): no object moved to judge", why,
                               m->subject, to_string(t->mechanism), to_string(t->fidelity));
        return fmt::format("{}: {} was observed by {} ({}), which does not give it", why, m->subject,
                           to_string(t->mechanism), to_string(t->fidelity));
    }
    if (m && m->part == MetricPart::kSysctl) return why + ": the recording has no value for sysctl " + m->subject;
    if (metric.rfind("work.", 0) == 0) return why + ": the recording has no workqueue attribution";
    if (metric.rfind("layout.", 0) == 0) return why + ": the recording has no BTF layout of the struct";
    return why;
}

FixStatus fix_status(const FixDef& fix, const nlohmann::json& a, std::string& why) {
    if (!a.is_object()) {
        why = "the recording stores no applicability for this fix";
        return FixStatus::kUnknown;
    }
    bool checks_hold = true;
    for (auto& c : a.value("checks", nlohmann::json::array())) checks_hold = checks_hold && c.value("held", false);
    std::vector<std::string> reasons = a.value("reasons", std::vector<std::string>{});
    if (fix.mode == FixMode::kRuntime) {
        why = a.value("applicable", false) ? "its checks hold on this kernel" : fmt::format("{}", fmt::join(reasons, "; "));
        return a.value("applicable", false) ? FixStatus::kApplies : FixStatus::kNotApplicable;
    }
    if (!checks_hold) {
        why = fmt::format("{}", fmt::join(reasons, "; "));
        return FixStatus::kNotApplicable;
    }
    const auto& carries = a.contains("carries_fix") ? a["carries_fix"] : nlohmann::json();
    if (!carries.is_boolean()) {
        why = "nothing in this kernel's BTF tells whether it carries the fix";
        return FixStatus::kUnknown;
    }
    why = carries.get<bool>() ? "this kernel already carries the fix" : "this kernel lacks the fix: a kernel with it is the remedy";
    return carries.get<bool>() ? FixStatus::kKernelFixPresent : FixStatus::kKernelFixAbsent;
}

std::vector<FixAdvice> advise(const RuleDef& r, const FixCatalog& cat, const DiagnoseInput& in) {
    std::vector<FixAdvice> out;
    for (auto& name : r.fixes) {
        const FixDef* f = cat.find(name);
        if (!f) continue;
        FixAdvice a;
        a.fix = f->name;
        a.mode = std::string(to_string(f->mode));
        a.summary = f->summary;
        a.status = fix_status(*f, in.applicability.contains(name) ? in.applicability[name] : nlohmann::json(), a.why);
        set_confirmation(a, *f, r);
        out.push_back(std::move(a));
    }
    return out;
}

struct Judged {
    bool all_measured = true;
    bool all_hold = true;
    std::vector<Evidence> evidence;
    std::string first_unmeasured, first_failed;
};

Judged judge(const RuleDef& r, const DiagnoseInput& in) {
    Judged j;
    for (auto& c : r.when) {
        auto v = value_of(c.metric, in);
        if (!v) {
            if (j.all_measured) j.first_unmeasured = why_unmeasured(c.metric, in);
            j.all_measured = false;
            continue;
        }
        auto [mech, fid] = measured_by(c.metric, in);
        j.evidence.push_back({c.metric, *v, std::string(op_word(c.op)), c.threshold, past(c, *v), mech, fid});
        if (!holds(c, *v) && j.all_hold) {
            j.first_failed = fmt::format("{} = {:.4g} ({}, {}): rule {} needs {} {:g}", c.metric, *v, mech, fid,
                                         r.name, op_word(c.op), c.threshold);
            j.all_hold = false;
        }
    }
    return j;
}

double score(const Finding& f) {
    double weakest = 0;
    bool any = false;
    for (auto& e : f.evidence)
        if (e.past > 0) weakest = any ? std::min(weakest, e.past) : e.past, any = true;
    return double(int(f.severity)) * 1000.0 + std::min(weakest, 999.0);
}

std::vector<std::string> refused_mechanisms(const DiagnoseInput& in) {
    std::vector<std::string> out;
    for (auto& t : in.plan.targets) {
        for (auto& r : t.rejected) out.push_back(fmt::format("{}: {} refused: {}", t.target, to_string(r.mechanism), r.reason));
        if (!t.observable()) out.push_back(fmt::format("{}: unavailable: {}", t.target, t.unavailable_reason));
    }
    for (auto& n : in.notes) out.push_back(n);
    return out;
}

// With nothing found, the rates that say how busy the recording was.
void add_activity(std::vector<std::string>& quiet, const TrialMetrics& m) {
    for (auto& [name, v] : m)
        if (name.ends_with("per_s") || name.ends_with("_per_op"))
            quiet.push_back(fmt::format("measured: {} = {:.4g}", name, v));
}

}  // namespace

Diagnosis diagnose(const RuleSet& rules, const FixCatalog& cat, const DiagnoseInput& in) {
    Diagnosis d;
    d.recording = in.recording;
    d.kernel = in.kernel;
    d.refused = refused_mechanisms(in);
    for (auto& r : rules.rules()) {
        ++d.rules;
        Judged j = judge(r, in);
        // Every condition must be measured and hold: a rule never fires on a part of its evidence.
        if (j.all_measured && j.all_hold) {
            Finding f{r.name, r.severity, r.summary, r.meaning, std::move(j.evidence), advise(r, cat, in), 0, r.source};
            f.score = score(f);
            d.findings.push_back(std::move(f));
        } else if (!j.all_hold) {
            d.quiet.push_back(j.first_failed);
        } else {
            d.unjudged.push_back({r.name, j.first_unmeasured});
        }
    }
    if (d.findings.empty()) add_activity(d.quiet, in.metrics);
    std::stable_sort(d.findings.begin(), d.findings.end(),
                     [](const Finding& a, const Finding& b) { return a.score > b.score; });
    return d;
}

}  // namespace hotline
