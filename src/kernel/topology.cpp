// CPU -> NUMA node map from sysfs (root is a parameter for fixture trees).
#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "hotline/kernel.hpp"

namespace hotline {

namespace fs = std::filesystem;

static std::string trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return std::string(s);
}

Result<std::vector<int>> parse_cpulist(std::string_view text) {
    std::vector<int> out;
    std::string t = trim(text);
    if (t.empty()) return out;
    std::string_view s = t;
    while (!s.empty()) {
        auto comma = s.find(',');
        std::string_view part = s.substr(0, comma);
        s = comma == std::string_view::npos ? std::string_view{} : s.substr(comma + 1);
        auto dash = part.find('-');
        int a = 0, b = 0;
        auto parse = [](std::string_view p, int& v) {
            auto r = std::from_chars(p.data(), p.data() + p.size(), v);
            return r.ec == std::errc{} && r.ptr == p.data() + p.size() && v >= 0;
        };
        bool ok = dash == std::string_view::npos
                      ? parse(part, a) && (b = a, true)
                      : parse(part.substr(0, dash), a) && parse(part.substr(dash + 1), b);
        if (!ok || b < a || b > 65535)
            return make_error("bad CPU list \"" + t + "\" near \"" + std::string(part) + "\"",
                              EINVAL, "expected e.g. 0-3,8,10-11");
        for (int c = a; c <= b; ++c) out.push_back(c);
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

std::string format_cpulist(const std::vector<int>& cpus) {
    std::ostringstream os;
    for (size_t i = 0; i < cpus.size();) {
        size_t j = i;
        while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
        if (i) os << ',';
        os << cpus[i];
        if (j > i) os << '-' << cpus[j];
        i = j + 1;
    }
    return os.str();
}

int Topology::node_of(int cpu) const {
    auto it = cpu_node.find(cpu);
    return it == cpu_node.end() ? 0 : it->second;
}

std::vector<int> Topology::cpus_of(int node) const {
    std::vector<int> out;
    for (auto [c, n] : cpu_node)
        if (n == node) out.push_back(c);
    return out;
}

static std::optional<std::string> slurp(const fs::path& p) {
    std::ifstream f(p);
    if (!f) return std::nullopt;
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

Result<Topology> read_topology(const std::string& sysfs_root) {
    Topology topo;
    fs::path root(sysfs_root);
    auto possible = slurp(root / "devices/system/cpu/possible");
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
            auto list = slurp(e.path() / "cpulist");
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
