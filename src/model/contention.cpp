// SPDX-License-Identifier: Apache-2.0
#include "hotline/model/contention.hpp"

#include <algorithm>
#include <numeric>

#include "hotline/model/verdict.hpp"

namespace hotline {
namespace {

void add_scaled(std::vector<double>& into, const std::vector<std::uint64_t>& v, double scale) {
    if (into.size() < v.size()) into.resize(v.size(), 0);
    for (std::size_t i = 0; i < v.size(); ++i) into[i] += double(v[i]) * scale;
}

void add_arm(ArmHandoffs& a, const HandoffCounters& h, double ops, double scale) {
    ++a.trials;
    a.ops += ops;
    add_scaled(a.by_cpu, h.cross_cpu, scale);
    add_scaled(a.by_cpu, h.cross_node, scale);
    if (a.by_node.size() < h.matrix.size()) a.by_node.resize(h.matrix.size());
    for (std::size_t from = 0; from < h.matrix.size(); ++from) add_scaled(a.by_node[from], h.matrix[from], scale);
}

}  // namespace

const ArmHandoffs& ObjectContention::arm(Arm a) const { return a == Arm::kBaseline ? baseline : fix; }
ArmHandoffs& ObjectContention::arm(Arm a) { return a == Arm::kBaseline ? baseline : fix; }

double ArmHandoffs::total() const { return std::accumulate(by_cpu.begin(), by_cpu.end(), 0.0); }

void add_trial_contention(std::vector<ObjectContention>& into, Arm arm, const Interval& iv, double ops) {
    for (const TargetCounters& t : iv.d.targets) {
        if (!iv.handoffs_tracked(t)) continue;
        auto it = std::find_if(into.begin(), into.end(), [&](const ObjectContention& c) { return c.target == t.target; });
        if (it == into.end()) {
            into.push_back({t.target, t.object_type, std::max(t.handoffs.sample, 1), {}, {}});
            it = into.end() - 1;
        }
        add_arm(it->arm(arm), t.handoffs, ops, iv.handoff_scale(t));
    }
}

}  // namespace hotline
