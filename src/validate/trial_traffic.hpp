// SPDX-License-Identifier: Apache-2.0
// What one validation trial runs: hotline's scenario in its namespaces, or the
// user's own traffic on this host (validate --live).  The validator loop sees
// only this interface.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "hotline/fix/fix.hpp"
#include "hotline/model/recording_metrics.hpp"
#include "hotline/workload/live.hpp"
#include "hotline/workload/scenario.hpp"

namespace hotline {

class TrialTraffic {
public:
    virtual ~TrialTraffic() = default;
    // The verdict's "scenario": the scenario's name, or "live".
    virtual std::string name() const = 0;
    // "scenario tcp-crr (CPUs 0-1)", "this host: `wrk ...`".
    virtual std::string where() const = 0;
    // Where the fix's per-namespace changes go; none: the host's own namespace.
    virtual std::vector<NetnsRef> namespaces() const = 0;
    // Why this traffic cannot take the fix's placement, nullopt when it can.
    virtual std::optional<std::string> refuses(const Placement& p) const = 0;
    // A failed trial is repeated (a server that died under churn) rather than
    // ending the validation.
    virtual bool repeats_failed_trials() const = 0;
    // Starts a trial of `length_s` (0: the traffic's own length) on the
    // placement's CPUs, or where the traffic runs by default.
    virtual Status begin(const Placement* p, double length_s) = 0;
    virtual bool done() = 0;
    virtual std::optional<std::uint64_t> ops_so_far() const = 0;
    virtual Result<ScenarioNumbers> end() = 0;
    virtual nlohmann::json params() const = 0;
    // Ends any traffic and removes what the traffic set up.
    virtual void stop() = 0;
};

std::unique_ptr<TrialTraffic> scenario_traffic(std::unique_ptr<Scenario> s, bool per_cpu_routes_possible);
std::unique_ptr<TrialTraffic> live_traffic(std::unique_ptr<LiveTraffic> t);

}  // namespace hotline
