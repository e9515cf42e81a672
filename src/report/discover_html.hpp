// SPDX-License-Identifier: Apache-2.0
// The recording page's sections for a `hotline discover` recording
// (discover_html.cpp); html_report.cpp places them.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace hotline {

// "" when the recording has no discovered type.
std::string discover_sections(const nlohmann::json& doc, std::size_t top);

}  // namespace hotline
