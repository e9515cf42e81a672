// SPDX-License-Identifier: Apache-2.0
// Verdict renderers: a text summary, the versioned JSON document and JUnit XML
// (one testcase per criterion, so CI dashboards name what held and what did not).
#include <fmt/format.h>

#include <cmath>

#include "hotline/base/util.hpp"
#include "hotline/report/output.hpp"
#include "hotline/report/terminal.hpp"
#include "hotline/report/verdict_output.hpp"

namespace hotline {

std::string xml_escape(std::string_view s) {
    std::string o;
    o.reserve(s.size());
    for (char ch : s) {
        unsigned char c = static_cast<unsigned char>(ch);
        switch (ch) {
        case '&': o += "&amp;"; break;
        case '<': o += "&lt;"; break;
        case '>': o += "&gt;"; break;
        case '"': o += "&quot;"; break;
        case '\'': o += "&apos;"; break;
        default:
            // XML 1.0 forbids most control characters even as references.
            if (c < 0x20 && ch != '\n' && ch != '\t' && ch != '\r') o += '?';
            else o += ch;
        }
    }
    return o;
}

namespace {

std::string num(double v) {
    if (std::isnan(v)) return "-";
    return plain_number(v);
}

nlohmann::json jnum(double v) {
    // JSON has no inf/NaN: null says "no finite value".
    if (!std::isfinite(v)) return nullptr;
    return v;
}

std::string criterion_line(const CriterionResult& c) {
    std::string s = fmt::format("{}: {}\n  verdict: {} - {}\n", to_string(c.criterion.kind),
                                c.criterion.describe(), to_string(c.verdict), c.reason);
    if (!c.metric.empty())
        s += fmt::format("  metric: {}; median baseline {} (n={}), fix {} (n={})\n", c.metric,
                         num(c.median_baseline), c.n_baseline, num(c.median_candidate), c.n_candidate);
    if (c.mann_whitney)
        s += fmt::format("  Mann-Whitney p={}, P(fix > baseline)={:.2f}\n", plain_number(c.mann_whitney->p_two_sided, 3),
                         c.mann_whitney->prob_superiority);
    if (c.hl_ratio) s += fmt::format("  Hodges-Lehmann ratio {}\n", num(*c.hl_ratio));
    if (!c.criterion.note.empty()) s += "  why: " + c.criterion.note + "\n";
    return s;
}

// A run that ended in an error (context.error, set by the validator) has no
// verdict and exits 4, whatever its partial trials say.
const std::string* run_error(const VerdictReport& r) {
    if (!r.context.is_object()) return nullptr;
    auto it = r.context.find("error");
    if (it == r.context.end() || !it->is_string()) return nullptr;
    return it->get_ptr<const std::string*>();
}

}  // namespace

void render_verdict_text(std::ostream& os, const VerdictReport& r, bool colour) {
    const std::string* err = run_error(r);
    os << fmt::format("fix {}{}: {}\n", r.fix, r.scenario.empty() ? "" : " on " + r.scenario,
                      err ? paint("ERROR", Verdict::kFail, colour) : paint(to_string(r.overall), r.overall, colour));
    os << "  " << (err ? *err : r.reason) << "\n";
    if (err && !r.trials.empty())
        os << fmt::format("  no verdict; the trials so far alone would say {}: {}\n", to_string(r.overall), r.reason);
    if (r.overall != Verdict::kNotApplicable) {
        if (r.options.method == TestMethod::kSequential)
            os << fmt::format("  {} baseline and {} fix trials{}; effect = mean(fix) / mean(baseline) over pairs, "
                              "{:.0f}% anytime-valid confidence sequence (t-mixture, g {:g})\n",
                              r.baseline_trials, r.candidate_trials, r.mode == "trials" ? " (ABAB)" : "",
                              r.options.confidence * 100, r.options.mixture_g);
        else
            os << fmt::format("  {} baseline and {} fix trials{}; effect = median(fix) / median(baseline), "
                              "{:.0f}% bootstrap CI, seed {}\n",
                              r.baseline_trials, r.candidate_trials, r.mode == "trials" ? " (ABAB)" : "",
                              r.options.confidence * 100, r.options.seed);
    }
    if (r.trial_length && r.overall != Verdict::kNotApplicable)
        os << fmt::format("  trial length {:.2f} s ({}{})\n", r.trial_length->length_s,
                          r.trial_length->adapted ? "auto: " : "", r.trial_length->reason);
    if (!r.preconditions.empty()) os << "\n";
    for (auto& p : r.preconditions)
        os << fmt::format("  precondition {} ({})\n", to_string(p.state), p.describe());
    if (!r.criteria.empty()) {
        os << fmt::format("\n  {:<9} {:<56} {:>10} {:>10} {:>7} {:>17}  {}\n", "kind", "criterion", "baseline",
                          "fix", "ratio", "CI", "verdict");
        for (auto& c : r.criteria) {
            std::string ci = interval_text(c);
            std::string desc = c.criterion.describe();
            if (!c.metric.empty() && c.criterion.metrics.size() > 1) desc += " [used " + c.metric + "]";
            os << fmt::format("  {:<9} {:<56} {:>10} {:>10} {:>7} {:>17}  {}\n", to_string(c.criterion.kind), desc,
                              c.metric.empty() ? "-" : num(c.median_baseline),
                              c.metric.empty() ? "-" : num(c.median_candidate),
                              c.ratio ? num(c.ratio->ratio) : "-", ci, paint(to_string(c.verdict), c.verdict, colour));
        }
        bool any_detail = false;
        for (auto& c : r.criteria) {
            if (c.verdict == Verdict::kPass || c.verdict == Verdict::kInfo) continue;
            if (!any_detail) os << "\n";
            any_detail = true;
            os << "  " << paint(fmt::format("{} {}: {}", to_string(c.criterion.kind), c.criterion.describe(), c.reason),
                                c.verdict, colour)
               << "\n";
        }
    }
    for (auto& n : r.notes) os << "  note: " << n << "\n";
}

namespace {

nlohmann::json trial_length_json(const TrialLengthChoice& c) {
    nlohmann::json j{{"mode", c.adapted ? "auto" : "fixed"}, {"length_s", c.length_s}, {"reason", c.reason}};
    if (!c.adapted) return j;
    j["pilot_s"] = c.pilot_s;
    j["pilot_pairs"] = c.pilot_pairs;
    j["pilot_done"] = c.pilot_done;
    j["bounds_s"] = {c.min_s, c.max_s};
    if (c.pilot_done)
        j["noise"] = {{"within_per_sqrt_s", c.noise.within},
                      {"between", c.noise.between},
                      {"overhead_s", c.noise.overhead_s},
                      {"optimal_s", jnum(c.optimal_s)}};
    return j;
}

nlohmann::json arm_json(const ArmHandoffs& a) {
    return {{"trials", a.trials}, {"ops", jnum(a.ops)}, {"handoffs", jnum(a.total())},
            {"handoffs_by_cpu", a.by_cpu}, {"node_matrix", a.by_node}};
}

// Only when the trials tracked an object, so other verdicts keep their shape.
void put_contention(nlohmann::json& j, const VerdictReport& r) {
    if (r.contention.empty()) return;
    auto& cj = j["contention"] = nlohmann::json::array();
    for (auto& c : r.contention)
        cj.push_back({{"target", c.target}, {"type", c.object_type}, {"sample", c.sample},
                      {"baseline", arm_json(c.baseline)}, {"fix", arm_json(c.fix)}});
    auto& lj = j["layouts"] = nlohmann::json::array();
    for (auto& l : r.layouts) lj.push_back(to_json(l));
}

}  // namespace

nlohmann::json verdict_to_json(const VerdictReport& r) {
    nlohmann::json j = json_document(kVerdictSchema, kVerdictVersion);
    j["fix"] = r.fix;
    j["scenario"] = r.scenario;
    j["mode"] = r.mode;
    if (const std::string* err = run_error(r)) {
        j["verdict"] = "ERROR";
        j["exit_code"] = kExitValidateError;
        j["reason"] = *err;
        j["error"] = *err;
        j["partial_verdict"] = std::string(to_string(r.overall));
    } else {
        j["verdict"] = std::string(to_string(r.overall));
        j["exit_code"] = exit_code(r.overall);
        j["reason"] = r.reason;
    }
    j["options"] = {{"min_each", r.options.min_each},
                    {"max_each", r.options.max_each},
                    {"confidence", r.options.confidence},
                    {"method", std::string(to_string(r.options.method))},
                    {"mixture_g", r.options.mixture_g},
                    {"bootstrap_iterations", r.options.bootstrap_iterations},
                    {"seed", r.options.seed},
                    {"stop_on_fail", r.options.stop_on_fail}};
    j["trials_count"] = {{"baseline", r.baseline_trials}, {"fix", r.candidate_trials}};
    auto& cj = j["criteria"] = nlohmann::json::array();
    for (auto& c : r.criteria) {
        nlohmann::json e{{"kind", std::string(to_string(c.criterion.kind))},
                         {"description", c.criterion.describe()},
                         {"metrics", c.criterion.metrics},
                         {"metric", c.metric},
                         {"better", std::string(to_string(c.criterion.better))},
                         {"change", c.criterion.change},
                         {"threshold_ratio", c.criterion.threshold()},
                         {"exact", c.criterion.exact},
                         {"verdict", std::string(to_string(c.verdict))},
                         {"reason", c.reason},
                         {"n_baseline", c.n_baseline},
                         {"n_fix", c.n_candidate},
                         {"median_baseline", jnum(c.median_baseline)},
                         {"median_fix", jnum(c.median_candidate)},
                         {"note", c.criterion.note},
                         {"source", c.criterion.source}};
        if (c.ratio)
            e["ratio"] = {{"estimate", jnum(c.ratio->ratio)},
                          {"ci_low", jnum(c.ratio->low)},
                          {"ci_high", jnum(c.ratio->high)},
                          {"confidence", c.ratio->confidence}};
        if (c.mann_whitney)
            e["mann_whitney"] = {{"u", c.mann_whitney->u},
                                 {"z", c.mann_whitney->z},
                                 {"p_two_sided", c.mann_whitney->p_two_sided},
                                 {"prob_fix_greater", c.mann_whitney->prob_superiority}};
        if (c.hl_ratio) e["hodges_lehmann_ratio"] = jnum(*c.hl_ratio);
        if (c.e_value)
            e["sequential"] = {{"pairs", c.pairs},
                               {"decided_after_pairs", c.decided_after_pairs},
                               {"e_value", jnum(*c.e_value)}};
        if (c.pilot_e_value) e["sequential"]["pilot_e_value"] = jnum(*c.pilot_e_value);
        cj.push_back(std::move(e));
    }
    // Only for fixes that state preconditions, so other verdicts keep their shape.
    for (auto& p : r.preconditions)
        j["preconditions"].push_back({{"description", p.precondition.describe()},
                                      {"metric", p.metric},
                                      {"at_least", p.precondition.at_least},
                                      {"values", p.values},
                                      {"median", jnum(p.median)},
                                      {"state", std::string(to_string(p.state))},
                                      {"why", p.precondition.why},
                                      {"source", p.precondition.source}});
    auto& tj = j["trials"] = nlohmann::json::array();
    for (std::size_t i = 0; i < r.trials.size(); ++i) {
        nlohmann::json m = nlohmann::json::object();
        for (auto& [k, v] : r.trials[i].metrics) m[k] = jnum(v);
        const Trial& t = r.trials[i];
        nlohmann::json e{{"index", i}, {"arm", std::string(to_string(t.arm))}, {"metrics", m}, {"note", t.note}};
        if (t.length_s > 0) e["length_s"] = t.length_s;
        if (t.wall_s > 0) e["wall_s"] = t.wall_s;
        if (t.within_noise) e["within_noise"] = jnum(*t.within_noise);
        tj.push_back(std::move(e));
    }
    if (r.trial_length) j["trial_length"] = trial_length_json(*r.trial_length);
    put_contention(j, r);
    j["notes"] = r.notes;
    j["context"] = r.context;
    return j;
}

void render_verdict_json(std::ostream& os, const VerdictReport& r) { os << document_text(verdict_to_json(r), 2); }

void render_junit(std::ostream& os, const VerdictReport& r) {
    int failures = 0, skipped = 0;
    for (auto& c : r.criteria) {
        if (c.verdict == Verdict::kFail) ++failures;
        if (c.verdict == Verdict::kInconclusive || c.verdict == Verdict::kNotApplicable) ++skipped;
    }
    // NOT-APPLICABLE gets one extra testcase carrying the reason, so the file
    // says why even when the fix has no criteria.
    // An error gets one testcase of its own carrying the message.
    const std::string* err = run_error(r);
    bool na_case = r.overall == Verdict::kNotApplicable && !err;
    int errors = err ? 1 : 0;
    int tests = int(r.criteria.size()) + (na_case ? 1 : 0) + errors;
    if (na_case) ++skipped;
    std::string suite = "hotline.validate." + r.fix;
    os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    os << fmt::format("<testsuites name=\"hotline\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\">\n",
                      tests, failures, errors, skipped);
    os << fmt::format("  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\">\n",
                      xml_escape(suite), tests, failures, errors, skipped);
    os << "    <properties>\n";
    auto prop = [&](const std::string& k, const std::string& v) {
        os << fmt::format("      <property name=\"{}\" value=\"{}\"/>\n", xml_escape(k), xml_escape(v));
    };
    prop("fix", r.fix);
    prop("scenario", r.scenario);
    prop("mode", r.mode);
    prop("verdict", err ? "ERROR" : std::string(to_string(r.overall)));
    prop("reason", err ? *err : r.reason);
    prop("trials.baseline", std::to_string(r.baseline_trials));
    prop("trials.fix", std::to_string(r.candidate_trials));
    prop("confidence", fmt::format("{}", r.options.confidence));
    prop("seed", std::to_string(r.options.seed));
    os << "    </properties>\n";
    std::string cls = "hotline." + r.fix;
    if (err) {
        os << fmt::format("    <testcase classname=\"{}\" name=\"run\">\n", xml_escape(cls));
        os << fmt::format("      <error type=\"ERROR\" message=\"{}\"/>\n", xml_escape(*err));
        os << "    </testcase>\n";
    }
    if (na_case) {
        os << fmt::format("    <testcase classname=\"{}\" name=\"applicability\">\n", xml_escape(cls));
        os << fmt::format("      <skipped message=\"NOT-APPLICABLE: {}\"/>\n", xml_escape(r.reason));
        os << "    </testcase>\n";
    }
    for (auto& c : r.criteria) {
        std::string name = fmt::format("{}: {}", to_string(c.criterion.kind), c.criterion.describe());
        os << fmt::format("    <testcase classname=\"{}\" name=\"{}\">\n", xml_escape(cls), xml_escape(name));
        std::string msg = fmt::format("{}: {}", to_string(c.verdict), c.reason);
        if (c.verdict == Verdict::kFail)
            os << fmt::format("      <failure type=\"FAIL\" message=\"{}\">{}</failure>\n", xml_escape(msg),
                              xml_escape(criterion_line(c)));
        else if (c.verdict == Verdict::kInconclusive || c.verdict == Verdict::kNotApplicable)
            os << fmt::format("      <skipped message=\"{}\"/>\n", xml_escape(msg));
        os << fmt::format("      <system-out>{}</system-out>\n", xml_escape(criterion_line(c)));
        os << "    </testcase>\n";
    }
    os << "  </testsuite>\n</testsuites>\n";
}

}  // namespace hotline
