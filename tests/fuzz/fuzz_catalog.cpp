// SPDX-License-Identifier: Apache-2.0
// Fix catalogs (`--fixes DIR`, *.toml with [[fix]] tables): an error names the
// file; an accepted fix's knob names stay beneath their roots.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "hotline/fix/fix.hpp"
#include "hotline/fix/journal.hpp"

using namespace hotline;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view s(reinterpret_cast<const char*>(data), size);
    auto cat = FixCatalog::parse(s, "fixes.toml");
    if (!cat) {
        if (cat.error().message().find("fixes.toml") == std::string::npos) __builtin_trap();
        return 0;
    }
    for (const FixDef& f : cat->fixes()) {
        if (f.name.empty() || cat->find(f.name) != &f) __builtin_trap();
        for (const Change& c : f.changes) (void)c.describe();
        for (const Check& c : f.checks) (void)c.describe();
    }
    (void)cat->names();
    return 0;
}
