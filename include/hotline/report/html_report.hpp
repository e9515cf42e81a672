// SPDX-License-Identifier: Apache-2.0
// The self-contained HTML report: one page of inline SVG and CSS (no script,
// font or network fetch) for any document hotline saves, chosen by its
// "schema".  Built from the saved JSON, so `--html` at the end of a run and
// `hotline report FILE.json` later give the same page.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "hotline/base/result.hpp"

namespace hotline {

struct HtmlInput {
    nlohmann::json doc;   // a recording or a verdict ("schema")
    std::string source;   // where it came from, shown in the header (may be empty)
    // A `diff` verdict: the two recordings it compared, for the layouts side by side.
    std::optional<nlohmann::json> baseline, candidate;
};

// A page is at most this many times its documents' JSON plus a fixed part
// (style, headers, empty charts); hotline's own documents give 1-4 times.
inline constexpr std::size_t kMaxPageGrowth = 16;
inline constexpr std::size_t kPageBaseBytes = 256 * 1024;
std::size_t max_page_bytes(const HtmlInput& in);

// The page, or an error naming the schema when it is not one hotline renders
// (or the recording out of bounds, or the page past max_page_bytes).
Result<std::string> render_html(const HtmlInput& in);

// The schemas render_html accepts, for error messages and help.
std::vector<std::string> html_schemas();

}  // namespace hotline
