// The neutral metrics model: cumulative snapshots of every target's per-CPU
// counters, their deltas, and per-node folds.  Renderers only read these.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "hotline/abi.h"
#include "hotline/catalog.hpp"
#include "hotline/kernel.hpp"

namespace hotline {

using Log2Hist = std::array<std::uint64_t, HL_HIST_SLOTS>;

struct TargetCounters {
    std::string target;
    Mechanism mechanism = Mechanism::kUnavailable;
    Fidelity fidelity = Fidelity::kNone;
    std::vector<std::uint64_t> calls;   // index = cpu id
    std::vector<std::uint64_t> events;  // program runs / events seen, index = cpu id
    bool has_latency = false;
    std::uint64_t lat_count = 0;
    std::uint64_t lat_sum_ns = 0;
    std::uint64_t lat_lost = 0;
    Log2Hist hist{};

    std::uint64_t total_calls() const;
};

struct ProgCost {
    std::string target;
    std::string program;
    std::uint64_t run_cnt = 0;
    std::uint64_t run_time_ns = 0;
    std::uint64_t recursion_misses = 0;  // runs the kernel skipped: counted as drops

    double ns_per_run() const { return run_cnt ? double(run_time_ns) / double(run_cnt) : 0.0; }
};

// Cumulative state at one instant (t is CLOCK_MONOTONIC seconds).
struct Snapshot {
    double t = 0;
    std::vector<TargetCounters> targets;
    std::vector<std::uint64_t> samples_total;   // sampling program, per cpu
    std::vector<std::uint64_t> samples_kernel;  // of which in kernel mode
    std::vector<ProgCost> cost;

    const TargetCounters* find(const std::string& target) const;
};

// later - earlier, counter by counter; t_start/t_end bound the interval.
struct Interval {
    double t_start = 0;
    double t_end = 0;
    Snapshot d;  // d.t == t_end - t_start
    double seconds() const { return t_end - t_start; }
};
Interval delta(const Snapshot& earlier, const Snapshot& later);

// Sums per-CPU counts per NUMA node (every node of the topology appears).
std::map<int, std::uint64_t> fold_by_node(const std::vector<std::uint64_t>& per_cpu,
                                          const Topology& topo);

// Share (0..1) of all samples on the given CPUs that landed in the target.
double sampled_share(const TargetCounters& t, const std::vector<std::uint64_t>& samples_total);

// Lower bound of a log2 histogram slot in ns (slot 0 covers 0..1).
std::uint64_t hist_slot_low(int slot);

}  // namespace hotline
