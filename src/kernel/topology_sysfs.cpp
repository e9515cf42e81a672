// SPDX-License-Identifier: Apache-2.0
// CPU -> NUMA node map from sysfs (root is a parameter for fixture trees).
#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "hotline/kernel/kernel.hpp"
#include "hotline/base/util.hpp"

namespace hotline {

namespace fs = std::filesystem;

Result<Topology> read_topology(const std::string& sysfs_root) {
    Topology topo;
    fs::path root(sysfs_root);
    auto possible = read_file_if_present(root / "devices/system/cpu/possible");
    if (!possible)
        return make_error("cannot read " + (root / "devices/system/cpu/possible").string(), ENOENT,
                          "is sysfs mounted?");
    auto cpus = parse_cpulist(*possible);
    if (!cpus) return cpus.error();
    topo.cpus = *cpus;
    if (topo.cpus.empty()) return make_error("no CPUs listed in " + sysfs_root, EINVAL);

    std::error_code ec;
    fs::path node_dir = root / "devices/system/node";
    if (fs::is_directory(node_dir, ec)) {
        for (auto& e : fs::directory_iterator(node_dir, ec)) {
            std::string name = e.path().filename().string();
            if (name.rfind("node", 0) != 0 || name.size() == 4) continue;
            int id = 0;
            auto r = std::from_chars(name.data() + 4, name.data() + name.size(), id);
            if (r.ec != std::errc{} || r.ptr != name.data() + name.size()) continue;
            auto list = read_file_if_present(e.path() / "cpulist");
            if (!list) continue;
            auto nc = parse_cpulist(*list);
            if (!nc) return nc.error();
            topo.nodes.push_back(id);
            for (int c : *nc) topo.cpu_node[c] = id;
        }
    }
    topo.from_sysfs_nodes = !topo.nodes.empty();
    if (topo.nodes.empty()) topo.nodes.push_back(0);
    std::sort(topo.nodes.begin(), topo.nodes.end());
    // CPUs that no node lists (offline, or no NUMA support) belong to the first node.
    for (int c : topo.cpus)
        if (!topo.cpu_node.count(c)) topo.cpu_node[c] = topo.nodes.front();
    return topo;
}

}  // namespace hotline
