// SPDX-License-Identifier: Apache-2.0
// Finding rules (the [[rule]] tables of `--fixes DIR` files), read against the
// built-in catalog: an error names the file; an accepted rule names a fix of it.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "hotline/diagnose/diagnose.hpp"
#include "hotline/fix/fix.hpp"

using namespace hotline;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const FixCatalog catalog = *FixCatalog::builtin();
    std::string_view s(reinterpret_cast<const char*>(data), size);
    auto rules = RuleSet::parse(s, "rules.toml", catalog);
    if (!rules) {
        if (rules.error().message().find("rules.toml") == std::string::npos) __builtin_trap();
        return 0;
    }
    for (const RuleDef& r : rules->rules()) {
        if (rules->find(r.name) != &r) __builtin_trap();
        for (const auto& fix : r.fixes)
            if (!catalog.find(fix)) __builtin_trap();
    }
    (void)rule_knobs(*rules);
    return 0;
}
