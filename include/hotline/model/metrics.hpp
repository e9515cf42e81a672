// SPDX-License-Identifier: Apache-2.0
// The neutral metrics model: cumulative snapshots of every target's per-CPU
// counters, their deltas, and per-node folds.  Renderers only read these.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "hotline/model/abi.h"
#include "hotline/model/fields.hpp"
#include "hotline/model/mechanism.hpp"
#include "hotline/model/topology.hpp"

namespace hotline {

// Handoffs of one target's objects between CPUs.  Per-CPU vectors are indexed by
// the CPU that touched the object after another had; matrix[from][to] by node.
struct HandoffCounters {
    std::vector<std::uint64_t> tracked;     // hits that went through tracking
    std::vector<std::uint64_t> same_cpu;
    std::vector<std::uint64_t> cross_cpu;   // another CPU, same node
    std::vector<std::uint64_t> cross_node;  // a CPU of another node
    std::vector<std::uint64_t> new_objects;
    std::vector<std::uint64_t> remote;      // requested CPU != queueing CPU
    std::vector<std::uint64_t> windowed;    // calls while tracking was on (the tracking windows' calls)
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
    Log2Hist hist{};                                  // queue -> execute, log2 ns
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
    // Runs the kernel timed.  A session times 100 ms at a random point of each
    // second (RunStatsWindow), and run_cnt and run_time_ns are then estimates of every
    // run scaled from these; with the statistics on throughout, equal to run_cnt.
    std::uint64_t timed_runs = 0;

    double ns_per_run() const { return run_cnt ? double(run_time_ns) / double(run_cnt) : 0.0; }
};

// Cumulative state at one instant (t is CLOCK_MONOTONIC seconds).
struct Snapshot {
    double t = 0;
    // Seconds the programs were attached since the session opened, and the share
    // of each period they are (SessionOptions::duty_percent): counters cover the
    // attached time only, so rates are per attached second.
    double attached_s = 0;
    int duty_percent = 100;
    // Seconds handoff tracking was on, and its share of each period
    // (SessionOptions::track_percent): handoff counts cover that time only.
    double tracking_s = 0;
    int track_percent = 100;
    // The period of those windows (SessionOptions::duty_period); 0 when the
    // programs are attached and tracking throughout.
    double duty_period_s = 0;
    std::vector<TargetCounters> targets;
    std::vector<std::uint64_t> samples_total;   // sampling program, per cpu
    std::vector<std::uint64_t> samples_kernel;  // of which in kernel mode
    std::vector<ProgCost> cost;
    std::vector<HotObject> objects;       // cumulative per object
    bool has_workq = false;
    WorkqCounters workq;

