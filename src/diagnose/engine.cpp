// SPDX-License-Identifier: Apache-2.0
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
    if (metric.starts_with("discover.")) return {"discover", "exact"};
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
    if (metric.rfind("discover.", 0) == 0)
        return why + ": no discover section names the type (`hotline discover -o FILE` records one)";
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
        set_confirmation(a, *f, r, in.command);
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

// Judges one rule into `d`: a finding, a quiet line or an unjudged one; the
// finding's index in d.findings, or -1.
int judge_into(const RuleDef& r, const FixCatalog& cat, const DiagnoseInput& in, Diagnosis& d, bool quiet_line) {
    Judged j = judge(r, in);
    // Every condition must be measured and hold: a rule never fires on a part of its evidence.
    if (j.all_measured && j.all_hold) {
        Finding f{r.name, r.severity, r.summary, r.meaning, std::move(j.evidence), advise(r, cat, in), 0, r.source};
        f.score = score(f);
        d.findings.push_back(std::move(f));
        return int(d.findings.size()) - 1;
    }
    if (!j.all_hold) {
        if (quiet_line) d.quiet.push_back(j.first_failed);
    } else {
        d.unjudged.push_back({r.name, j.first_unmeasured});
    }
    return -1;
}

// ---------------------------------------------------------- rules per type
// A rule on discover.*.<metric> is judged once per struct type the recording's
// discover section lists (the types no rule names by themselves).

constexpr std::string_view kAnyType = "discover.*.";

bool per_type(const RuleDef& r) {
    for (const auto& c : r.when)
        if (c.metric.starts_with(kAnyType)) return true;
    return false;
}

// The type of a discover.<type>.<metric> name, or "".
std::string discover_type(const std::string& metric) {
    if (!metric.starts_with("discover.")) return {};
    auto dot = metric.find('.', 9);
    return dot == std::string::npos ? std::string() : metric.substr(9, dot - 9);
}

// The types the metrics name, most handoffs first.
std::vector<std::string> discovered_types(const DiagnoseInput& in) {
    std::vector<std::pair<double, std::string>> by;
    for (const auto& [name, v] : in.metrics)
        if (name.ends_with(".handoffs_per_s") && !discover_type(name).empty()) by.push_back({v, discover_type(name)});
    std::stable_sort(by.begin(), by.end(), [](auto& a, auto& b) { return a.first > b.first; });
    std::vector<std::string> out;
    for (auto& [v, t] : by) out.push_back(t);
    return out;
}

std::string replace_all(std::string s, std::string_view from, const std::string& to) {
    for (auto p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
    return s;
}

RuleDef for_type(const RuleDef& r, const std::string& type) {
    RuleDef t = r;
    for (auto& c : t.when)
        if (c.metric.starts_with(kAnyType)) c.metric = "discover." + type + "." + c.metric.substr(kAnyType.size());
    t.summary = replace_all(t.summary, "{type}", type);
    t.meaning = replace_all(t.meaning, "{type}", type);
    return t;
}

// Who touched the type and the lines holding what every user writes, from the
// recording's discover section.
std::string discovered_detail(const DiagnoseInput& in, const std::string& type) {
    if (!in.discover.is_object()) return {};
    for (const auto& t : in.discover.value("types", nlohmann::json::array())) {
        if (t.value("type", "") != type) continue;
        std::vector<std::string> by, lines;
        for (const auto& a : t.value("attach_points", nlohmann::json::array()))
            if (by.size() < 3) by.push_back(a.value("attach", ""));
        const auto layout = t.value("layout", nlohmann::json::object());
        for (const auto& l : layout.value("lines", nlohmann::json::array()))
            if (!l.value("written_by_every_user", nlohmann::json::array()).empty() && lines.size() < 4)
                lines.push_back(fmt::format("line {}: {}", l.value("line", 0),
                                            fmt::join(l["written_by_every_user"].get<std::vector<std::string>>(), ", ")));
        std::string out = " No catalog fix names " + type + ".";
        if (!lines.empty()) out += fmt::format(" Lines holding refcounts, atomics or locks: {}.", fmt::join(lines, "; "));
        if (!by.empty()) out += fmt::format(" Touched by: {}.", fmt::join(by, ", "));
        return out;
    }
    return {};
}

// The types some rule names by itself (discover.dst_entry.cross_node_per_s):
// their own rules judge them, with the catalog fixes for them.
std::vector<std::string> types_with_own_rule(const RuleSet& rules) {
    std::vector<std::string> out;
    for (const auto& r : rules.rules())
        for (const auto& c : r.when)
            if (std::string t = discover_type(c.metric); !t.empty() && t != "*") out.push_back(t);
    return out;
}

// A rule on discover metrics only, and a recording without them (not made by
// `hotline discover`): nothing to judge, nothing to say.
bool nothing_discovered(const RuleDef& r, const DiagnoseInput& in) {
    for (const auto& c : r.when)
        if (!c.metric.starts_with("discover.")) return false;
    return std::none_of(in.metrics.begin(), in.metrics.end(), [](auto& m) { return m.first.starts_with("discover."); });
}

void judge_per_type(const RuleDef& r, const RuleSet& rules, const FixCatalog& cat, const DiagnoseInput& in,
                    Diagnosis& d) {
    const auto own = types_with_own_rule(rules);
    bool quiet_said = false;
    for (const std::string& type : discovered_types(in)) {
        if (std::find(own.begin(), own.end(), type) != own.end()) continue;
        ++d.rules;
        int i = judge_into(for_type(r, type), cat, in, d, !quiet_said);
        quiet_said = true;  // one line for the busiest type is enough
        if (i >= 0) d.findings[std::size_t(i)].meaning += discovered_detail(in, type);
    }
}

}  // namespace

Diagnosis diagnose(const RuleSet& rules, const FixCatalog& cat, const DiagnoseInput& in) {
    Diagnosis d;
    d.recording = in.recording;
    d.kernel = in.kernel;
    d.refused = refused_mechanisms(in);
    for (auto& r : rules.rules()) {
        if (nothing_discovered(r, in)) continue;
        if (per_type(r)) {
            judge_per_type(r, rules, cat, in, d);
            continue;
        }
        ++d.rules;
        judge_into(r, cat, in, d, true);
    }
    if (d.findings.empty()) add_activity(d.quiet, in.metrics);
    std::stable_sort(d.findings.begin(), d.findings.end(),
                     [](const Finding& a, const Finding& b) { return a.score > b.score; });
    return d;
}

}  // namespace hotline
