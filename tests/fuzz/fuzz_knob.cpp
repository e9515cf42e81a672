// SPDX-License-Identifier: Apache-2.0
// Knob names (sysctl, sysfs, IRQ) and network namespace names from fix catalogs,
// journals and the command line: a name that is accepted must map to a path that
// stays beneath its root.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "hotline/fix/journal.hpp"
#include "knob_path_check.hpp"

using namespace hotline;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view s(reinterpret_cast<const char*>(data), size);
    for (KnobKind k : {KnobKind::kSysctl, KnobKind::kSysfs, KnobKind::kIrqAffinity}) {
        auto rel = knob_relpath(k, s);
        if (rel) {
            if (!knob_path_stays_beneath_root(*rel)) __builtin_trap();
            (void)knob_display(k, s);
            (void)knob_can_be_per_netns(k, s);
        }
    }
    (void)parse_netns(s);
    (void)normalize_value(s);
    return 0;
}
