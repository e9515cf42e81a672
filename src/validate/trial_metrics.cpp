// One trial's metric values from the collector's interval and the scenario's
// own numbers, under the names the fix catalog uses.
#include <algorithm>

#include "hotline/validate.hpp"

namespace hotline {

TrialMetrics trial_metrics(const Interval& iv, const ScenarioNumbers& s) {
    TrialMetrics m;
    if (s.seconds > 0) m["scenario.ops_per_s"] = s.ops / s.seconds;
    if (s.ops > 0 && s.cpu_seconds > 0) m["scenario.cpu_us_per_op"] = s.cpu_seconds * 1e6 / s.ops;
    for (auto& [k, v] : s.extra) m["scenario." + k] = v;
    for (auto& t : iv.d.targets) {
        switch (t.fidelity) {
        case Fidelity::kExact:
            if (s.ops > 0) m["calls." + t.target + ".per_op"] = double(t.total_calls()) / s.ops;
            break;
        case Fidelity::kPartial:
            if (s.ops > 0) m["proxy." + t.target + ".per_op"] = double(t.total_calls()) / s.ops;
            break;
        case Fidelity::kSampled:
            m["share." + t.target] = sampled_share(t, iv.d.samples_total);
            break;
        case Fidelity::kNone: break;
        }
        if (t.has_latency && t.lat_count > 0)
            m["latency." + t.target + ".mean_ns"] = double(t.lat_sum_ns) / double(t.lat_count);
        if (t.has_handoffs && s.ops > 0) {
            // 1 of `sample` objects is tracked: scale back so per-op values compare
            // across runs with different sampling.
            double scale = t.handoffs.sample > 0 ? double(t.handoffs.sample) : 1.0;
            double node = double(t.handoffs.total(t.handoffs.cross_node));
            double cpu = double(t.handoffs.total(t.handoffs.cross_cpu)) + node;
            m["handoff." + t.target + ".cross_node_per_op"] = node * scale / s.ops;
            m["handoff." + t.target + ".cross_cpu_per_op"] = cpu * scale / s.ops;
        }
    }
    if (iv.d.has_workq) {
        std::uint64_t irqs = 0;
        for (auto v : iv.d.workq.irqs) irqs += v;
        if (irqs > 0)
            for (auto& [func, n] : iv.d.workq.funcs) m["work." + func + ".queued_per_irq"] = double(n) / double(irqs);
    }
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

}  // namespace hotline
