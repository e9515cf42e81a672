// Depth-limited JSON parsing for documents read from files.
#include "hotline/json_limits.hpp"

#include <fmt/format.h>

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

}  // namespace hotline
