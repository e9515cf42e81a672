// SPDX-License-Identifier: Apache-2.0
// Machine shapes the unit tests render and fold against.
#pragma once

#include "hotline/model/topology.hpp"

namespace hotline::test {

// Four CPUs on two NUMA nodes: 0-1 on node 0, 2-3 on node 1.
inline Topology two_nodes() {
    Topology t;
    t.cpus = {0, 1, 2, 3};
    t.nodes = {0, 1};
    t.cpu_node = {{0, 0}, {1, 0}, {2, 1}, {3, 1}};
    t.from_sysfs_nodes = true;
    return t;
}

}  // namespace hotline::test
