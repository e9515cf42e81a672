// SPDX-License-Identifier: Apache-2.0
// The options of a tracing session, as every front end takes them from users
// (record, diagnose, serve's [probe] table, validate's collector, cost, probe),
// checked in one place before anything touches the kernel: Session::open then
// takes the checked SessionOptions.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hotline/base/result.hpp"
#include "hotline/model/topology.hpp"
#include "hotline/probe/discovery.hpp"
#include "hotline/probe/session.hpp"
#include "hotline/workload/scenario.hpp"

namespace hotline {

// `record`'s and `diagnose`'s share of the time handoffs are tracked
// (--handoff-share; docs/overhead.md, "The full record session").
inline constexpr int kRecordHandoffShare = 25;

// One name per meaning: each member is the option a user writes (--targets,
// --func, --mechanism, --handoff-sample, ...).  The watching part is all a
// session opened alone reads; the recording loop (record, diagnose) reads the
// rest, whose defaults pass the check.
struct TracingOptions {
    // What to watch and how.
    std::vector<std::string> targets;  // empty (and no funcs): every built-in target
    std::vector<std::string> funcs;    // custom targets: NAME or NAME:argN
    std::string mechanism;             // empty: the planner chooses per target
    bool latency = true;
    int sample_freq = SessionOptions{}.sample_freq;
    bool handoffs = true;
    int handoff_sample = 1;
    std::uint32_t owner_capacity = SessionOptions{}.owner_capacity;
    bool workq = true;
    int duty_cycle = SessionOptions{}.duty_percent;  // serve's probe.duty_cycle
    std::chrono::milliseconds duty_period = SessionOptions{}.duty_period;  // serve's probe.duty_period
    int handoff_share = SessionOptions{}.track_percent;  // record's --handoff-share
    // The built-in targets (or --targets/--func) are watched; discover alone does not.
    bool watch_targets = true;
    // Typed attach points to watch for contended objects of any type (discover).
    std::optional<DiscoverOptions> discover;
    // The recording loop.
    std::string duration;              // empty: until a signal, the command's or the scenario's end
    std::string interval = "1s";
    std::string workload = "none";     // the built-in driver: churn, churn-split or none
    std::string workload_cpus;         // CPU list for it; empty: every CPU
    // The scenario to run, its duration and command not yet set and not yet
    // resolved against the CPUs (the check does both).
    std::optional<ScenarioOptions> scenario;
    std::vector<std::string> command;  // run while recording (inside the scenario's network with one)
};

// The options checked and parsed.
struct TracingSetup {
    SessionOptions session;
    std::optional<DiscoverOptions> discover;
    double duration = 0;  // 0: until a signal or the command's exit
    double interval = 0;
    std::string workload = "none";
    std::optional<ScenarioOptions> scenario;  // resolved
    std::vector<std::string> command;
};

// Checks every option; the error names the option as the user wrote it.
Result<TracingSetup> check_tracing_options(const TracingOptions& o);
// The options of a session that only plans and attaches (probe, cost): the
// targets, the --func specs and a forced mechanism, the rest at their defaults.
TracingOptions attach_options(std::vector<std::string> targets, std::vector<std::string> funcs, std::string mechanism);

// --workload-cpus against this machine's CPUs (every CPU when not given).
Result<std::vector<int>> check_workload_cpus(const TracingOptions& o, const Topology& topo);

// What `hotline record` (and `hotline validate`'s collector) says when the
// plan has nothing to observe.
inline constexpr const char* kNothingObservable =
    "no target can be observed on this kernel; `hotline probe` says why";

}  // namespace hotline
