// SPDX-License-Identifier: Apache-2.0
// CPUs and NUMA nodes: the machine shape every per-node fold is made against.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "hotline/base/result.hpp"

namespace hotline {

// "0-3,8,10-11" -> {0,1,2,3,8,10,11}
Result<std::vector<int>> parse_cpulist(std::string_view text);
std::string format_cpulist(const std::vector<int>& cpus);

struct Topology {
    std::vector<int> cpus;          // possible CPUs, ascending
    std::vector<int> nodes;         // NUMA node ids, ascending
    std::map<int, int> cpu_node;    // cpu -> node
    bool from_sysfs_nodes = false;  // false: no node directories, everything on node 0

    int node_of(int cpu) const;
    std::vector<int> cpus_of(int node) const;
    int max_cpu() const { return cpus.empty() ? -1 : cpus.back(); }
};

}  // namespace hotline
