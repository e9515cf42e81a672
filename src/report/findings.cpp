// SPDX-License-Identifier: Apache-2.0
// A diagnosis as text and JSON.
#include <fmt/format.h>

#include "hotline/base/util.hpp"
#include "hotline/report/finding_output.hpp"
#include "hotline/report/output.hpp"
#include "hotline/report/terminal.hpp"

#include <sstream>

namespace hotline {

using nlohmann::json;

json to_json(const Evidence& e) {
    return {{"metric", e.metric},       {"value", e.value},         {"op", e.op},
            {"threshold", e.threshold}, {"past_threshold", e.past}, {"mechanism", e.mechanism},
            {"fidelity", e.fidelity}};
}

json to_json(const FixAdvice& a) {
    json j{{"fix", a.fix},         {"mode", a.mode},           {"summary", a.summary},
           {"status", to_string(a.status)}, {"prescribed", a.prescribed()}, {"why", a.why},
           {"confirm", a.confirm}};
    return j;
}

json to_json(const Finding& f) {
    json ev = json::array(), fixes = json::array();
    for (auto& e : f.evidence) ev.push_back(to_json(e));
    for (auto& a : f.fixes) fixes.push_back(to_json(a));
    return {{"rule", f.rule},       {"severity", to_string(f.severity)}, {"summary", f.summary},
            {"meaning", f.meaning}, {"evidence", ev},                    {"fixes", fixes},
            {"score", f.score},     {"rule_source", f.source}};
}

json to_json(const Diagnosis& d) {
    json findings = json::array(), unjudged = json::array();
    for (auto& f : d.findings) findings.push_back(to_json(f));
    for (auto& u : d.unjudged) unjudged.push_back({{"rule", u.rule}, {"why", u.why}});
    json doc = json_document(kFindingsSchema, kFindingsVersion);
    doc.update({{"recording", d.recording},
                {"kernel", d.kernel},
                {"rules", d.rules},
                {"findings", findings},
                {"quiet", d.quiet},
                {"unjudged", unjudged},
                {"refused", d.refused}});
    return doc;
}

namespace {

std::string evidence_line(const Evidence& e) {
    std::string past = e.past > 0 ? fmt::format("{:.1f}x the threshold; ", e.past) : "";
    return fmt::format("{} = {}, {} {} ({}{}, {})", e.metric, plain_number(e.value), e.op,
                       plain_number(e.threshold, 6), past, e.mechanism, e.fidelity);
}

std::string_view status_words(FixStatus s) {
    switch (s) {
    case FixStatus::kApplies: return "applies here";
    case FixStatus::kNotApplicable: return "not applicable here";
    case FixStatus::kKernelFixAbsent: return "kernel fix absent on this kernel";
    case FixStatus::kKernelFixPresent: return "kernel fix present on this kernel";
    case FixStatus::kUnknown: return "applicability unknown";
    }
    return "?";
}

void render_fix_advice(std::ostream& os, const FixAdvice& a) {
    os << fmt::format("    {} ({}): {}: {}\n", a.fix, a.mode, status_words(a.status), a.why);
    if (!a.prescribed()) return;
    os << fmt::format("      confirm: {}\n", a.confirm);
}

void render_finding(std::ostream& os, const Finding& f, std::size_t n) {
    os << fmt::format("{}. [{}] {}: {}\n", n, to_string(f.severity), f.rule, f.summary);
    os << "  evidence:\n";
    for (auto& e : f.evidence) os << "    " << evidence_line(e) << "\n";
    os << "  meaning: " << f.meaning << "\n";
    if (f.fixes.empty()) os << "  fixes: none in the catalog\n";
    else os << "  fixes:\n";
    for (auto& a : f.fixes) render_fix_advice(os, a);
    os << "\n";
}

void render_section(std::ostream& os, const char* title, const std::vector<std::string>& lines) {
    if (lines.empty()) return;
    os << title << "\n";
    for (auto& l : lines) os << "  " << l << "\n";
}

}  // namespace

void render_diagnosis_text(std::ostream& out, const Diagnosis& d) {
    std::ostringstream os;
    os << fmt::format("diagnosis of {} (kernel {}): {} finding{} from {} rules\n\n", d.recording,
                      d.kernel.empty() ? "?" : d.kernel, d.findings.size(), d.findings.size() == 1 ? "" : "s",
                      d.rules);
    for (std::size_t i = 0; i < d.findings.size(); ++i) render_finding(os, d.findings[i], i + 1);
    if (d.findings.empty())
        render_section(os, "nothing found: no rule's conditions held; the numbers that say so:", d.quiet);
    std::vector<std::string> unjudged;
    for (auto& u : d.unjudged) unjudged.push_back(u.rule + ": " + u.why);
    render_section(os, "not judged (a number the rule needs was not measured):", unjudged);
    render_section(os, "mechanisms this kernel refused:", d.refused);
    out << terminal_safe(os.str());
}

void render_findings_brief(std::ostream& out, const Diagnosis& d, std::size_t top) {
    if (d.findings.empty()) {
        out << fmt::format("findings: none from {} rules ({} not judged: `hotline diagnose FILE` says why)\n", d.rules,
                           d.unjudged.size());
        return;
    }
    std::ostringstream os;
    for (std::size_t i = 0; i < d.findings.size() && i < top; ++i) {
        const Finding& f = d.findings[i];
        std::vector<std::string> fixes;
        for (auto& a : f.fixes)
            if (a.prescribed()) fixes.push_back(a.fix);
        os << fmt::format("finding: [{}] {}: {} -> {}\n", to_string(f.severity), f.rule, f.summary,
                          fixes.empty() ? "no applicable fix" : fmt::format("{}", fmt::join(fixes, ", ")));
    }
    out << terminal_safe(os.str());
}

}  // namespace hotline
