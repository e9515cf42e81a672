// A tracing session: plans the targets, owns every loaded program and link, and
// reads their counters.  Destroying it detaches everything (links are fd-owned).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hotline/catalog.hpp"
#include "hotline/kernel.hpp"
#include "hotline/metrics.hpp"
#include "hotline/planner.hpp"
#include "hotline/result.hpp"

namespace hotline {

struct SessionOptions {
    std::vector<std::string> targets;  // empty: every built-in target
    std::optional<Mechanism> forced;
    bool latency = true;
    int sample_freq = 999;  // Hz per CPU for the sampling mechanism
};

class Session {
public:
    static Result<std::unique_ptr<Session>> open(const SessionOptions& opts,
                                                 const KernelInfo& kernel,
                                                 const Topology& topo);
    virtual ~Session() = default;
    virtual const Plan& plan() const = 0;
    virtual Result<Snapshot> read() const = 0;
};

// Checks that the process may load BPF and open perf events; names what is missing.
Status check_privileges(const KernelInfo& k);

// Resolves a comma list of target names; an unknown one lists the valid names.
Result<std::vector<TargetDef>> resolve_targets(const std::vector<std::string>& names);

double monotonic_seconds();

}  // namespace hotline
