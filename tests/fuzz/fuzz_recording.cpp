// SPDX-License-Identifier: Apache-2.0
// Recordings read back by `hotline diff` and `hotline diagnose`: the
// depth-limited JSON parser, the recording check, the diff of the document
// against itself under a built-in fix, and the diagnosis of its metrics.  Any
// document gives a verdict or an error, never an exception or a crash.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "hotline/diagnose/diagnose.hpp"
#include "hotline/fix/fix.hpp"
#include "hotline/base/json_limits.hpp"
#include "hotline/report/output.hpp"
#include "hotline/validate/validator.hpp"

using namespace hotline;

namespace {
struct Builtins {
    FixCatalog catalog = *FixCatalog::builtin();
    RuleSet rules = *RuleSet::builtin(catalog);
    const FixDef* fix = catalog.find("dst-refcnt-false-sharing") ? catalog.find("dst-refcnt-false-sharing")
                                                                 : &catalog.fixes().front();
};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const Builtins b;
    std::string_view s(reinterpret_cast<const char*>(data), size);
    auto doc = parse_json_limited(s);
    if (!doc) return 0;
    (void)check_recording(*doc);
    auto verdict = diff_recordings(*b.fix, *doc, *doc, "a.json", "b.json");
    if (verdict) (void)verdict->overall;
    auto in = input_from_recording(*doc, "a.json");
    if (in) (void)diagnose(b.rules, b.catalog, *in);
    return 0;
}
