// SPDX-License-Identifier: Apache-2.0
// Per-hit cost of hotline's programs against an empty program on the same attach
// point, all attached at once so every variant sees the same events.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "hotline/kernel/kernel.hpp"
#include "hotline/model/metrics.hpp"
#include "hotline/base/result.hpp"
#include "hotline/probe/session.hpp"

namespace hotline {

struct CostVariant {
    std::string name;        // "empty", "count", "latency", "handoff"
    std::string program;     // BPF program name
    std::uint64_t run_cnt = 0;
    std::uint64_t run_time_ns = 0;
    double ns_per_run() const { return run_cnt ? double(run_time_ns) / double(run_cnt) : 0.0; }
};

struct CostRow {
    std::string target;
    std::string attach;  // attach point, e.g. "tp_btf/consume_skb"
    Mechanism mechanism = Mechanism::kUnavailable;
    std::vector<CostVariant> variants;  // empty first
    const CostVariant* find(const std::string& name) const;
    double ratio(const std::string& name) const;  // variant ns/run over empty ns/run (0: unknown)
    // Hits per second of the attach point (the empty program's runs).
    double hits_per_s(double seconds) const;
    // CPU time the variant adds over the empty program, in ns per second of wall time.
    double extra_ns_per_s(const std::string& name, double seconds) const;
};

// Below this many hits a per-hit price is too noisy to hold against a budget.
inline constexpr std::uint64_t kCostMinHits = 1000;

struct CostReport {
    double seconds = 0;
    std::vector<CostRow> rows;
    std::vector<std::string> notes;
};

// Budgets from the design: counting <= 1.2x empty, with latency <= 2x, handoff tracking <= 3x.
inline constexpr double kCountBudget = 1.2;
inline constexpr double kLatencyBudget = 2.0;
inline constexpr double kHandoffBudget = 3.0;
double cost_budget(const std::string& variant);

// Attaches the variants of the targets `opts` names (its targets, funcs and
// forced mechanism; the variants set the rest), calls `work` (which drives
// events and returns when done), then reads every program's run statistics.
Result<CostReport> measure_cost(const SessionOptions& opts, const KernelInfo& k, const Topology& topo,
                                const std::function<Status()>& work);

}  // namespace hotline
