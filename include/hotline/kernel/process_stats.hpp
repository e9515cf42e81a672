// SPDX-License-Identifier: Apache-2.0
// A process as procfs describes it: the numbers of the usual process_* metrics.
#pragma once

#include <cstdint>
#include <string>

#include "hotline/base/result.hpp"

namespace hotline {

struct ProcessStats {
    double cpu_seconds = 0;
    std::uint64_t resident_bytes = 0;
    std::uint64_t virtual_bytes = 0;
    std::uint64_t open_fds = 0;
    std::uint64_t max_fds = 0;
    double start_time_seconds = 0;  // since the epoch
};
// proc_root: "/proc" or a fixture tree; pid: "self" or a number.
Result<ProcessStats> read_process_stats(const std::string& proc_root = "/proc",
                                        const std::string& pid = "self");

}  // namespace hotline
