// SPDX-License-Identifier: Apache-2.0
// Discovery's read side: per-slot counts summed over the CPUs, the slot pairs
// of handoffs, the owner table's objects with handoffs, the programs' cost.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <algorithm>
#include <cerrno>

#include "counter_readers.hpp"
#include "discovery_impl.hpp"
#include "hotline/base/util.hpp"
#include "hotline/model/discover_abi.h"

namespace hotline {

// The node of per-CPU value `idx` (the possible CPUs in order), folded into
// the matrix's last row past HL_MAX_NODES.
std::size_t DiscoveryImpl::node_of_value(int idx) const {
    return std::size_t(std::clamp(topo_.node_of(idx), 0, HL_MAX_NODES - 1));
}

Status DiscoveryImpl::read_counts(DiscoverReading& r) const {
    const int ncpu = libbpf_num_possible_cpus();
    const int fd = obj_->map_fd("disc_counts");
    const std::size_t nodes = std::clamp<std::size_t>(topo_.nodes.size(), 1, HL_MAX_NODES);
    std::vector<hl_disc_counts> vals(std::size_t(std::max(ncpu, 1)));
    r.slots.assign(slots_.size(), {});
    for (std::uint32_t k = 0; k < slots_.size(); ++k) {
        if (bpf_map_lookup_elem(fd, &k, vals.data())) return make_error("reading the discover counters", errno);
        auto& c = r.slots[k];
        c.node_matrix.assign(nodes, std::vector<std::uint64_t>(nodes, 0));
        for (std::size_t i = 0; i < vals.size(); ++i) {
            const auto& v = vals[i];
            for (std::size_t from = 0; from < HL_MAX_NODES; ++from)
                c.node_matrix[std::min(from, nodes - 1)][std::min(node_of_value(int(i)), nodes - 1)] += v.from_node[from];
            c.touches += v.touches;
            c.same_cpu += v.same_cpu;
            c.cross_cpu += v.cross_cpu;
            c.cross_node += v.cross_node;
            c.new_objects += v.new_objects;
            c.evicted += v.evicted;
        }
    }
    return ok_status();
}

Status DiscoveryImpl::read_pairs(DiscoverReading& r) const {
    const int ncpu = libbpf_num_possible_cpus();
    const int fd = obj_->map_fd("disc_pairs");
    std::vector<std::uint64_t> vals(std::size_t(std::max(ncpu, 1)));
    for (std::size_t from = 0; from < slots_.size(); ++from)
        for (std::size_t to = 0; to < slots_.size(); ++to) {
            std::uint32_t k = std::uint32_t(from * HL_DISC_SLOTS + to);
            if (bpf_map_lookup_elem(fd, &k, vals.data())) return make_error("reading the discover pairs", errno);
            std::uint64_t n = 0;
            for (auto v : vals) n += v;
            if (n) r.pairs.push_back({from, to, n});
        }
    std::sort(r.pairs.begin(), r.pairs.end(), [](auto& a, auto& b) { return a.handoffs > b.handoffs; });
    return ok_status();
}

// Field by field from the shared mapping: a way may change while it is read, so
// a torn read can pair one object with another's counts (best effort, as the
// targets' owner table).
Status DiscoveryImpl::scan_owners(DiscoverReading& r) const {
    const auto* sets = static_cast<const volatile hl_disc_set*>(owners_view_.get());
    const std::uint32_t n = bpf_map__max_entries(bpf_object__find_map_by_name(obj_->obj(), "disc_owners"));
    if (next_id_.size() < type_names_.size()) next_id_.resize(type_names_.size(), 1);
    for (std::uint32_t i = 0; i < n; ++i)
        for (const volatile hl_disc_owner& o : sets[i].w) {
            std::uint64_t obj = o.obj;
            if (!obj) continue;
            ++r.live_objects;
            std::uint16_t type = o.type;
            std::uint64_t handoffs = o.handoffs;
            if (!handoffs || type >= type_names_.size()) continue;
            auto [it, fresh] = ids_.try_emplace({type, obj}, next_id_[type]);
            if (fresh) ++next_id_[type];
            r.objects.push_back({type_names_[type], it->second, handoffs, o.cross_node,
                                 std::min<std::size_t>(o.slot, slots_.size() - 1)});
        }
    std::sort(r.objects.begin(), r.objects.end(), [](auto& a, auto& b) { return a.handoffs > b.handoffs; });
    return ok_status();
}

Result<DiscoverReading> DiscoveryImpl::read() const {
    DiscoverReading r;
    if (auto st = read_counts(r); !st) return st.error();
    if (auto st = read_pairs(r); !st) return st.error();
    if (auto st = scan_owners(r); !st) return st.error();
    return r;
}

std::vector<ProgCost> DiscoveryImpl::costs() const {
    std::vector<ProgCost> cost;
    auto read_counts = [&] {
        for (bpf_program* p : programs_) cost.push_back(prog_cost(obj_->obj(), "(discover)", bpf_program__name(p)));
    };
    if (scaler_) scaler_->read_scaled(*stats_, cost, read_counts);
    else read_counts();
    return cost;
}

ProgCost DiscoveryImpl::total_cost() const {
    ProgCost total;
    total.target = "(discover)";
    for (const auto& c : costs()) {
        total.run_cnt += c.run_cnt;
        total.run_time_ns += c.run_time_ns;
        total.timed_runs += c.timed_runs;
        total.recursion_misses += c.recursion_misses;
    }
    return total;
}

}  // namespace hotline
