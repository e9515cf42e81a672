// SPDX-License-Identifier: Apache-2.0
// The invariant every fuzz target that reaches a knob path checks: a path hotline
// would write is relative and stays beneath its root.  Components are judged
// whole: "..pid" is a name (a valid interface name), only "." and ".." step.
#pragma once

#include <cstddef>
#include <string_view>

inline bool knob_path_stays_beneath_root(std::string_view p) {
    if (p.empty() || p.front() == '/' || p.find('\0') != std::string_view::npos) return false;
    for (std::size_t start = 0;;) {
        std::size_t end = p.find('/', start);
        std::string_view comp = p.substr(start, end == std::string_view::npos ? end : end - start);
        if (comp.empty() || comp == "." || comp == "..") return false;
        if (end == std::string_view::npos) return true;
        start = end + 1;
    }
}
