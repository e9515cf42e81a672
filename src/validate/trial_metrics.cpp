// One trial's metric values from the collector's interval and the scenario's
// own numbers, under the names the fix catalog uses.
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
    }
    return m;
}

}  // namespace hotline
