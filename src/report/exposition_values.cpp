// SPDX-License-Identifier: Apache-2.0
// The exposition formats' escaping and number spelling, and the latency
// histogram's bucket bounds.
#include <cmath>
#include <cstdint>
#include <fmt/format.h>
#include <string>
#include <string_view>

#include "hotline/report/prometheus.hpp"

namespace hotline {

std::string escape_label_value(std::string_view v) {
    std::string out;
    out.reserve(v.size());
    const auto* p = reinterpret_cast<const unsigned char*>(v.data());
    std::size_t n = v.size(), i = 0;
    while (i < n) {
        unsigned char c = p[i];
        if (c == '\\') {
            out += "\\\\";
        } else if (c == '"') {
            out += "\\\"";
        } else if (c == '\n') {
            out += "\\n";
        } else if (c < 0x80) {
            out += char(c);
        } else {
            // Scrapers reject invalid UTF-8 in the whole scrape; replace the bad byte.
            int len = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
            bool good = len > 0 && i + len <= n;
            for (int k = 1; good && k < len; ++k) good = (p[i + k] & 0xC0) == 0x80;
            if (good) {
                std::uint32_t cp = c & (0xFF >> (len + 1));
                for (int k = 1; k < len; ++k) cp = (cp << 6) | (p[i + k] & 0x3F);
                static constexpr std::uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
                good = cp >= kMin[len] && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
            }
            if (good) {
                out.append(v.data() + i, std::size_t(len));
                i += std::size_t(len);
                continue;
            }
            out += "\xEF\xBF\xBD";
        }
        ++i;
    }
    return out;
}

std::string format_sample_value(double v) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
    return fmt::format("{}", v);
}

double latency_le_seconds(int slot) {
    // Slot i holds integer nanoseconds in [2^i, 2^(i+1) - 1] (slot 0 also holds 0), so
    // "<= 2^(i+1) - 1 ns" is exact; the last slot is open-ended.
    if (slot >= HL_HIST_SLOTS - 1) return INFINITY;
    if (slot < 0) slot = 0;
    return double((std::uint64_t(1) << (slot + 1)) - 1) / 1e9;
}

}  // namespace hotline
