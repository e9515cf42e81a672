// SPDX-License-Identifier: Apache-2.0
// The text of every JSON document hotline prints or writes.
#include "hotline/report/output.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>

namespace hotline {

namespace {

using ojson = nlohmann::ordered_json;

// The keys a document (an object with a "schema", embedded ones too) starts with.
constexpr std::array<const char*, 3> kHeadKeys = {"schema", "version", "tool"};

// A measured or derived value carries at most this many significant digits: a
// rate computed as 0.1 - 0.05 is written 0.05, not 0.050000000000000044.
constexpr int kDocumentDigits = 12;

double at_document_precision(double v) {
    if (!std::isfinite(v)) return v;
    char buf[40];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, kDocumentDigits);
    if (ec != std::errc()) return v;
    double out = v;
    std::from_chars(buf, end, out);
    return out;
}

ojson ordered(const nlohmann::json& j) {
    using t = nlohmann::json::value_t;
    switch (j.type()) {
        case t::object: {
            ojson o = ojson::object();
            const bool document = j.contains("schema");
            if (document)
                for (const char* k : kHeadKeys)
                    if (auto it = j.find(k); it != j.end()) o[k] = ordered(*it);
            for (auto it = j.begin(); it != j.end(); ++it)
                if (!document || std::find(kHeadKeys.begin(), kHeadKeys.end(), it.key()) == kHeadKeys.end())
                    o[it.key()] = ordered(it.value());
            return o;
        }
        case t::array: {
            ojson a = ojson::array();
            for (const auto& v : j) a.push_back(ordered(v));
            return a;
        }
        case t::number_float: return at_document_precision(j.get<double>());
        case t::number_integer: return j.get<std::int64_t>();
        case t::number_unsigned: return j.get<std::uint64_t>();
        case t::boolean: return j.get<bool>();
        case t::string: return j.get<std::string>();
        default: return nullptr;
    }
}

}  // namespace

std::string document_text(const nlohmann::json& doc, int indent) { return ordered(doc).dump(indent) + "\n"; }

}  // namespace hotline
