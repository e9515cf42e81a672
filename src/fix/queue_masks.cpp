// SPDX-License-Identifier: Apache-2.0
// Queue files whose value depends on the queue: the CPU mask of the NUMA node
// of the queue's device (RPS and XPS maps per node).
#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "hotline/base/util.hpp"
#include "hotline/fix/fix.hpp"
#include "hotline/kernel/kernel.hpp"

namespace hotline {

namespace {

std::optional<std::string> first_line(const std::filesystem::path& p) {
    std::ifstream in(p);
    std::string line;
    if (!in || !std::getline(in, line)) return std::nullopt;
    return std::string(trim(line));
}

}  // namespace

std::optional<int> device_numa_node(const std::string& sys_root, const std::string& dev) {
    namespace fs = std::filesystem;
    std::error_code ec;
    // The network device's bus device, then its parents: a virtio NIC's node is
    // its PCI function's.  Virtual devices (lo, veth) have no device link.
    fs::path p = fs::canonical(fs::path(sys_root) / "class/net" / dev / "device", ec);
    const fs::path top = fs::weakly_canonical(fs::path(sys_root) / "devices", ec);
    for (; !ec && !p.empty() && p != top && p != p.root_path(); p = p.parent_path()) {
        auto v = first_line(p / "numa_node");
        if (!v) continue;
        try {
            int node = std::stoi(*v);
            if (node >= 0) return node;  // -1: the firmware does not say
        } catch (const std::exception&) {
        }
    }
    return std::nullopt;
}

Result<std::string> cpu_mask_like(const std::vector<int>& cpus, std::string_view like) {
    std::vector<std::string_view> groups;
    for (std::size_t b = 0;;) {
        std::size_t e = like.find(',', b);
        groups.push_back(like.substr(b, e == std::string_view::npos ? e : e - b));
        if (e == std::string_view::npos) break;
        b = e + 1;
    }
    const int first_width = static_cast<int>(groups.front().size());
    const int bits = first_width * 4 + 32 * static_cast<int>(groups.size() - 1);
    std::vector<std::uint32_t> words(groups.size(), 0);  // least significant first
    for (int cpu : cpus) {
        if (cpu < 0 || cpu >= bits || first_width == 0)
            return make_error(fmt::format("CPU {} does not fit the {}-bit mask \"{}\"", cpu, bits, like), ERANGE);
        words[cpu / 32] |= 1u << (cpu % 32);
    }
    std::string out;
    for (std::size_t i = words.size(); i-- > 0;) {
        const int width = i + 1 == words.size() ? first_width : 8;
        out += fmt::format("{}{:0{}x}", out.empty() ? "" : ",", words[i], width);
    }
    return out;
}

std::optional<std::string> node_cpus_value(const std::string& sys_root, const std::string& queue_file,
                                           std::string* why) {
    // queue_file: class/net/DEV/queues/Q/FILE
    const std::string dev = std::filesystem::path(queue_file).parent_path().parent_path().parent_path().filename();
    auto topo = read_topology(sys_root);
    if (!topo || topo->nodes.empty()) {
        *why = fmt::format("{}: the machine's NUMA nodes cannot be read; left alone", queue_file);
        return std::nullopt;
    }
    std::optional<int> node = device_numa_node(sys_root, dev);
    if (!node && topo->nodes.size() == 1) node = topo->nodes.front();
    if (!node) {
        *why = fmt::format("{}: device {} has no NUMA node (a virtual device, or the firmware does not say); left alone",
                           queue_file, dev);
        return std::nullopt;
    }
    auto current = first_line(std::filesystem::path(sys_root) / queue_file);
    if (!current || current->empty()) {
        // xps_cpus of a single-queue device reads ENOENT: the kernel has no map to set.
        *why = fmt::format("{}: cannot be read here (a single-queue device has no XPS map); left alone", queue_file);
        return std::nullopt;
    }
    auto mask = cpu_mask_like(topo->cpus_of(*node), *current);
    if (!mask) {
        *why = fmt::format("{}: {}; left alone", queue_file, mask.error().message());
        return std::nullopt;
    }
    return *mask;
}

}  // namespace hotline
