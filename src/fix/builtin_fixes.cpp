// SPDX-License-Identifier: Apache-2.0
// The built-in fix catalog: builtin_fixes.toml, compiled in as a string (see the
// top CMakeLists.txt) and parsed by the same code as `--fixes DIR` files.  Facts
// and commit ids: shared/reference/kernel-facts.md.  Metric names are the
// validator's vocabulary (docs/validate-design.md).  Lines of the TOML file are
// the "builtin:N" sources reports show, so a comment added at its top moves them.
#include "hotline/fix/fix.hpp"

namespace hotline {

std::string_view builtin_catalog_text() {
    static constexpr std::string_view kBuiltin =
#include "builtin_fixes.toml.inc"
        ;
    return kBuiltin;
}

}  // namespace hotline
