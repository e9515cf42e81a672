// SPDX-License-Identifier: Apache-2.0
// `hotline diff`: a kernel-pair fix judged between two recordings, one trial per
// recorded interval plus the exact layout facts each recording stored.
#include <fmt/format.h>

#include <cmath>

#include "hotline/report/fix_output.hpp"
#include "hotline/report/output.hpp"
#include "hotline/validate/validator.hpp"

namespace hotline {

namespace {

// The recording's own claim, a boolean or null: anything else is ignored.
nlohmann::json carries(const nlohmann::json& doc, const std::string& fix) {
    const auto* p = &doc;
    for (const std::string& k : {std::string("analysis"), std::string("diff"), std::string("fixes"), fix}) {
        if (!p->is_object() || !p->contains(k)) return nullptr;
        p = &(*p)[k];
    }
    if (!p->is_object() || !p->contains("carries_fix") || !(*p)["carries_fix"].is_boolean()) return nullptr;
    return (*p)["carries_fix"];
}

// Values from a file shown in messages: a hostile one may be megabytes long.
std::string clip(std::string_view s) {
    constexpr std::size_t kShown = 80;
    if (s.size() <= kShown) return std::string(s);
    return fmt::format("{}... ({} bytes)", s.substr(0, kShown), s.size());
}

Error not_usable(const std::string& name, const std::string& why) {
    return make_error(name + ": not a usable hotline recording: " + why, EINVAL,
                      "record it with `hotline record --scenario NAME -o FILE`");
}

Status check_identity(const nlohmann::json& doc, const std::string& name) {
    if (!doc.is_object()) return not_usable(name, "it is not a JSON object");
    auto schema = doc.find("schema");
    if (schema == doc.end() || !schema->is_string() || *schema != kRecordingSchema)
        return not_usable(name, fmt::format("its schema is not \"{}\"", kRecordingSchema));
    auto version = doc.find("version");
    if (version == doc.end() || !version->is_number_integer())
        return not_usable(name, "it has no integer \"version\"");
    if (version->get<std::int64_t>() < 1 || version->get<std::int64_t>() > kRecordingVersion)
        return not_usable(name, fmt::format("version {} is not one this hotline reads (1 to {})",
                                            version->get<std::int64_t>(), kRecordingVersion));
    return ok_status();
}

// One interval's metrics: names to finite, non-negative numbers (every metric
// is a count, a rate or a ratio of counts).
Result<TrialMetrics> metrics_from(const nlohmann::json& j, const std::string& name, const std::string& where) {
    if (!j.is_object()) return not_usable(name, where + " is not an object of metrics");
    TrialMetrics t;
    for (auto& [k, v] : j.items()) {
        if (!v.is_number()) return not_usable(name, fmt::format("{}: \"{}\" is not a number", where, clip(k)));
        double d = v.get<double>();
        if (!std::isfinite(d) || d < 0)
            return not_usable(name, fmt::format("{}: \"{}\" is {}, an impossible value for a count or rate", where,
                                                clip(k), d));
        t[k] = d;
    }
    return t;
}

Result<std::vector<TrialMetrics>> recording_trials(const nlohmann::json& doc, const std::string& name) {
    if (auto st = check_identity(doc, name); !st) return st.error();
    if (!doc.contains("analysis") || !doc["analysis"].is_object())
        return make_error(name + ": not a hotline recording (no \"analysis\")", EINVAL,
                          "record it with `hotline record --scenario NAME -o FILE`");
    const auto& an = doc["analysis"];
    if (!an.contains("interval_metrics") || !an["interval_metrics"].is_array() || an["interval_metrics"].empty())
        return make_error(name + ": the recording has no per-interval metrics (\"analysis.interval_metrics\")", EINVAL,
                          "record it again with this version of `hotline record --scenario NAME -o FILE`");
    const auto& per = an["interval_metrics"];
    if (per.size() > kMaxRecordingIntervals)
        return not_usable(name, fmt::format("it has {} intervals, more than the limit of {}", per.size(),
                                            kMaxRecordingIntervals));
    TrialMetrics layout;
    if (an.contains("diff")) {
        if (!an["diff"].is_object()) return not_usable(name, "\"analysis.diff\" is not an object");
        if (an["diff"].contains("layout_metrics")) {
            auto l = metrics_from(an["diff"]["layout_metrics"], name, "analysis.diff.layout_metrics");
            if (!l) return l.error();
            layout = std::move(*l);
        }
    }
    std::vector<TrialMetrics> out;
    for (std::size_t i = 0; i < per.size(); ++i) {
        auto t = metrics_from(per[i], name, fmt::format("interval {}", i));
        if (!t) return t.error();
        for (auto& [k, v] : layout) (*t)[k] = v;
        out.push_back(std::move(*t));
    }
    return out;
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
    opts.method = TestMethod::kBootstrap;  // two recordings' intervals are not paired trials
    opts.min_each = int(std::min(base->size(), cand->size()));
    opts.max_each = std::max(opts.min_each, int(std::max(base->size(), cand->size())));
    VerdictReport r = evaluate(fix.name, fix.criteria, trials, opts);
    r.mode = "diff";
    r.scenario = baseline_name + " vs " + candidate_name;
    nlohmann::json cb = carries(baseline, fix.name), cc = carries(candidate, fix.name);
    r.context = {{"baseline", {{"file", baseline_name}, {"carries_fix", cb}}},
                 {"candidate", {{"file", candidate_name}, {"carries_fix", cc}}}};
    for (const auto* d : {&baseline, &candidate})
        if (d->contains("kernel") && (*d)["kernel"].is_object()) r.context[d == &baseline ? "baseline" : "candidate"]["kernel"] = (*d)["kernel"];
    if (cb.is_boolean() && cc.is_boolean() && (cb.get<bool>() || !cc.get<bool>()))
        r.notes.push_back(fmt::format("the recordings may be the wrong way round: baseline carries the fix: {}, "
                                      "candidate carries it: {}", cb.get<bool>(), cc.get<bool>()));
    return r;
}

}  // namespace hotline
