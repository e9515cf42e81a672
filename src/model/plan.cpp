// SPDX-License-Identifier: Apache-2.0
#include "hotline/model/plan.hpp"

namespace hotline {

bool Plan::any_observable() const {
    for (auto& t : targets)
        if (t.observable()) return true;
    return false;
}

const TargetPlan* Plan::find(std::string_view target) const {
    for (auto& t : targets)
        if (t.target == target) return &t;
    return nullptr;
}

}  // namespace hotline
