// SPDX-License-Identifier: Apache-2.0
// Run statistics of a loaded BPF program (bpf_prog_info run_cnt/run_time_ns):
// counted by the kernel while BPF_STATS_RUN_TIME is enabled.
#pragma once

#include <cstdint>
#include <optional>

struct bpf_object;

namespace hotline {

struct ProgRunStats {
    std::uint64_t run_cnt = 0;
    std::uint64_t run_time_ns = 0;
    std::uint64_t recursion_misses = 0;
    double ns_per_run() const { return run_cnt ? double(run_time_ns) / double(run_cnt) : 0.0; }
};

// By program fd; nullopt when the kernel does not answer.
std::optional<ProgRunStats> prog_run_stats(int prog_fd);
// By program name in a loaded object; nullopt when it is not there or not loaded.
std::optional<ProgRunStats> prog_run_stats(const bpf_object* obj, const char* name);

}  // namespace hotline
