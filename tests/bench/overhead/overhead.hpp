// SPDX-License-Identifier: Apache-2.0
// bench_overhead's shared parts: the run's goal bookkeeping, one workload run
// with and without programs, the run statistics switch, and each section's entry
// (runs.cpp, trigger.cpp, per_call.cpp, workload.cpp, loss.cpp, agent.cpp; main.cpp runs them;
// the peers in peers.cpp).
#pragma once

#include <bpf/bpf.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "bench_util.hpp"
#include "hotline/probe/cost.hpp"
#include "hotline/probe/prog_stats.hpp"
#include "hotline/workload/scenario.hpp"
#include "hotline/probe/session.hpp"
#include "hotline/base/util.hpp"
#include "hotline/workload/workload.hpp"
#include "hotline/probe/bpf_skeleton.hpp"

using namespace hotline;
using namespace hotline::bench;
using nlohmann::json;
#include "floor.skel.h"

namespace overhead {

using namespace hotline;
using namespace hotline::bench;
using nlohmann::json;

// --- runs.cpp ------------------------------------------------------------------------------

// Targets missed, collected for the closing note (never a failure: speed is
// reported, not asserted); parts that failed or measured nothing (the exit status).
extern std::vector<std::string> g_missed, g_failures;
void failed(std::string what);
void check(const std::string& what, double value, double budget, bool le = true);

struct ProgStat {
    std::string name;
    std::uint64_t run_cnt = 0, run_time_ns = 0;
};

std::map<std::uint32_t, ProgStat> all_progs();

struct RunResult {
    double rate = 0;          // messages (dst-refcount) or connections (tcp-crr) per second
    double cpu_us_per_msg = 0;  // busy CPU time of the scenario's CPUs per message
    double hits_per_s = 0;    // probe runs per second (hotline or bpftrace)
    double ns_per_hit = 0;    // their mean run time
    double ns_per_hit_peer = 0;  // floor only: over bpftrace's three tracepoints alone
    std::map<std::string, ProgStat> programs;  // a session's programs over the run, by name
    int round = -1;  // of the bench's rounds: paired ratios pair runs of one round
};

Result<RunResult> run_scenario_once(const std::string& name, double secs);
// What a hit is and which programs' run time prices it (runs.cpp says why).
bool is_proxy_hit(const std::string& program);
bool priced_per_hit(const std::string& program);
void sum_cost(const Interval& iv, double secs, RunResult& rr);

struct FloorDestroy {
    void operator()(hl_floor_bpf* s) const { hl_floor_bpf::destroy(s); }
};
using FloorPrograms = std::unique_ptr<hl_floor_bpf, FloorDestroy>;
Result<FloorPrograms> attach_floor();
// The default session doing only what bpftrace's script does: counting.
SessionOptions counting_only(SessionOptions so);
Result<RunResult> run_floor_once(const std::string& scen, double secs);

// bpftrace finds tracepoints through tracefs, which this machine does not mount
// at boot: mounted for the bench and unmounted again if it was not there.
struct TracefsMount {
    bool mounted = false;
    TracefsMount() {
        if (access("/sys/kernel/tracing/events", F_OK) == 0) return;
        mounted = mount("nodev", "/sys/kernel/tracing", "tracefs", 0, nullptr) == 0;
        if (!mounted) fmt::print("bench_overhead: cannot mount tracefs: {}\n", std::strerror(errno));
    }
    ~TracefsMount() {
        if (mounted) umount2("/sys/kernel/tracing", MNT_DETACH);
    }
};

// On while this process holds the fd from BPF_ENABLE_STATS (kernel.bpf_stats_enabled
// is never written).  The trigger timings drop it: the two clock reads around each
// program run are the statistics' price, not the program's, and perf pays no such price.
struct RunStatsSwitch {
    int fd = -1;
    bool on() {
        if (fd < 0) fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
        return fd >= 0;
    }
    void off() {
        if (fd >= 0) close(fd);
        fd = -1;
    }
    ~RunStatsSwitch() { off(); }
};
extern RunStatsSwitch g_run_stats;

// --- trigger.cpp ---------------------------------------------------------------------------

// Hotline's counting next to perf's, in the trigger: added CPU ns per hit of each.
struct PeerRatio {
    double count_ns = 0, perf_ns = 0;
    double ratio() const { return perf_ns > 0 ? count_ns / perf_ns : 0; }
};
extern PeerRatio g_count_vs_perf;
// The kernel's run statistics (BPF_ENABLE_STATS, on in every session for its cost
// report) read the clock twice around each program run, outside the run time they
// record: the loss section adds this price to the programs' own account.
extern double g_run_stats_price_ns;

json trigger_section(bool smoke, int pairs, bool perf);
json print_session_programs(const std::string& scen, const std::vector<RunResult>& runs, double secs);

// --- per_call.cpp --------------------------------------------------------------------------

// The comparison table: ns each observer adds to a call that fires a tracepoint.
json per_call_section(bool smoke, int pairs, bool perf, bool bpftrace);

// --- loss.cpp ------------------------------------------------------------------------------

// The session of the loss section: the default one (what `hotline record` opens),
// or with the sampling mechanism at another rate (--loss-sample-hz), which
// separates its interrupts' cost from the rest of the session's, or timing every
// program run (--loss-time-every-run), as sessions did before their statistics
// window, which prices the window's saving.
extern SessionOptions g_loss_session;
// `hotline serve`'s default session (its probe.duty_cycle windows included).
SessionOptions serve_default_session(SessionOptions ignored = {});
SessionOptions at_random_phase(SessionOptions o);
constexpr double kLossTargetPct = 1.0;       // the goal: at most 1% lost
constexpr double kOverCountingTargetPts = 0.5;  // the full session over counting-only (issue 43)
constexpr double kLossHalfWidthPct = 1.0;    // known to +-1% (95% confidence)
// The same work per hit (issue 43): tracking at most this share of bpftrace's
// same tracking, and queue_work_on tracking at most this many empty programs.
constexpr double kSameWorkOverBpftrace = 0.25;
constexpr double kTrackingOverEmpty = 1.6;

bool add_loss_arms(const std::string& list);
void use_every_loss_arm();
bool loss_arms_hold();
json loss_section(const std::vector<std::string>& scenarios, int rounds, double secs, const KernelInfo& k,
                  const Topology& topo);

// --- agent.cpp -----------------------------------------------------------------------------

inline constexpr const char* kAttachIdle = "attach, idle (start to plan printed)";
inline constexpr const char* kFirstReportIdle = "first report, idle";
json agent_section(const std::string& bin, int n, double rec_s);
std::string default_hotline(const char* argv0);

// --- discover.cpp --------------------------------------------------------------------------

json discover_section(bool smoke, const Topology& topo);

// --- workload.cpp --------------------------------------------------------------------------

struct Options {
    bool smoke = false, bpftrace = true, perf = true;
    int pairs = 5, loss_rounds = 30;
    double secs = 5, loss_secs = 1;
    std::string json_path = "bench-overhead.json", hotline_bin;
    std::set<std::string> only;
    std::vector<std::string> loss_scenarios = {"tcp-crr", "dst-refcount"};
    bool loss_scenarios_given = false;
    bool want(const char* s) const { return only.empty() || only.count(s); }
};

json cost_section(const Options& o, const KernelInfo& k, const Topology& topo);

// --- serve.cpp -----------------------------------------------------------------------------

// serve's default session against full tracking in the same runs: handoffs per operation.
json serve_fidelity_section(const Options& o, const KernelInfo& k, const Topology& topo);

// --- track_floor.cpp -----------------------------------------------------------------------

// Runs and run time so far, summed over the programs a run observes.
using RunReader = std::function<Result<std::pair<std::uint64_t, std::uint64_t>>()>;
struct TrackFloorCounts {
    std::uint64_t hits = 0, handoffs = 0;
};
// The named programs of bpf/track_floor.bpf.c attached while RUN runs (it reads
// their runs with its argument and returns how many it measured); the floor's
// counts after, an error if they fall short of the runs.
Result<TrackFloorCounts> with_track_floor(const std::vector<std::string>& programs,
                                          const std::function<Result<std::uint64_t>(const RunReader&)>& run);

// --- queue_work_peer.cpp -------------------------------------------------------------------

// queue_work_on's handoff tracking per hit against bpftrace's same work and an empty program.
json queue_work_peer(const Options& o, const KernelInfo& k, const Topology& topo);
json workload_section(const Options& o, const KernelInfo& k, const Topology& topo);

}  // namespace overhead
