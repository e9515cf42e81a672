// SPDX-License-Identifier: Apache-2.0
#include "hotline/model/mechanism.hpp"

#include <iterator>
#include <string>

namespace hotline {

std::string_view to_string(Mechanism m) {
    switch (m) {
        case Mechanism::kFentry: return "fentry";
        case Mechanism::kKprobe: return "kprobe";
        case Mechanism::kTracepoint: return "tracepoint";
        case Mechanism::kSampling: return "sampling";
        case Mechanism::kUnavailable: return "unavailable";
    }
    return "?";
}

std::string_view to_string(Fidelity f) {
    switch (f) {
        case Fidelity::kExact: return "exact";
        case Fidelity::kPartial: return "partial";
        case Fidelity::kSampled: return "sampled";
        case Fidelity::kNone: return "none";
    }
    return "?";
}

std::optional<Mechanism> parse_mechanism(std::string_view s) {
    for (Mechanism m : kMechanismOrder)
        if (to_string(m) == s) return m;
    return std::nullopt;
}

Result<std::optional<Mechanism>> parse_forced_mechanism(std::string_view s) {
    if (s.empty()) return std::optional<Mechanism>{};
    if (auto m = parse_mechanism(s)) return m;
    std::string names;
    const std::size_t n = std::size(kMechanismOrder);
    for (std::size_t i = 0; i < n; ++i) {
        if (i) names += i + 1 == n ? " or " : ", ";
        names += to_string(kMechanismOrder[i]);
    }
    return make_error("unknown mechanism \"" + std::string(s) + "\"", 0,
                      "use " + names + ", or leave --mechanism out to let the planner choose");
}

}  // namespace hotline
