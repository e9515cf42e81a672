// SPDX-License-Identifier: Apache-2.0
// The attach plan: per target, the mechanism that attached and why the earlier
// ones were refused.  Made by the planner (probe layer); read by every renderer.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "hotline/model/mechanism.hpp"

namespace hotline {

struct Rejection {
    Mechanism mechanism;
    std::string reason;
};

struct TargetPlan {
    std::string target;
    Mechanism mechanism = Mechanism::kUnavailable;
    Fidelity fidelity = Fidelity::kNone;
    std::string attach;  // what is attached, e.g. "fentry+fexit dst_release"
    bool latency = false;
    std::vector<Rejection> rejected;
    std::string unavailable_reason;  // set when mechanism == kUnavailable
    bool absent = false;             // the function is not in this kernel (nothing to watch, not a fault)

    bool observable() const { return mechanism != Mechanism::kUnavailable; }
};

struct Plan {
    std::vector<TargetPlan> targets;
    bool any_observable() const;
    const TargetPlan* find(std::string_view target) const;
};

}  // namespace hotline
