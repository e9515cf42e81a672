// SPDX-License-Identifier: Apache-2.0
// What a recording with discovery stores under "discover": per struct type the
// touches and handoffs (estimated from the sampled objects), its hottest
// objects, the attach points that hand it over, and the layouts of the top types.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "hotline/probe/discovery.hpp"

namespace hotline {

// What a touch is, said with every result.
inline constexpr const char* kTouchMeaning =
    "a touch is an attach point seeing a pointer to the object, not a memory access: a handoff means the "
    "object passed through the kernel on another CPU than the last time it was seen";

// `layouts`: a struct's line layout (to_json) by type name, for the types the
// slots pass; only the `top` types by handoffs keep theirs.  Rates are per
// second the programs were attached; `seconds`, the recording's length, prices
// their cost.
nlohmann::json discover_analysis(const Discovery& d, const DiscoverReading& r,
                                 const std::map<std::string, nlohmann::json>& layouts, double seconds,
                                 std::size_t top);

}  // namespace hotline
