// SPDX-License-Identifier: Apache-2.0
// Counters the unit tests fold into intervals.
#pragma once

#include <string>

#include "hotline/model/metrics.hpp"

namespace hotline::test {

// One target on two CPUs, everything on CPU 1: `calls` calls, `tracked` of them
// tracked for handoffs, `handoffs` cross-CPU handoffs among them.
inline TargetCounters on_cpu1(std::string target, Fidelity fidelity, std::uint64_t calls, std::uint64_t tracked,
                              std::uint64_t handoffs) {
    TargetCounters c;
    c.target = std::move(target);
    c.fidelity = fidelity;
    c.calls = {0, calls};
    c.events = {0, calls};
    c.has_handoffs = true;
    c.handoffs.tracked = {0, tracked};
    c.handoffs.cross_cpu = {0, handoffs};
    c.handoffs.cross_node = {0, 0};
    return c;
}

}  // namespace hotline::test
