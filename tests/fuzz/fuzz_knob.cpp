// Knob names (sysctl, sysfs, IRQ) and network namespace names from fix catalogs,
// journals and the command line: a name that is accepted must map to a path that
// stays beneath its root.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "hotline/journal.hpp"

using namespace hotline;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view s(reinterpret_cast<const char*>(data), size);
    for (KnobKind k : {KnobKind::kSysctl, KnobKind::kSysfs, KnobKind::kIrqAffinity}) {
        auto rel = knob_relpath(k, s);
        if (rel) {
            // Beneath the root: relative, no empty, "." or ".." component, no NUL.
            const std::string& p = *rel;
            if (p.empty() || p.front() == '/' || p.find('\0') != std::string::npos) __builtin_trap();
            for (std::size_t start = 0;;) {
                std::size_t end = p.find('/', start);
                std::string_view comp = std::string_view(p).substr(start, end == std::string::npos ? end : end - start);
                if (comp.empty() || comp == "." || comp == "..") __builtin_trap();
                if (end == std::string::npos) break;
                start = end + 1;
            }
            (void)knob_display(k, s);
            (void)knob_can_be_per_netns(k, s);
        }
    }
    (void)parse_netns(s);
    (void)normalize_value(s);
    return 0;
}
