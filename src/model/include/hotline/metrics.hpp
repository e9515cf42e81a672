// The neutral metrics model: cumulative snapshots of every target's per-CPU
// counters, their deltas, and per-node folds.  Renderers only read these.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "hotline/abi.h"
#include "hotline/mechanism.hpp"
#include "hotline/topology.hpp"

namespace hotline {

using Log2Hist = std::array<std::uint64_t, HL_HIST_SLOTS>;

// Handoffs of one target's objects between CPUs.  Per-CPU vectors are indexed by
// the CPU that touched the object after another had; matrix[from][to] by node.
struct HandoffCounters {
    std::vector<std::uint64_t> tracked;
    std::vector<std::uint64_t> same_cpu;
    std::vector<std::uint64_t> cross_cpu;   // another CPU, same node
    std::vector<std::uint64_t> cross_node;  // a CPU of another node
    std::vector<std::uint64_t> new_objects;
    std::vector<std::uint64_t> remote;      // requested CPU != queueing CPU
    std::vector<std::vector<std::uint64_t>> matrix;  // [from node][to node]
    std::uint64_t live_objects = 0;  // entries in the owner map now (a gauge)
    std::uint64_t capacity = 0;      // owner map size
    std::uint64_t evictions = 0;     // objects pushed out of the bounded map
    int sample = 1;                  // 1 of N objects tracked

    std::uint64_t total(const std::vector<std::uint64_t>& v) const;
    std::uint64_t handoffs() const { return total(cross_cpu) + total(cross_node); }
};

// One object from the owner map, named by a stable per-session id.
struct HotObject {
    std::string target;
    std::string type;         // BTF type name
    std::uint64_t id = 0;     // stable id within the session, never the address
    std::uint64_t handoffs = 0;
    std::uint64_t cross_node = 0;
    int last_cpu = -1;
    std::string detail;       // work items: the work function
};

// queue_work_on attribution from the workqueue tracepoints.
struct WorkqCounters {
    std::vector<std::uint64_t> irqs;      // hard interrupts per CPU
    std::vector<std::uint64_t> queued;    // work items queued per CPU
    std::vector<std::uint64_t> remote;    // of which for another CPU
    std::vector<std::uint64_t> executed;
    std::uint64_t lat_count = 0, lat_sum_ns = 0, lat_lost = 0;
    std::array<std::uint64_t, HL_HIST_SLOTS> hist{};  // queue -> execute, log2 ns
    std::map<std::string, std::uint64_t> funcs;       // symbolized work function -> queued
};

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
    bool has_handoffs = false;
    std::string object_type;
    HandoffCounters handoffs;

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
    std::vector<HotObject> objects;       // cumulative per object
    bool has_workq = false;
    WorkqCounters workq;

    const TargetCounters* find(const std::string& target) const;
};

// Objects ordered by cross-node handoffs, then all handoffs; at most n.
std::vector<HotObject> top_objects(const std::vector<HotObject>& objs, std::size_t n);

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
