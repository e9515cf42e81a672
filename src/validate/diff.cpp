// `hotline diff`: a kernel-pair fix judged between two recordings, one trial per
// recorded interval plus the exact layout facts each recording stored.
#include <fmt/format.h>

#include "hotline/fix_output.hpp"
#include "hotline/validator.hpp"

namespace hotline {

nlohmann::json diff_facts(const FixCatalog& cat, const KernelFacts& facts, const std::vector<LineLayout>& layouts) {
    nlohmann::json fixes = nlohmann::json::object();
    for (auto& f : cat.fixes())
        if (f.mode == FixMode::kKernelPair) fixes[f.name] = to_json(check_applicability(f, facts));
    TrialMetrics lm;
    for (auto& l : layouts) add_layout_metrics(lm, l);
    return {{"fixes", fixes}, {"layout_metrics", lm}};
}

namespace {

Result<std::vector<TrialMetrics>> recording_trials(const nlohmann::json& doc, const std::string& name) {
    if (!doc.is_object() || !doc.contains("analysis") || !doc["analysis"].is_object())
        return make_error(name + ": not a hotline recording (no \"analysis\")", EINVAL,
                          "record it with `hotline record --scenario NAME -o FILE`");
    const auto& an = doc["analysis"];
    if (!an.contains("interval_metrics") || !an["interval_metrics"].is_array() || an["interval_metrics"].empty())
        return make_error(name + ": the recording has no per-interval metrics (\"analysis.interval_metrics\")", EINVAL,
                          "record it again with this version of `hotline record --scenario NAME -o FILE`");
    TrialMetrics layout;
    if (an.contains("diff") && an["diff"].contains("layout_metrics"))
        layout = an["diff"]["layout_metrics"].get<TrialMetrics>();
    std::vector<TrialMetrics> out;
    for (auto& m : an["interval_metrics"]) {
        TrialMetrics t = m.get<TrialMetrics>();
        for (auto& [k, v] : layout) t[k] = v;
        out.push_back(std::move(t));
    }
    return out;
}

nlohmann::json carries(const nlohmann::json& doc, const std::string& fix) {
    const auto* p = &doc;
    for (const char* k : {"analysis", "diff", "fixes"}) {
        if (!p->contains(k)) return nullptr;
        p = &(*p)[k];
    }
    if (!p->contains(fix) || !(*p)[fix].contains("carries_fix")) return nullptr;
    return (*p)[fix]["carries_fix"];
}

}  // namespace

Result<VerdictReport> diff_recordings(const FixDef& fix, const nlohmann::json& baseline, const nlohmann::json& candidate,
                                      const std::string& baseline_name, const std::string& candidate_name) {
    auto base = recording_trials(baseline, baseline_name);
    if (!base) return base.error();
    auto cand = recording_trials(candidate, candidate_name);
    if (!cand) return cand.error();
    std::vector<Trial> trials;
    for (auto& m : *base) trials.push_back({Arm::kBaseline, m, baseline_name});
    for (auto& m : *cand) trials.push_back({Arm::kCandidate, m, candidate_name});
    ValidateOptions opts;
    opts.min_each = int(std::min(base->size(), cand->size()));
    opts.max_each = std::max(opts.min_each, int(std::max(base->size(), cand->size())));
    VerdictReport r = evaluate(fix.name, fix.criteria, trials, opts);
    r.mode = "diff";
    r.scenario = baseline_name + " vs " + candidate_name;
    nlohmann::json cb = carries(baseline, fix.name), cc = carries(candidate, fix.name);
    r.context = {{"baseline", {{"file", baseline_name}, {"carries_fix", cb}}},
                 {"candidate", {{"file", candidate_name}, {"carries_fix", cc}}}};
    for (const auto* d : {&baseline, &candidate})
        if (d->contains("kernel")) r.context[d == &baseline ? "baseline" : "candidate"]["kernel"] = (*d)["kernel"];
    if (cb.is_boolean() && cc.is_boolean() && (cb.get<bool>() || !cc.get<bool>()))
        r.notes.push_back(fmt::format("the recordings may be the wrong way round: baseline carries the fix: {}, "
                                      "candidate carries it: {}", cb.get<bool>(), cc.get<bool>()));
    return r;
}

}  // namespace hotline
