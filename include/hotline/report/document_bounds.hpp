// SPDX-License-Identifier: Apache-2.0
// What a recording from outside may hold before a page is drawn from it: the
// indices the pages use (CPU and node ids, per-CPU arrays, node matrices,
// histogram buckets) within what any machine has, so a hand-edited or hostile
// file can neither index out of range nor make a page grow without bound.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace hotline {

inline constexpr long kMaxDocCpus = 8192;   // the largest NR_CPUS Linux builds with
inline constexpr long kMaxDocNodes = 1024;  // MAX_NUMNODES at NODES_SHIFT 10
// hotline's histograms are log2 of nanoseconds: 64 buckets cover every u64.
inline constexpr std::size_t kMaxHistogramBuckets = 64;

// Problems, one line each naming where ("topology.cpus[0].node is -1 ..."),
// at most a few; empty when the recording is within bounds.
std::vector<std::string> recording_bound_problems(const nlohmann::json& doc);

}  // namespace hotline
