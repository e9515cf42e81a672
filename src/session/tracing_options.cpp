// SPDX-License-Identifier: Apache-2.0
// The options of a tracing session checked once, in the order a user reads
// them on the command line, before anything touches the kernel.
#include <fmt/format.h>

#include "hotline/base/util.hpp"
#include "hotline/report/output.hpp"  // kMaxRecordingIntervals
#include "hotline/session/tracing.hpp"

namespace hotline {

namespace {

Status check_timing(const TracingOptions& o, TracingSetup& s) {
    if (!o.duration.empty()) {
        auto d = parse_duration(o.duration);
        if (!d) return d.error();
        if (*d <= 0) return make_error("--duration must be positive", EINVAL);
        s.duration = *d;
    }
    auto i = parse_duration(o.interval);
    if (!i) return i.error();
    if (*i < 0.05) return make_error("--interval must be at least 50ms", EINVAL);
    s.interval = *i;
    if (s.duration > 0 && s.duration / s.interval > double(kMaxRecordingIntervals))
        return make_error(fmt::format("--duration {}s at --interval {}s gives more than {} intervals", s.duration,
                                      s.interval, kMaxRecordingIntervals),
                          EINVAL, "use a longer --interval");
    return ok_status();
}

Status check_watching(const TracingOptions& o, SessionOptions& so) {
    auto forced = parse_forced_mechanism(o.mechanism);
    if (!forced) return forced.error();
    if (auto t = resolve_targets(o.targets, o.funcs); !t) return t.error();
    so.targets = o.targets;
    so.funcs = o.funcs;
    so.forced = *forced;
    so.latency = o.latency;
    so.sample_freq = o.sample_freq;
    so.handoffs = o.handoffs;
    so.handoff_sample = o.handoff_sample;
    so.owner_capacity = o.owner_capacity;
    so.workq = o.workq;
    so.watch_targets = o.watch_targets;
    so.duty_percent = o.duty_cycle;
    so.duty_period = o.duty_period;
    so.track_percent = o.handoff_share;
    if (so.track_percent < 1 || so.track_percent > 100)
        return make_error(fmt::format("--handoff-share {}: a percent from 1 to 100", so.track_percent), EINVAL,
                          "100 tracks handoffs throughout; less tracks them in that share of each 2-s period");
    return check_session_options(so);
}

Status check_discover(const TracingOptions& o, TracingSetup& s) {
    if (!o.discover) return ok_status();
    const DiscoverOptions& d = *o.discover;
    if (d.sample < 1 || d.sample > 65536) return make_error("--sample must be 1..65536", EINVAL);
    if (d.owner_capacity < 64 || d.owner_capacity > (1u << 24))
        return make_error("--owner-map-size must be 64..16777216 for discover", EINVAL);
    if (d.duty_percent && (*d.duty_percent < 1 || *d.duty_percent > 100))
        return make_error(fmt::format("--duty-cycle {}: a percent from 1 to 100", *d.duty_percent), EINVAL,
                          fmt::format("100 keeps the programs attached throughout; the default, {}, cuts their "
                                      "cost to that share",
                                      kDiscoverDutyPercent));
    s.discover = d;
    return ok_status();
}

// The driver of the events: a built-in workload, a scenario or a command.
Status check_driver(const TracingOptions& o, TracingSetup& s) {
    if (o.workload != "none" && o.workload != "churn" && o.workload != "churn-split")
        return make_error("unknown workload \"" + o.workload + "\"", EINVAL, "use churn, churn-split or none");
    if (o.workload != "none" && !o.command.empty()) return make_error("--workload and a command are exclusive", EINVAL);
    s.workload = o.workload;
    s.command = o.command;
    if (!o.scenario) return ok_status();
    if (o.workload != "none") return make_error("--workload and --scenario are exclusive", EINVAL);
    ScenarioOptions so = *o.scenario;
    so.command = o.command;
    if (s.duration > 0) so.duration_s = s.duration;
    if (auto st = resolve_scenario_options(so, usable_cpus()); !st) return st;
    s.scenario = std::move(so);
    return ok_status();
}

}  // namespace

Result<TracingSetup> check_tracing_options(const TracingOptions& o) {
    TracingSetup s;
    if (auto st = check_timing(o, s); !st) return st.error();
    if (auto st = check_watching(o, s.session); !st) return st.error();
    if (auto st = check_driver(o, s); !st) return st.error();
    if (auto st = check_discover(o, s); !st) return st.error();
    return s;
}

Result<std::vector<int>> check_workload_cpus(const TracingOptions& o, const Topology& topo) {
    if (o.workload_cpus.empty()) return topo.cpus;
    auto c = parse_cpulist(o.workload_cpus);
    if (!c) return c.error();
    for (int cpu : *c)
        if (!topo.cpu_node.count(cpu))
            return make_error(fmt::format("--workload-cpus: CPU {} does not exist", cpu), EINVAL,
                              "this machine has CPUs " + format_cpulist(topo.cpus));
    return *c;
}

TracingOptions attach_options(std::vector<std::string> targets, std::vector<std::string> funcs, std::string mechanism) {
    TracingOptions o;
    o.targets = std::move(targets);
    o.funcs = std::move(funcs);
    o.mechanism = std::move(mechanism);
    return o;
}

}  // namespace hotline
