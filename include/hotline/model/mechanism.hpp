// SPDX-License-Identifier: Apache-2.0
// How a target is observed (the mechanism) and how faithful its counts are.
#pragma once

#include <optional>
#include <string_view>

#include "hotline/base/result.hpp"

namespace hotline {

enum class Mechanism { kFentry, kKprobe, kTracepoint, kSampling, kUnavailable };
enum class Fidelity { kExact, kPartial, kSampled, kNone };

std::string_view to_string(Mechanism m);
std::string_view to_string(Fidelity f);
std::optional<Mechanism> parse_mechanism(std::string_view s);
// A --mechanism option: empty lets the planner choose; anything else must name one
// mechanism, or the error says which names are valid.
Result<std::optional<Mechanism>> parse_forced_mechanism(std::string_view s);

// The attach order the planner walks.
inline constexpr Mechanism kMechanismOrder[] = {Mechanism::kFentry, Mechanism::kKprobe,
                                                Mechanism::kTracepoint, Mechanism::kSampling};

}  // namespace hotline
