// SPDX-License-Identifier: Apache-2.0
// A tracing session: plans the targets, owns every loaded program and link, and
// reads their counters.  Destroying it detaches everything (links are fd-owned).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hotline/targets/targets.hpp"
#include "hotline/kernel/kernel.hpp"
#include "hotline/model/layout.hpp"
#include "hotline/model/metrics.hpp"
#include "hotline/probe/planner.hpp"
#include "hotline/base/result.hpp"
#include "hotline/base/util.hpp"  // monotonic_seconds, the time base of snapshots

namespace hotline {

// The period of a session's attach and tracking windows unless its options say
// otherwise: short, so that an interval of a few seconds covers whole periods.
inline constexpr std::chrono::milliseconds kSessionDutyPeriod{2000};

// The periods a session takes: a window of 1% is then at least 10 ms, and a
// daemon's findings (judged over whole periods) at most a minute old.
inline constexpr std::chrono::milliseconds kMinDutyPeriod{1000};
inline constexpr std::chrono::milliseconds kMaxDutyPeriod{60000};

struct SessionOptions {
    std::vector<std::string> targets;  // empty: every built-in target
    bool watch_targets = true;         // false: no target at all (discover alone)
    std::optional<Mechanism> forced;
    bool latency = true;
    // Hz per CPU for the sampling mechanism.  Each sample is a timer interrupt the
    // workload pays for outside any BPF run time (docs/overhead.md, sampling rate);
    // 99, as bpftrace's and bcc's profilers use, not a multiple of the tick.
    int sample_freq = 99;
    std::vector<std::string> funcs;  // custom targets: NAME or NAME:argN
    bool handoffs = true;            // track object handoffs where the target has an object
    int handoff_sample = 1;          // track 1 of N objects (by address hash)
    // Owner table entries per target (a 4-way set-associative array).  Small, so
    // that its pages stay recently touched (docs/overhead.md, "pages, not lines").
    std::uint32_t owner_capacity = 2048;
    bool workq = true;               // workqueue attribution programs, for targets whose entry asks for them
    // Time every program run (hotline cost, which compares variants run by run)
    // instead of a window of each second (RunStatsWindow).
    bool time_every_run = false;
    // Share of each duty_period the programs are attached (AttachWindows);
    // 100: attached throughout.  A detached program costs nothing, where one that
    // returns early still pays its tracepoint's dispatch.  Counters then cover the
    // attached time only (Snapshot::attached_s).  `serve` sets it (probe.duty_cycle).
    int duty_percent = 100;
    // Share of each duty_period handoff tracking is on, the programs
    // attached throughout: counts stay exact, handoffs are counted in the
    // tracking windows (Snapshot::tracking_s) and scaled to the whole time.  A
    // handoff costs a line moved between CPUs, so tracking is what a session
    // on busy shared objects pays most for.  Not with duty_percent < 100.
    int track_percent = 100;
    // The period of both kinds of windows.  Each attach and detach patches the
    // tracepoints' code and waits for every CPU (an IPI each), so a longer
    // period costs an always-on daemon less (`serve` sets it: probe.duty_period).
    std::chrono::milliseconds duty_period = kSessionDutyPeriod;
    // Where in its period the first window starts (a benchmark draws it).
    std::chrono::milliseconds duty_phase{0};
};

// What a session found out besides counters.
struct SessionInfo {
    std::vector<LineLayout> layouts;    // per object type watched
    std::vector<std::string> notes;     // e.g. layout lookups that failed
    std::string random_mix;             // the registry's kernel findings (KernelFinding) of observable targets
    std::string workq;                  // attribution programs: "attached" or why not
};

class Session {
public:
    static Result<std::unique_ptr<Session>> open(const SessionOptions& opts,
                                                 const KernelInfo& kernel,
                                                 const Topology& topo);
    virtual ~Session() = default;
    virtual const Plan& plan() const = 0;
    virtual Result<Snapshot> read() const = 0;
    virtual const SessionInfo& info() const = 0;
    // The session's /proc/kallsyms table (null when unreadable), for reports made
    // after the run: loading it again costs tens of milliseconds and its size in RSS.
    virtual const Kallsyms* kallsyms() const { return nullptr; }
};

// The ranges of the numeric options (Session::open checks them too); the error
// names the command-line option.
Status check_session_options(const SessionOptions& opts);

// Checks that the process may load BPF and open perf events; names what is missing.
Status check_privileges(const KernelInfo& k);

// `probe` without CAP_BPF and CAP_PERFMON: the plan as far as BTF, kallsyms and
// the kernel's facts decide it, nothing loaded; each target that needs a load to
// decide has unavailable_reason "as root: fentry, then tracepoint (...)".  And
// the BTF layouts of the targets' objects.
struct UnprivilegedProbe {
    Plan plan;
    std::vector<LineLayout> layouts;
};
Result<UnprivilegedProbe> probe_without_privileges(const SessionOptions& opts, const KernelInfo& kernel);

// Resolves target names plus --func specs; an unknown name lists the valid ones.
Result<std::vector<TargetDef>> resolve_targets(const std::vector<std::string>& names,
                                               const std::vector<std::string>& funcs = {});

}  // namespace hotline
