// SPDX-License-Identifier: Apache-2.0
// Content negotiation for /metrics: the exposition format an Accept header asks
// for, and the Content-Type that answers it.
#include "negotiation.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "hotline/base/util.hpp"

namespace hotline {

namespace {

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out)
        if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
    return out;
}

struct MediaRange {
    std::string type;  // "application/openmetrics-text", "text/plain", "*/*" ...
    std::string version;
    double q = 1.0;
};

std::vector<MediaRange> parse_accept(std::string_view accept) {
    std::vector<MediaRange> out;
    while (!accept.empty()) {
        auto comma = accept.find(',');
        std::string_view item = accept.substr(0, comma);
        accept = comma == std::string_view::npos ? std::string_view{} : accept.substr(comma + 1);
        MediaRange r;
        bool first = true;
        while (true) {
            auto semi = item.find(';');
            std::string_view part = trim(item.substr(0, semi));
            if (first) {
                r.type = lower(part);
                first = false;
            } else if (auto eq = part.find('='); eq != std::string_view::npos) {
                std::string key = lower(trim(part.substr(0, eq)));
                std::string_view val = trim(part.substr(eq + 1));
                if (val.size() >= 2 && val.front() == '"' && val.back() == '"')
                    val = val.substr(1, val.size() - 2);
                if (key == "q") {
                    char* end = nullptr;
                    std::string v(val);
                    double q = std::strtod(v.c_str(), &end);
                    r.q = (end == v.c_str() || !std::isfinite(q)) ? 0.0 : std::clamp(q, 0.0, 1.0);
                } else if (key == "version") {
                    r.version = std::string(val);
                }
            }
            if (semi == std::string_view::npos) break;
            item = item.substr(semi + 1);
        }
        if (!r.type.empty()) out.push_back(std::move(r));
    }
    return out;
}

}  // namespace

ExpositionFormat negotiate_exposition(std::string_view accept) {
    double om = 0, text = 0;
    bool text_named = false;
    for (const auto& r : parse_accept(accept)) {
        if (r.type == "application/openmetrics-text") {
            if (r.version.empty() || r.version == "1.0.0" || r.version == "0.0.1") om = std::max(om, r.q);
        } else if (r.type == "text/plain") {
            if (r.version.empty() || r.version == "0.0.4") text = std::max(text, r.q);
            text_named = true;
        } else if (r.type == "*/*" || r.type == "text/*") {
            if (!text_named) text = std::max(text, r.q);
        }
    }
    // A tie goes to OpenMetrics: a scraper naming it at all asked for it.
    return om > 0 && om >= text ? ExpositionFormat::kOpenMetrics100 : ExpositionFormat::kText004;
}

std::string_view content_type(ExpositionFormat f) {
    return f == ExpositionFormat::kOpenMetrics100
               ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
               : "text/plain; version=0.0.4; charset=utf-8";
}

}  // namespace hotline
