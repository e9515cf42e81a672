// SPDX-License-Identifier: Apache-2.0
// The record engine: one tracing session read every interval while a scenario,
// the churn workload or a command drives the events, into a recording document
// with the analysis `hotline diff` and `hotline diagnose` read.  `hotline
// record` and `hotline diagnose` run it; a front end adds only what it prints.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "hotline/base/result.hpp"
#include "hotline/base/signals.hpp"
#include "hotline/fix/fix.hpp"
#include "hotline/model/recording_metrics.hpp"
#include "hotline/probe/session.hpp"
#include "hotline/report/output.hpp"
#include "hotline/session/tracing.hpp"
#include "hotline/workload/scenario.hpp"

namespace hotline {

// What the front end sees while the recording runs.
struct RecordingHooks {
    std::function<void(const Interval&)> on_interval;  // each interval as it is read
    std::ostream* log = nullptr;  // progress lines and the scenario's result; null: none
};

class Recording {
public:
    // Opens the session of a checked setup (check_tracing_options) on this
    // kernel; `workload_cpus` from check_workload_cpus.  The front end says
    // what the plan is and stops when nothing is observable, before run().
    static Result<std::unique_ptr<Recording>> open(TracingSetup setup, std::vector<int> workload_cpus,
                                                   const KernelInfo& kernel, const Topology& topo);
    virtual ~Recording() = default;

    virtual const Plan& plan() const = 0;
    virtual const SessionInfo& info() const = 0;
    // The document; the front end records the options it was given here.
    virtual RecordingWriter& writer() = 0;
    // Starts the driver, reads every interval until the duration, a signal,
    // the command's or the scenario's end, then stops the driver and completes
    // the document.
    virtual Status run(ShutdownSignals& signals, const RecordingHooks& hooks) = 0;
    virtual Interval whole() const = 0;
    virtual const std::string& stop_reason() const = 0;
    // The command's exit status (the scenario's command's), -1 without one.
    virtual int exit_status() const = 0;
    // Detaches every program (before a front end reports the command's status).
    virtual void detach() = 0;
};

// Objects, handed-over pairs and layouts a discovered type lists.
inline constexpr std::size_t kDiscoverListed = 10;

// Per-trial numbers of a scenario result in the units the metric names use.
ScenarioNumbers scenario_numbers(const ScenarioResult& r);

// What a recording stores under "analysis" for `hotline diff`: per kernel-pair
// fix its applicability here (carries_fix) and the layout metrics.
nlohmann::json diff_facts(const FixCatalog& cat, const KernelFacts& facts, const std::vector<LineLayout>& layouts);

}  // namespace hotline
