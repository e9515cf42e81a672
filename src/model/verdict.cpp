// SPDX-License-Identifier: Apache-2.0
#include "hotline/base/util.hpp"
#include "hotline/model/verdict.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

namespace hotline {

double Criterion::threshold() const {
    switch (kind) {
    case CriterionKind::kExpect: return better == Better::kLower ? 1 - change : 1 + change;
    case CriterionKind::kGuardrail: return better == Better::kLower ? 1 + change : 1 - change;
    case CriterionKind::kReport: return 1;
    }
    return 1;
}

static std::string pct(double f) {
    double p = f * 100;
    if (std::fabs(p - std::round(p)) < 1e-9) return fmt::format("{:.0f}%", p);
    return fmt::format("{:.1f}%", p);
}

std::string Criterion::describe() const {
    std::string m = metrics.empty() ? "?" : metrics.front();
    for (std::size_t i = 1; i < metrics.size(); ++i) m += " (or " + metrics[i] + ")";
    switch (kind) {
    case CriterionKind::kExpect:
        return fmt::format("{} {} >= {}", m, better == Better::kLower ? "down" : "up", pct(change));
    case CriterionKind::kGuardrail:
        return fmt::format("{} not {} by more than {}", m, better == Better::kLower ? "up" : "down", pct(change));
    case CriterionKind::kReport: return m + " (reported)";
    }
    return m;
}

std::string Precondition::describe() const {
    std::string m = metrics.empty() ? "?" : metrics.front();
    for (std::size_t i = 1; i < metrics.size(); ++i) m += " (or " + metrics[i] + ")";
    return fmt::format("{} >= {:g} in the baseline", m, at_least);
}

std::string_view to_string(PreconditionState s) {
    switch (s) {
    case PreconditionState::kPending: return "pending";
    case PreconditionState::kHeld: return "held";
    case PreconditionState::kFailed: return "failed";
    }
    return "?";
}

std::string PreconditionResult::describe() const {
    const std::string& m = metric.empty() ? (precondition.metrics.empty() ? "?" : precondition.metrics.front()) : metric;
    if (metric.empty()) return fmt::format("{}: not measured in the baseline", m);
    std::vector<std::string> shown;
    for (double v : values) shown.push_back(plain_number(v, 3));
    return fmt::format("{}: median {} of {} baseline trial{} ({}) {} {}", m, plain_number(median, 3), values.size(),
                       values.size() == 1 ? "" : "s", fmt::join(shown, ", "),
                       median >= precondition.at_least ? ">=" : "<", plain_number(precondition.at_least, 6));
}

std::string_view to_string(CriterionKind k) {
    switch (k) {
    case CriterionKind::kExpect: return "expect";
    case CriterionKind::kGuardrail: return "guardrail";
    case CriterionKind::kReport: return "report";
    }
    return "?";
}

std::string_view to_string(Better b) { return b == Better::kLower ? "lower" : "higher"; }

std::string_view to_string(Verdict v) {
    switch (v) {
    case Verdict::kPass: return "PASS";
    case Verdict::kFail: return "FAIL";
    case Verdict::kInconclusive: return "INCONCLUSIVE";
    case Verdict::kNotApplicable: return "NOT-APPLICABLE";
    case Verdict::kInfo: return "INFO";
    }
    return "?";
}

std::string_view to_string(TestMethod m) {
    return m == TestMethod::kSequential ? "t-mixture-sequential" : "bootstrap";
}

std::string_view to_string(Arm a) { return a == Arm::kBaseline ? "baseline" : "fix"; }

int exit_code(Verdict v) {
    switch (v) {
    case Verdict::kPass: return 0;
    case Verdict::kFail: return 1;
    case Verdict::kInconclusive: return 2;
    case Verdict::kNotApplicable: return 3;
    case Verdict::kInfo: return 0;
    }
    return kExitValidateError;
}

std::string interval_text(const CriterionResult& c) {
    if (!c.ratio) return "-";
    const bool unbounded = std::isnan(c.ratio->low) || std::isnan(c.ratio->high) ||
                           (std::isinf(c.ratio->low) && std::isinf(c.ratio->high) && c.ratio->low != c.ratio->high);
    if (!unbounded) return fmt::format("[{}, {}]", plain_number(c.ratio->low), plain_number(c.ratio->high));
    if (c.median_baseline == 0 && c.median_candidate == 0) return "n/a (0 in both arms)";
    return "n/a";
}

}  // namespace hotline
