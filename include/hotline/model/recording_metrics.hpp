// SPDX-License-Identifier: Apache-2.0
// Named metrics of a recording or a trial: the numbers the fix catalog's
// criteria and the diagnosis rules speak of ("handoff.dst_release.cross_node_per_op"),
// computed from an interval, and the table of the names that exist.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "hotline/model/layout.hpp"
#include "hotline/model/metrics.hpp"
#include "hotline/model/verdict.hpp"

namespace hotline {

// What a scenario run reports for one trial, in the units the metric names use.
struct ScenarioNumbers {
    double ops = 0;          // operations: messages (dst-refcount), connections (tcp-crr), requests (irq-lat)
    double seconds = 0;      // wall time of the measured part
    double cpu_seconds = 0;  // CPU time of the scenario's threads (all sides)
    std::map<std::string, double> extra;  // e.g. latency_p50_us; becomes scenario.<key>
};

// Builds one trial's metrics from the collector's interval and the scenario's
// numbers: scenario.ops_per_s, scenario.cpu_us_per_op, scenario.<extra>; per
// target calls.<t>.per_op (exact mechanisms), proxy.<t>.per_op (partial proxies),
// their .per_s rates, share.<t> (sampling), latency.<t>.mean_ns (when timed),
// handoff.<t>.cross_node_per_op and .cross_cpu_per_op (any other CPU, scaled
// by the object sampling rate) and their shares of the tracked hits;
// work.<func>.queued_per_irq, work.queued_per_s and work.remote_share from the
// workqueue attribution.  Every name is in kMetricNames.
TrialMetrics trial_metrics(const Interval& iv, const ScenarioNumbers& s);

// Read-mostly fields on the refcount's cache line, the fact the 6.4 dst fix
// changed: layout.<type>.read_fields_on_refcnt_line (dst_entry: obsolete,
// lwtstate, rt_genid; __use and lastuse are written with the refcount, so they
// are true sharing and not counted) and layout.<type>.fields_on_hot_line (all
// watched fields on the line).
void add_layout_metrics(TrialMetrics& m, const LineLayout& l);

// What a part of a metric name stands for.
enum class MetricPart {
    kWord,    // the literal word of the pattern
    kTarget,  // a watched function (the target registry)
    kFunc,    // a work function (any symbol)
    kKey,     // a scenario's own number
    kType,    // a BTF struct name
    kSysctl,  // a sysctl name, dotted (the rest of the name)
};

// One form of metric name: dotted parts, each a literal word or a placeholder.
struct MetricName {
    std::string_view pattern;  // "handoff.<target>.cross_node_share"
    std::string_view meaning;
    std::string_view unit;
};

// Every metric name trial_metrics, add_layout_metrics and the recorded knob
// values produce (docs/validate-design.md has the table).
inline constexpr MetricName kMetricNames[] = {
    {"scenario.ops_per_s", "operations per second of the scenario", "1/s"},
    {"scenario.cpu_us_per_op", "CPU microseconds per operation, all scenario threads", "us"},
    {"scenario.<key>", "a number the scenario reports (latency_p50_us, mbit_per_s)", ""},
    {"calls.<target>.per_op", "exact calls per operation", ""},
    {"calls.<target>.per_s", "exact calls per second", "1/s"},
    {"proxy.<target>.per_op", "proxy events per operation (partial fidelity)", ""},
    {"proxy.<target>.per_s", "proxy events per second (partial fidelity)", "1/s"},
    {"share.<target>", "share of CPU samples in the function", "0..1"},
    {"latency.<target>.mean_ns", "mean time in the function", "ns"},
    {"handoff.<target>.cross_node_per_op", "handoffs to a CPU of another node per operation", ""},
    {"handoff.<target>.cross_cpu_per_op", "handoffs to any other CPU per operation", ""},
    {"handoff.<target>.cross_node_share", "share of tracked hits whose object came from another node", "0..1"},
    {"handoff.<target>.tracked_per_s", "hits that went through handoff tracking per second", "1/s"},
    {"handoff.<target>.cross_cpu_share", "share of tracked hits whose object came from another CPU", "0..1"},
    {"work.<func>.queued_per_irq", "work items with this function queued per hard interrupt", ""},
    {"work.queued_per_s", "work items queued per second", "1/s"},
    {"work.remote_share", "share of queued work items requested for another CPU", "0..1"},
    {"layout.dst_entry.read_fields_on_refcnt_line", "read-mostly fields on the dst refcount's cache line (BTF)", ""},
    {"layout.<type>.fields_on_hot_line", "watched fields on the hot field's cache line (BTF)", ""},
    {"knob.<sysctl>", "a sysctl's value when the recording was made", ""},
    {"discover.<type>.handoffs_per_s", "cross-CPU handoffs per second of the type's objects (discover)", "1/s"},
    {"discover.<type>.cross_node_per_s", "of those, handoffs to another node per second (discover)", "1/s"},
    {"discover.<type>.handoff_share", "share of the type's touches that were handoffs (discover)", "0..1"},
};

// The table entry a name has the form of, else nullopt.  `known_target` says
// whether a word names a watched function; without it any word is a target.
struct MetricMatch {
    const MetricName* form = nullptr;
    std::string subject;  // what the placeholder matched ("dst_release"); empty for literal names
    MetricPart part = MetricPart::kWord;
};
std::optional<MetricMatch> match_metric_name(std::string_view name, bool (*known_target)(std::string_view) = nullptr);

}  // namespace hotline
