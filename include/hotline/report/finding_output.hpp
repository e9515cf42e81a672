// SPDX-License-Identifier: Apache-2.0
// Renderers of a diagnosis: the full text of `hotline diagnose`, the one line per
// finding `hotline record` ends with, and the JSON document (docs/diagnose.md).
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <ostream>

#include "hotline/model/finding.hpp"

namespace hotline {

inline constexpr const char* kFindingsSchema = "hotline.findings";
inline constexpr int kFindingsVersion = 1;

nlohmann::json to_json(const Evidence& e);
nlohmann::json to_json(const FixAdvice& a);
nlohmann::json to_json(const Finding& f);
nlohmann::json to_json(const Diagnosis& d);  // the versioned document

void render_diagnosis_text(std::ostream& os, const Diagnosis& d);
// "finding: RULE (severity): summary -> fix, fix" for the first `top` findings,
// or one line saying nothing was found.
void render_findings_brief(std::ostream& os, const Diagnosis& d, std::size_t top);

}  // namespace hotline
