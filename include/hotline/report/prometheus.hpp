// SPDX-License-Identifier: Apache-2.0
// Prometheus exposition of the metrics model (text format 0.0.4 and OpenMetrics
// 1.0), written to an injected stream so every line is tested without root.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "hotline/model/finding.hpp"
#include "hotline/kernel/kernel.hpp"
#include "hotline/kernel/process_stats.hpp"
#include "hotline/model/metrics.hpp"
#include "hotline/model/plan.hpp"
#include "hotline/base/result.hpp"

namespace hotline {

// The daemon picks one per scrape from its Accept header.
enum class ExpositionFormat { kText004, kOpenMetrics100 };

// Facts that do not change while the exporter runs.
struct ExporterInfo {
    std::string version;
    KernelInfo kernel;
    Topology topo;
    Plan plan;  // every configured target, attached or not
    bool run_stats = true;  // the kernel keeps BPF run statistics (else run counters stay 0)
};

// The exporter's own cumulative counters, kept by the daemon.
struct ExporterCounters {
    std::uint64_t series_dropped = 0;  // by earlier scrapes; this one's drops are added
    std::uint64_t read_errors = 0;
    std::map<std::string, std::uint64_t> http_rejected;  // fixed reasons, never request text
    std::optional<ProcessStats> process;  // the exporter process itself
    std::vector<Finding> findings;  // active over the window since the previous scrape
};

struct PromOptions {
    ExpositionFormat format = ExpositionFormat::kText004;
    bool per_cpu = false;            // a cpu label on per-CPU series
    std::size_t max_series = 10000;  // contention series beyond this are dropped and counted
};

struct PromStats {
    std::size_t series = 0;     // contention series written
    std::uint64_t dropped = 0;  // contention series dropped by the cap in this render
};

PromStats render_prometheus(std::ostream& os, const Snapshot& s, const ExporterInfo& info,
                            const ExporterCounters& counters, const PromOptions& opts);

// Every family /metrics can hold, in exposition order (docs/metrics.md lists them).
std::vector<MetricFamily> metric_families();
// Problems of the family registry and of the field tables' exports: an entry
// with no field and no renderer, duplicate names, no help, a unit the name does
// not end with, a fold the renderer does not draw.  Empty: sound.
std::vector<std::string> check_metric_registry();

// Exposed for tests.
std::string escape_label_value(std::string_view v);  // \\ \" \n, invalid UTF-8 -> U+FFFD
std::string format_sample_value(double v);            // shortest round trip, +Inf, -Inf, NaN
// Inclusive upper bound, in seconds, of log2 latency slot `slot` (last slot: +Inf).
double latency_le_seconds(int slot);

}  // namespace hotline
