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

// Whether the kernel's run statistics are on now, whoever turned them on (a
// BPF_ENABLE_STATS descriptor of any process, kernel.bpf_stats_enabled): a
// two-instruction socket filter run once through BPF_PROG_TEST_RUN, which the
// kernel counts in the program's statistics only while they are on.
class RunStatsCanary {
public:
    // nullopt where the kernel refuses the program or its test run.
    static std::optional<RunStatsCanary> load();
    // Runs the canary once: true when the kernel counted the run.
    bool counted();
    RunStatsCanary(RunStatsCanary&& o) noexcept;
    RunStatsCanary& operator=(RunStatsCanary&&) = delete;
    RunStatsCanary(const RunStatsCanary&) = delete;
    ~RunStatsCanary();

private:
    explicit RunStatsCanary(int fd) : fd_(fd) {}
    bool run_once();
    int fd_ = -1;
    std::uint64_t runs_ = 0;  // the kernel's count after the last run
};

}  // namespace hotline
