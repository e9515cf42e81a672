// SPDX-License-Identifier: Apache-2.0
// Verdict renderers: text, JSON (schema hotline.verdict) and JUnit, to injected
// streams so they are tested without root.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>

#include "hotline/model/verdict.hpp"

namespace hotline {

// With `colour`, verdicts and the criteria that missed in terminal colours.
void render_verdict_text(std::ostream& os, const VerdictReport& r, bool colour = false);
nlohmann::json verdict_to_json(const VerdictReport& r);
void render_verdict_json(std::ostream& os, const VerdictReport& r);
void render_junit(std::ostream& os, const VerdictReport& r);

}  // namespace hotline