    const TargetCounters* find(const std::string& target) const;
};

// ------------------------------------------------------------ field tables
// Every counter of the model, read from BPF by the session and carried by
// delta(), the recording and /metrics.  A new BPF counter is its abi.h slot, the
// program that counts it, a member above and an entry here.  Within a table,
// exported fields appear in /metrics, and text columns in the per-CPU text
// table, in table order.

inline constexpr Field<TargetCounters> kTargetFields[] = {
    {.name = "calls",
     .abi = AbiSource::kHitsSlot,
     .abi_offset = offsetof(hl_hits, t[0].calls),
     .per_cpu = &TargetCounters::calls,
     .prom = {.name = "hotline_calls",
              .help = "Hits on the target function (for a tracepoint proxy: matching events; for sampling: "
                      "samples whose IP was in the function), per NUMA node.",
              .capped = true},
     .fold = Fold::kByNode},
    {.name = "events",
     .abi = AbiSource::kHitsSlot,
     .abi_offset = offsetof(hl_hits, t[0].events),
     .per_cpu = &TargetCounters::events},
    {.name = "count",
     .json_group = "latency",
     .abi = AbiSource::kCounts,
     .abi_offset = offsetof(hl_counts, lat_count),
     .value = &TargetCounters::lat_count},
    {.name = "sum_ns",
     .json_group = "latency",
     .abi = AbiSource::kCounts,
     .abi_offset = offsetof(hl_counts, lat_sum_ns),
     .value = &TargetCounters::lat_sum_ns},
    {.name = "lost",
     .json_group = "latency",
     .abi = AbiSource::kCounts,
     .abi_offset = offsetof(hl_counts, lat_lost),
     .value = &TargetCounters::lat_lost},
    {.name = "log2_slots",
     .json_group = "latency",
     .abi = AbiSource::kCounts,
     .abi_offset = offsetof(hl_counts, hist),
     .hist = &TargetCounters::hist},
};

inline constexpr Field<HandoffCounters> kHandoffFields[] = {
    {.name = "same_cpu",
     .abi = AbiSource::kHandoffCounts,
     .abi_offset = offsetof(hl_handoff_counts, same_cpu),
     .per_cpu = &HandoffCounters::same_cpu,
     .text = "same"},
    {.name = "cross_cpu",
     .abi = AbiSource::kHandoffCounts,
     .abi_offset = offsetof(hl_handoff_counts, cross_cpu),
     .per_cpu = &HandoffCounters::cross_cpu,
     .text = "cross-cpu"},
    {.name = "cross_node",
     .abi = AbiSource::kHandoffCounts,
     .abi_offset = offsetof(hl_handoff_counts, cross_node),
     .per_cpu = &HandoffCounters::cross_node,
     .prom = {.name = "hotline_cross_node_handoffs",
              .help = "Handoffs whose from_node and to_node differ (the off-diagonal of hotline_handoffs_total).",
              .capped = true},
     .text = "cross-node"},
    {.name = "tracked",
     .abi = AbiSource::kHandoffCounts,
     .abi_offset = offsetof(hl_handoff_counts, tracked),
     .per_cpu = &HandoffCounters::tracked,
     .prom = {.name = "hotline_handoff_tracked_hits",
              .help = "Hits that went through handoff tracking (after probe.handoff_sample): the denominator "
                      "of handoff shares.",
              .capped = true}},
    {.name = "new_objects",
     .abi = AbiSource::kHandoffCounts,
     .abi_offset = offsetof(hl_handoff_counts, new_objects),
     .per_cpu = &HandoffCounters::new_objects},
    {.name = "remote",
     .abi = AbiSource::kHandoffCounts,
     .abi_offset = offsetof(hl_handoff_counts, remote),
     .per_cpu = &HandoffCounters::remote,
     .text = "remote"},
    {.name = "windowed",
     .abi = AbiSource::kHandoffCounts,
     .abi_offset = offsetof(hl_handoff_counts, windowed),
     .per_cpu = &HandoffCounters::windowed},
    {.name = "live_objects",
     .value = &HandoffCounters::live_objects,
     .gauge = true,
     .prom = {.name = "hotline_handoff_live_objects",
              .type = MetricType::kGauge,
              .help = "Objects in the bounded owner map now (its capacity is hotline_handoff_owner_capacity)."}},
    {.name = "capacity",
     .value = &HandoffCounters::capacity,
     .gauge = true,
     .prom = {.name = "hotline_handoff_owner_capacity",
              .type = MetricType::kGauge,
              .help = "Entries the owner map holds before evicting."}},
    {.name = "evictions",
     .abi = AbiSource::kHandoffCounts,
     .abi_offset = offsetof(hl_handoff_counts, evicted),
     .value = &HandoffCounters::evictions},
};

inline constexpr Field<WorkqCounters> kWorkqFields[] = {
    {.name = "irqs",
     .abi = AbiSource::kWorkqCounts,
     .abi_offset = offsetof(hl_workq_counts, irqs),
     .per_cpu = &WorkqCounters::irqs,
     .text = "irqs"},
    {.name = "queued",
     .abi = AbiSource::kWorkqCounts,
     .abi_offset = offsetof(hl_workq_counts, queued),
     .per_cpu = &WorkqCounters::queued,
     .text = "queued"},
    {.name = "remote",
     .abi = AbiSource::kWorkqCounts,
     .abi_offset = offsetof(hl_workq_counts, remote),
     .per_cpu = &WorkqCounters::remote,
     .text = "remote"},
    {.name = "executed",
     .abi = AbiSource::kWorkqCounts,
     .abi_offset = offsetof(hl_workq_counts, executed),
     .per_cpu = &WorkqCounters::executed},
    {.name = "count",
     .json_group = "queue_to_execute",
     .abi = AbiSource::kWorkqCounts,
     .abi_offset = offsetof(hl_workq_counts, lat_count),
     .value = &WorkqCounters::lat_count},
    {.name = "sum_ns",
     .json_group = "queue_to_execute",
     .abi = AbiSource::kWorkqCounts,
     .abi_offset = offsetof(hl_workq_counts, lat_sum_ns),
     .value = &WorkqCounters::lat_sum_ns},
    {.name = "lost",
     .json_group = "queue_to_execute",
     .abi = AbiSource::kWorkqCounts,
     .abi_offset = offsetof(hl_workq_counts, lat_lost),
     .value = &WorkqCounters::lat_lost},
    {.name = "log2_slots",
     .json_group = "queue_to_execute",
     .abi = AbiSource::kWorkqCounts,
     .abi_offset = offsetof(hl_workq_counts, hist),
     .hist = &WorkqCounters::hist},
};

// The sampling program's per-CPU counters (a target's samples are its calls).
inline constexpr Field<Snapshot> kSampleFields[] = {
    {.name = "samples_total",
     .abi = AbiSource::kSampleCounts,
     .abi_offset = offsetof(hl_sample_counts, samples),
     .per_cpu = &Snapshot::samples_total,
     .prom = {.name = "hotline_samples",
              .help = "cpu-clock samples taken by the sampling mechanism.",
              .capped = true},
     .fold = Fold::kByNode},
    {.name = "samples_kernel",
     .abi = AbiSource::kSampleCounts,
     .abi_offset = offsetof(hl_sample_counts, kernel_samples),
     .per_cpu = &Snapshot::samples_kernel,
     .prom = {.name = "hotline_kernel_samples",
              .help = "Of hotline_samples_total, those whose IP was in the kernel.",
              .capped = true},
     .fold = Fold::kByNode},
};

// Queued work by function address over every CPU's work-function table; queued
// work of functions whose set was full adds to `other`.
std::map<std::uint64_t, std::uint64_t> sum_work_funcs(const std::vector<hl_work_funcs>& per_cpu,
                                                      std::uint64_t& other);

// Objects ordered by cross-node handoffs, then all handoffs; at most n.
std::vector<HotObject> top_objects(const std::vector<HotObject>& objs, std::size_t n);

// later - earlier, counter by counter; t_start/t_end bound the interval.
struct Interval {
    double t_start = 0;
    double t_end = 0;
    Snapshot d;  // d.t == t_end - t_start
    double seconds() const { return t_end - t_start; }
    // The seconds the counters cover: the attached time of a session attached in
    // windows, else the interval.
    double watched_seconds() const { return d.duty_percent < 100 ? d.attached_s : seconds(); }
    // The seconds the handoff counts cover: the tracking windows' time, else the
    // watched seconds.
    double tracking_seconds() const { return d.track_percent < 100 ? d.tracking_s : watched_seconds(); }
    // What one handoff counted in this interval stands for over the watched
    // time: 1 of `sample` objects tracked, in windows holding `windowed` of the
    // target's calls (a share of the calls, not of the time: the traffic may
    // not be even, e.g. idle at a scenario's ends).
    double handoff_scale(const TargetCounters& t) const;
    // Its tracking windows' part alone: calls / calls in the windows.
    double windows_scale(const TargetCounters& t) const;
    // Whether the target's handoffs were tracked at all in this interval: an
    // interval between two tracking windows has calls but no handoff counts.
    bool handoffs_tracked(const TargetCounters& t) const;
};
Interval delta(const Snapshot& earlier, const Snapshot& later);

// Adds one session's snapshot to one merged from several sessions (the daemon
// runs a session per mechanism): targets, program costs and objects are each
// session's own; the workqueue and the sampling counters are taken from the
// first session that has them, every field of their tables.
void merge_session(Snapshot& into, Snapshot&& from);

// Sums per-CPU counts per NUMA node (every node of the topology appears).
std::map<int, std::uint64_t> fold_by_node(const std::vector<std::uint64_t>& per_cpu,
                                          const Topology& topo);

// Share (0..1) of all samples on the given CPUs that landed in the target.
double sampled_share(const TargetCounters& t, const std::vector<std::uint64_t>& samples_total);

// Lower bound of a log2 histogram slot in ns (slot 0 covers 0..1).
std::uint64_t hist_slot_low(int slot);

}  // namespace hotline
