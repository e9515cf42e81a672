// SPDX-License-Identifier: Apache-2.0
// One trial's metric values from the collector's interval and the scenario's
// own numbers, under the names the fix catalog and the diagnosis rules use.
#include "hotline/model/recording_metrics.hpp"

#include <algorithm>
#include <vector>


namespace hotline {

namespace {

// `ops`: the operations made while the counters counted (attached_ops).
void add_handoff_metrics(TrialMetrics& m, const TargetCounters& t, double ops, const Interval& iv) {
    const HandoffCounters& h = t.handoffs;
    double node = double(h.total(h.cross_node));
    double cpu = double(h.total(h.cross_cpu)) + node;
    if (ops > 0) {
        // 1 of `sample` objects is tracked, in tracking windows or throughout:
        // scaled back so that per-op values compare across runs.
        const double scale = iv.handoff_scale(t);
        m["handoff." + t.target + ".cross_node_per_op"] = node * scale / ops;
        m["handoff." + t.target + ".cross_cpu_per_op"] = cpu * scale / ops;
    }
    const double tracked = double(h.total(h.tracked)), seconds = iv.tracking_seconds();
    if (seconds > 0) m["handoff." + t.target + ".tracked_per_s"] = tracked / seconds;
    if (tracked > 0) {
        m["handoff." + t.target + ".cross_node_share"] = node / tracked;
        m["handoff." + t.target + ".cross_cpu_share"] = cpu / tracked;
    }
}

void add_workq_metrics(TrialMetrics& m, const WorkqCounters& w, double seconds) {
    std::uint64_t irqs = 0, queued = 0, remote = 0;
    for (auto v : w.irqs) irqs += v;
    for (auto v : w.queued) queued += v;
    for (auto v : w.remote) remote += v;
    if (irqs > 0)
        for (auto& [func, n] : w.funcs) m["work." + func + ".queued_per_irq"] = double(n) / double(irqs);
    if (seconds > 0) m["work.queued_per_s"] = double(queued) / seconds;
    if (queued > 0) m["work.remote_share"] = double(remote) / double(queued);
}

// The scenario's operations made while the programs were attached: all of
// them for a session attached throughout, else the attached share (the
// scenario runs evenly across its windows).
double attached_ops(const Interval& iv, double ops) {
    return iv.seconds() > 0 ? ops * iv.watched_seconds() / iv.seconds() : ops;
}

}  // namespace

TrialMetrics trial_metrics(const Interval& iv, const ScenarioNumbers& s) {
    TrialMetrics m;
    // Counters cover the attached time: rates are per attached second, and
    // per-op values over the operations of that time.
    const double secs = iv.watched_seconds();
    const double ops = attached_ops(iv, s.ops);
    if (s.seconds > 0) m["scenario.ops_per_s"] = s.ops / s.seconds;
    if (s.ops > 0 && s.cpu_seconds > 0) m["scenario.cpu_us_per_op"] = s.cpu_seconds * 1e6 / s.ops;
    for (auto& [k, v] : s.extra) m["scenario." + k] = v;
    for (auto& t : iv.d.targets) {
        const double calls = double(t.total_calls());
        switch (t.fidelity) {
        case Fidelity::kExact:
            if (ops > 0) m["calls." + t.target + ".per_op"] = calls / ops;
            if (secs > 0) m["calls." + t.target + ".per_s"] = calls / secs;
            break;
        case Fidelity::kPartial:
            if (ops > 0) m["proxy." + t.target + ".per_op"] = calls / ops;
            if (secs > 0) m["proxy." + t.target + ".per_s"] = calls / secs;
            break;
        case Fidelity::kSampled:
            m["share." + t.target] = sampled_share(t, iv.d.samples_total);
            break;
        case Fidelity::kNone: break;
        }
        if (t.has_latency && t.lat_count > 0)
            m["latency." + t.target + ".mean_ns"] = double(t.lat_sum_ns) / double(t.lat_count);
        if (iv.handoffs_tracked(t)) add_handoff_metrics(m, t, ops, iv);
    }
    if (iv.d.has_workq) add_workq_metrics(m, iv.d.workq, secs);
    return m;
}

void add_layout_metrics(TrialMetrics& m, const LineLayout& l) {
    static const std::vector<std::string> kReadMostly = {"obsolete", "lwtstate", "rt_genid"};
    std::size_t read = 0;
    for (auto& f : l.flagged)
        if (std::find(kReadMostly.begin(), kReadMostly.end(), f) != kReadMostly.end()) ++read;
    if (l.type == "dst_entry") m["layout.dst_entry.read_fields_on_refcnt_line"] = double(read);
    m["layout." + l.type + ".fields_on_hot_line"] = double(l.flagged.size());
}

namespace {

std::vector<std::string> dotted_words(std::string_view s) {
    std::vector<std::string> out(1);
    for (char c : s) {
        if (c == '.') out.emplace_back();
        else out.back() += c;
    }
    return out;
}

// One placeholder of a pattern against one part of a name (the sysctl takes the rest).
bool part_matches(std::string_view pat, std::string_view word, bool (*known_target)(std::string_view)) {
    if (pat == "<target>") return !known_target || known_target(word);
    if (pat == "<func>" || pat == "<key>" || pat == "<type>") return !word.empty();
    return pat == word;
}

MetricPart part_kind(std::string_view pat) {
    if (pat == "<target>") return MetricPart::kTarget;
    if (pat == "<func>") return MetricPart::kFunc;
    if (pat == "<key>") return MetricPart::kKey;
    if (pat == "<type>") return MetricPart::kType;
    if (pat == "<sysctl>") return MetricPart::kSysctl;
    return MetricPart::kWord;
}

std::optional<MetricMatch> match_form(const MetricName& form, const std::vector<std::string>& words,
                                      bool (*known_target)(std::string_view)) {
    std::vector<std::string> pats = dotted_words(form.pattern);
    MetricMatch mm{&form, "", MetricPart::kWord};
    for (std::size_t i = 0; i < pats.size(); ++i) {
        if (pats[i] == "<sysctl>") {  // the rest of the name, at least two words
            if (words.size() < i + 2) return std::nullopt;
            std::string rest;
            for (std::size_t j = i; j < words.size(); ++j) rest += (j > i ? "." : "") + words[j];
            return MetricMatch{&form, rest, MetricPart::kSysctl};
        }
        if (i >= words.size() || !part_matches(pats[i], words[i], known_target)) return std::nullopt;
        if (part_kind(pats[i]) != MetricPart::kWord) mm.subject = words[i], mm.part = part_kind(pats[i]);
    }
    if (words.size() != pats.size()) return std::nullopt;
    return mm;
}

}  // namespace

std::optional<MetricMatch> match_metric_name(std::string_view name, bool (*known_target)(std::string_view)) {
    std::vector<std::string> words = dotted_words(name);
    for (auto& w : words)
        if (w.empty()) return std::nullopt;
    // Literal names first: "layout.dst_entry.read_fields_on_refcnt_line" is not a <type> form.
    for (const auto& form : kMetricNames)
        if (form.pattern.find('<') == std::string_view::npos && form.pattern == name) return MetricMatch{&form, "", MetricPart::kWord};
    for (const auto& form : kMetricNames)
        if (auto m = match_form(form, words, known_target)) return m;
    return std::nullopt;
}

}  // namespace hotline
