// SPDX-License-Identifier: Apache-2.0
// What the HTML pages' sections share (html_parts.cpp): reading saved JSON
// defensively, since a page may be drawn from a file hotline did not write
// (a missing or mistyped member is "absent", never an exception), and the
// cache-line figure of a layout.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hotline/report/charts.hpp"

namespace hotline::html {

double num(const nlohmann::json& j, const char* key);             // NaN when absent
std::string str(const nlohmann::json& j, const char* key);        // "" when absent
const nlohmann::json& member(const nlohmann::json& j, const char* key);  // null when absent
std::vector<double> numbers(const nlohmann::json& arr);           // NaN for a non-number
std::string esc(const std::string& s);

// A tracked object named by its type, then the function that saw it
// ("work_struct (queue_work_on)"); the function alone when the type is unknown.
std::string object_label(const std::string& type, const std::string& target);

// A layout as written by to_json(LineLayout), on the kernel named.
charts::CacheLine cache_line_of(const nlohmann::json& layout, const std::string& kernel);

}  // namespace hotline::html
