// SPDX-License-Identifier: Apache-2.0
#include "hotline/model/finding.hpp"

namespace hotline {

std::string_view to_string(Severity s) {
    switch (s) {
    case Severity::kLow: return "low";
    case Severity::kMedium: return "medium";
    case Severity::kHigh: return "high";
    }
    return "?";
}

std::string_view to_string(FixStatus s) {
    switch (s) {
    case FixStatus::kApplies: return "applies";
    case FixStatus::kNotApplicable: return "not-applicable";
    case FixStatus::kKernelFixAbsent: return "kernel-fix-absent";
    case FixStatus::kKernelFixPresent: return "kernel-fix-present";
    case FixStatus::kUnknown: return "unknown";
    }
    return "?";
}

}  // namespace hotline
