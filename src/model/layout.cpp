// SPDX-License-Identifier: Apache-2.0
#include "hotline/model/layout.hpp"

#include <fmt/format.h>

namespace hotline {

std::string describe(const LineLayout& l) {
    std::string s = fmt::format("{} ({} bytes): {} at byte {}, cache line {}..{}", l.type, l.type_size, l.anchor,
                                l.anchor_offset, l.line_start, l.line_start + kCacheLine - 1);
    s += "\n    fields on that line:";
    for (auto& f : l.on_line) s += fmt::format(" {}@{}", f.path, f.offset);
    if (!l.flagged.empty()) {
        s += "\n    shares the line with:";
        for (auto& f : l.flagged) s += " " + f;
    }
    if (!l.clear.empty()) {
        s += "\n    on other lines:";
        for (auto& f : l.clear) s += " " + f;
    }
    return s;
}

}  // namespace hotline
