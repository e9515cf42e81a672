// SPDX-License-Identifier: Apache-2.0
// Fix catalog renderers: the list, one fix in full with its applicability on
// this kernel, and their JSON forms.
#include <fmt/format.h>

#include "hotline/fix/fix.hpp"
#include "hotline/report/fix_output.hpp"
#include "hotline/report/terminal.hpp"

#include <sstream>

namespace hotline {

namespace {

nlohmann::json check_json(const Check& c) {
    nlohmann::json j{{"description", c.describe()}, {"present", c.present}, {"why", c.why}, {"source", c.source}};
    switch (c.kind) {
    case CheckKind::kKnob: j["knob"] = c.knob; break;
    case CheckKind::kFunction: j["function"] = c.function; break;
    case CheckKind::kField:
        j["field"] = c.type + "." + c.member;
        if (!c.member_type.empty()) j["member_type"] = c.member_type;
        break;
    case CheckKind::kNumaNodes: j["numa_nodes"] = c.min_nodes; break;
    }
    return j;
}

nlohmann::json criterion_json(const Criterion& c) {
    return {{"kind", std::string(to_string(c.kind))}, {"metrics", c.metrics},
            {"better", std::string(to_string(c.better))}, {"change", c.change},
            {"threshold_ratio", c.threshold()}, {"exact", c.exact},
            {"description", c.describe()}, {"note", c.note}, {"source", c.source}};
}

void wrap(std::ostream& os, const std::string& text, const std::string& indent) {
    // The description keeps its own line breaks from the catalog.
    std::size_t start = 0;
    while (start <= text.size()) {
        auto nl = text.find('\n', start);
        os << indent << text.substr(start, nl == std::string::npos ? std::string::npos : nl - start) << "\n";
        if (nl == std::string::npos) break;
        start = nl + 1;
    }
}

}  // namespace

nlohmann::json to_json(const FixDef& f) {
    nlohmann::json j{{"name", f.name}, {"mode", std::string(to_string(f.mode))}, {"summary", f.summary},
                     {"description", f.description}, {"scenarios", f.scenarios}, {"source", f.source}};
    auto& refs = j["references"] = nlohmann::json::array();
    for (auto& r : f.references) refs.push_back({{"commit", r.commit}, {"title", r.title}, {"role", r.role}});
    auto& checks = j["checks"] = nlohmann::json::array();
    for (auto& c : f.checks) checks.push_back(check_json(c));
    auto& fixed = j["fixed_when"] = nlohmann::json::array();
    for (auto& c : f.fixed_when) fixed.push_back(check_json(c));
    auto& changes = j["changes"] = nlohmann::json::array();
    for (auto& c : f.changes)
        changes.push_back({{"kind", std::string(to_string(c.kind))}, {"knob", c.knob}, {"value", c.value},
                           {"scope", std::string(to_string(c.scope))}, {"optional", c.optional},
                           {"description", c.describe()}, {"note", c.note}, {"source", c.source}});
    // Only fixes that state one carry the key, so older verdicts keep their shape.
    for (auto& p : f.preconditions)
        j["preconditions"].push_back({{"metrics", p.metrics}, {"at_least", p.at_least}, {"why", p.why},
                                      {"description", p.describe()}, {"source", p.source}});
    auto& crit = j["criteria"] = nlohmann::json::array();
    for (auto& c : f.criteria) crit.push_back(criterion_json(c));
    return j;
}

nlohmann::json to_json(const Applicability& a) {
    nlohmann::json j{{"applicable", a.applicable}, {"reasons", a.reasons}};
    j["carries_fix"] = a.carries_fix ? nlohmann::json(*a.carries_fix) : nlohmann::json(nullptr);
    auto& checks = j["checks"] = nlohmann::json::array();
    for (auto& c : a.checks)
        checks.push_back({{"check", c.check.describe()}, {"held", c.held}, {"known", c.known}, {"detail", c.detail}});
    return j;
}

void render_fix_list_text(std::ostream& out, const FixCatalog& cat, const KernelFacts* facts) {
    std::ostringstream os;
    os << fmt::format("{:<26} {:<12} {:<10} {}\n", "NAME", "MODE", "HERE", "SUMMARY");
    for (auto& f : cat.fixes()) {
        std::string here = "-";
        if (facts) {
            Applicability a = check_applicability(f, *facts);
            if (f.mode == FixMode::kKernelPair)
                here = a.carries_fix ? (*a.carries_fix ? "has fix" : "lacks fix") : "2 kernels";
            else
                here = a.applicable ? "applies" : "n/a";
        }
        os << fmt::format("{:<26} {:<12} {:<10} {}\n", f.name, to_string(f.mode), here, f.summary);
    }
    out << terminal_safe(os.str());
}

void render_fix_text(std::ostream& out, const FixDef& f, const Applicability* here) {
    std::ostringstream os;
    os << fmt::format("{} ({}, defined at {})\n  {}\n", f.name, to_string(f.mode), f.source, f.summary);
    if (!f.description.empty()) {
        os << "\n";
        wrap(os, f.description, "  ");
    }
    if (!f.references.empty()) {
        os << "\nreferences:\n";
        for (auto& r : f.references) os << fmt::format("  {:<8} {} \"{}\"\n", r.role, r.commit, r.title);
    }
    if (!f.scenarios.empty()) {
        os << "\nscenarios:";
        for (auto& s : f.scenarios) os << " " << s;
        os << "\n";
    }
    if (!f.checks.empty()) {
        os << "\napplies when:\n";
        for (auto& c : f.checks) os << "  " << c.describe() << "\n";
    }
    if (!f.fixed_when.empty()) {
        os << "\na kernel carries the fix when:\n";
        for (auto& c : f.fixed_when) os << "  " << c.describe() << "\n";
    }
    if (!f.changes.empty()) {
        os << "\nchanges:\n";
        for (auto& c : f.changes) os << "  " << c.describe() << (c.note.empty() ? "" : "  -- " + c.note) << "\n";
    }
    if (!f.preconditions.empty()) {
        os << "\nthe baseline must show:\n";
        for (auto& p : f.preconditions) os << "  " << p.describe() << "  -- else: " << p.why << "\n";
    }
    os << "\ncriteria:\n";
    for (auto& c : f.criteria)
        os << fmt::format("  {:<9} {}{}\n", to_string(c.kind), c.describe(), c.note.empty() ? "" : "  -- " + c.note);
    if (here) {
        os << "\non this kernel:\n";
        for (auto& c : here->checks)
            os << fmt::format("  [{}] {} ({})\n", c.held ? "ok" : (c.known ? "no" : "??"), c.check.describe(), c.detail);
        if (f.mode == FixMode::kKernelPair && here->carries_fix)
            os << fmt::format("  this kernel {} the fix\n", *here->carries_fix ? "carries" : "lacks");
        if (here->applicable)
            os << "  APPLICABLE\n";
        else
            for (auto& r : here->reasons) os << "  NOT APPLICABLE: " << r << "\n";
    }
    out << terminal_safe(os.str());
}

}  // namespace hotline
