// SPDX-License-Identifier: Apache-2.0
// The BPF programs a registry entry's tracepoint proxy names, checked against
// the built objects (for the registry's unit test).
#pragma once

#include <string>
#include <vector>

#include "hotline/targets/targets.hpp"

namespace hotline {

// Program names of the target's proxy that its BPF objects lack (empty: all there).
// Opens the objects without loading them: needs no privileges.
std::vector<std::string> missing_proxy_programs(const TargetDef& t);

}  // namespace hotline
