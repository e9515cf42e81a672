// SPDX-License-Identifier: Apache-2.0
// The verdict page's picture of what was contended and what the fix changed
// (verdict_html.cpp); html_report.cpp places it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace hotline {

// "" when the verdict carries no "contention" (no tracked object, or a diff).
std::string contention_section(const nlohmann::json& verdict);

}  // namespace hotline
