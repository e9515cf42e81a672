// SPDX-License-Identifier: Apache-2.0
// Renderers for `hotline fixes` and for embedding fixes in verdicts and recordings.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>

#include "hotline/fix/fix.hpp"

namespace hotline {

nlohmann::json to_json(const FixDef& f);
nlohmann::json to_json(const Applicability& a);
void render_fix_list_text(std::ostream& os, const FixCatalog& cat, const KernelFacts* facts);
void render_fix_text(std::ostream& os, const FixDef& f, const Applicability* here);

}  // namespace hotline
