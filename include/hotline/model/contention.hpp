// SPDX-License-Identifier: Apache-2.0
// What the trials of each arm of a validation saw of the objects hotline
// tracks: where their handoffs arrived (per CPU) and between which nodes, summed
// over the arm's trials.  The verdict carries it so that its page can show what
// was contended and what the fix changed, not only the ratio judged.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hotline/model/metrics.hpp"

namespace hotline {

enum class Arm;  // verdict.hpp

struct ArmHandoffs {
    int trials = 0;
    double ops = 0;                            // the workload's operations in those trials
    std::vector<double> by_cpu;                // handoffs arriving on each CPU (cross-CPU and cross-node)
    std::vector<std::vector<double>> by_node;  // [from node][to node]
    double total() const;
};

struct ObjectContention {
    std::string target;       // the watched function, e.g. dst_release
    std::string object_type;  // e.g. dst_entry
    int sample = 1;           // 1 of N objects tracked; the counts above are scaled by it
    ArmHandoffs baseline, fix;
    const ArmHandoffs& arm(Arm a) const;
    ArmHandoffs& arm(Arm a);
};

// Adds one trial's interval to its arm, one entry per target with handoff
// tracking (appended in the interval's target order the first time it is seen).
void add_trial_contention(std::vector<ObjectContention>& into, Arm arm, const Interval& iv, double ops);

}  // namespace hotline
