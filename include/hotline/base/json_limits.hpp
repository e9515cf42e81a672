// SPDX-License-Identifier: Apache-2.0
// JSON from outside (recordings, journals) parsed with a depth limit, so a
// hostile document cannot exhaust the stack in the recursive copies and dumps
// that follow.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <nlohmann/json.hpp>
#include <string_view>

#include "hotline/base/result.hpp"

namespace hotline {

// Deeper than any document hotline writes (recordings nest about 8 levels).
inline constexpr int kMaxJsonDepth = 64;

// The parsed document, or an error naming the byte offset of a syntax error or
// the depth limit that was passed.
Result<nlohmann::json> parse_json_limited(std::string_view text, int max_depth = kMaxJsonDepth);

// Typed reads of a field of such a document.  nlohmann's value() throws
// type_error when the field has another type and converts a float to an integer
// without a range check (undefined behaviour); these give the fallback, or
// nullopt, for a field that is missing, of another type, or out of range.
std::string string_or(const nlohmann::json& j, const char* key, std::string fallback);
bool bool_or(const nlohmann::json& j, const char* key, bool fallback);
std::optional<std::int64_t> int_field(const nlohmann::json& j, const char* key);
std::optional<std::uint64_t> uint_field(const nlohmann::json& j, const char* key);

}  // namespace hotline
