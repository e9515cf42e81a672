// SPDX-License-Identifier: Apache-2.0
#include "html_parts.hpp"

#include <fmt/format.h>

#include <cmath>

#include "hotline/report/output.hpp"

namespace hotline::html {

using nlohmann::json;
namespace ch = charts;

std::string esc(const std::string& s) { return xml_escape(s); }

double num(const json& j, const char* key) {
    if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return NAN;
    return j[key].get<double>();
}
std::string str(const json& j, const char* key) {
    if (!j.is_object() || !j.contains(key)) return "";
    const json& v = j[key];
    if (v.is_string()) return v.get<std::string>();
    if (v.is_null()) return "";
    return v.dump();
}
const json& member(const json& j, const char* key) {
    static const json kNull;
    return j.is_object() && j.contains(key) ? j[key] : kNull;
}
std::vector<double> numbers(const json& arr) {
    std::vector<double> v;
    if (arr.is_array())
        for (auto& x : arr) v.push_back(x.is_number() ? x.get<double>() : NAN);
    return v;
}

std::string object_label(const std::string& type, const std::string& target) {
    return type.empty() ? target : type + " (" + target + ")";
}

ch::CacheLine cache_line_of(const json& l, const std::string& kernel) {
    ch::CacheLine c;
    std::string type = str(l, "type");
    c.title = fmt::format("{} refcount line{}", type, kernel.empty() ? "" : " on " + kernel);
    c.line_start = long(std::isfinite(num(l, "line_start")) ? num(l, "line_start") : 0);
    c.anchor = str(l, "anchor");
    for (auto& f : member(l, "shares_line"))
        if (f.is_string()) c.flagged.push_back(f.get<std::string>());
    std::string flagged;
    for (auto& f : c.flagged) flagged += (flagged.empty() ? "" : ", ") + f;
    c.desc = fmt::format("Bytes {}..{} of struct {} ({}): the refcount {} at offset {} shares the line with {}.",
                         c.line_start, c.line_start + 63, type, kernel.empty() ? "this kernel" : kernel, c.anchor,
                         str(l, "anchor_offset"), flagged.empty() ? "no watched field" : flagged);
    for (auto& f : member(l, "fields_on_line")) {
        double off = num(f, "offset"), size = num(f, "size");
        if (std::isfinite(off) && std::isfinite(size)) c.fields.push_back({str(f, "field"), long(off), long(size)});
    }
    return c;
}

}  // namespace hotline::html
