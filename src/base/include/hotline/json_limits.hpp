// JSON from outside (recordings, journals) parsed with a depth limit, so a
// hostile document cannot exhaust the stack in the recursive copies and dumps
// that follow.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string_view>

#include "hotline/result.hpp"

namespace hotline {

// Deeper than any document hotline writes (recordings nest about 8 levels).
inline constexpr int kMaxJsonDepth = 64;

// The parsed document, or an error naming the byte offset of a syntax error or
// the depth limit that was passed.
Result<nlohmann::json> parse_json_limited(std::string_view text, int max_depth = kMaxJsonDepth);

}  // namespace hotline
