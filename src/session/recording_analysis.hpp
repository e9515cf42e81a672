// SPDX-License-Identifier: Apache-2.0
// The analysis a recording carries for `hotline diff` and `hotline diagnose`.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "hotline/model/metrics.hpp"
#include "hotline/model/recording_metrics.hpp"
#include "hotline/probe/session.hpp"
#include "hotline/report/output.hpp"

namespace hotline {

// What one recording measured besides the counters.
struct RecordedRun {
    std::vector<Interval> intervals;
    // The scenario's operations per interval (its live count), when it has one.
    std::vector<std::uint64_t> interval_ops;
    // The scenario's totals, spread over the intervals by their length.
    ScenarioNumbers numbers;
    // The whole run's operations for the diagnosis: the churn's connections or the scenario's.
    ScenarioNumbers whole_ops;
    double nominal_interval_s = 0;
    Interval whole;
};

// Whether the interval that ends a stopped recording joins the one before
// it: a tail under half an interval (the last part of a second), or one in
// which the scenario made no operation (its teardown, however long a loaded
// machine makes it), would stand alone as a cliff in every rate with its
// per-op metrics undefined.  tail_ops: the scenario's operations in the tail,
// nullopt without a scenario.
bool tail_joins_last_interval(double tail_s, double interval_s, std::optional<std::uint64_t> tail_ops);

// Writes "analysis": the kernel-pair fixes' markers and layout facts of this
// kernel, the diagnosis's metrics, and one metric map per interval.
void add_recording_analysis(RecordingWriter& rec, const Session& session, const RecordedRun& run);

}  // namespace hotline
