// SPDX-License-Identifier: Apache-2.0
// Depth-limited JSON parsing for documents read from files.
#include "hotline/base/json_limits.hpp"

#include <fmt/format.h>

#include <cstdint>

namespace hotline {

namespace {

struct TooDeep {};

}  // namespace

Result<nlohmann::json> parse_json_limited(std::string_view text, int max_depth) {
    // The callback sees each container as it opens, before anything deeper is built.
    auto guard = [max_depth](int depth, nlohmann::json::parse_event_t ev, nlohmann::json&) {
        if (depth > max_depth &&
            (ev == nlohmann::json::parse_event_t::object_start || ev == nlohmann::json::parse_event_t::array_start))
            throw TooDeep{};
        return true;
    };
    try {
        return nlohmann::json::parse(text.begin(), text.end(), guard);
    } catch (const TooDeep&) {
        return make_error(fmt::format("JSON nested deeper than {} levels", max_depth), EINVAL,
                          "docs/limits.md lists the input limits");
    } catch (const nlohmann::json::exception& e) {
        return make_error(std::string("not valid JSON: ") + e.what(), EINVAL);
    }
}

namespace {

const nlohmann::json* field(const nlohmann::json& j, const char* key) {
    if (!j.is_object()) return nullptr;
    auto it = j.find(key);
    return it == j.end() ? nullptr : &*it;
}

}  // namespace

std::string string_or(const nlohmann::json& j, const char* key, std::string fallback) {
    const auto* v = field(j, key);
    return v && v->is_string() ? v->get<std::string>() : fallback;
}

bool bool_or(const nlohmann::json& j, const char* key, bool fallback) {
    const auto* v = field(j, key);
    return v && v->is_boolean() ? v->get<bool>() : fallback;
}

std::optional<std::int64_t> int_field(const nlohmann::json& j, const char* key) {
    const auto* v = field(j, key);
    if (!v) return std::nullopt;
    if (v->is_number_unsigned())
        return v->get<std::uint64_t>() <= std::uint64_t(INT64_MAX) ? std::optional(std::int64_t(v->get<std::uint64_t>()))
                                                                    : std::nullopt;
    if (v->is_number_integer()) return v->get<std::int64_t>();
    return std::nullopt;
}

std::optional<std::uint64_t> uint_field(const nlohmann::json& j, const char* key) {
    const auto* v = field(j, key);
    if (!v) return std::nullopt;
    if (v->is_number_unsigned()) return v->get<std::uint64_t>();
    if (v->is_number_integer() && v->get<std::int64_t>() >= 0) return std::uint64_t(v->get<std::int64_t>());
    return std::nullopt;
}

}  // namespace hotline
