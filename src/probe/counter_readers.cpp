// SPDX-License-Identifier: Apache-2.0
#include "counter_readers.hpp"

#include <bpf/bpf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <fmt/format.h>

#include "hotline/probe/prog_stats.hpp"

namespace hotline {

namespace {

// One lookup of key 0 in a per-CPU array map: one value per possible CPU.
template <class V>
Result<std::vector<V>> lookup_percpu(int fd, int ncpu, const std::string& what) {
    std::vector<V> vals(static_cast<std::size_t>(ncpu));
    std::uint32_t key = 0;
    if (bpf_map_lookup_elem(fd, &key, vals.data())) return make_error("reading " + what, errno);
    return vals;
}

}  // namespace

// A read-only shared mapping of an mmapable array map, unmapped with the last owner.
Result<std::shared_ptr<const void>> map_view(bpf_map* m) {
    std::size_t page = std::size_t(sysconf(_SC_PAGESIZE));
    std::size_t bytes = std::size_t(bpf_map__value_size(m)) * bpf_map__max_entries(m);
    bytes = (bytes + page - 1) / page * page;
    void* p = mmap(nullptr, bytes, PROT_READ, MAP_SHARED, bpf_map__fd(m), 0);
    if (p == MAP_FAILED) return make_error(fmt::format("mapping the {} map", bpf_map__name(m)), errno);
    return std::shared_ptr<const void>(p, [bytes](const void* q) { munmap(const_cast<void*>(q), bytes); });
}

ProgCost prog_cost(const bpf_object* obj, const std::string& target, const std::string& program) {
    ProgCost pc;
    pc.target = target;
    pc.program = program;
    if (auto st = prog_run_stats(obj, program.c_str())) {
        pc.run_cnt = st->run_cnt;
        pc.run_time_ns = st->run_time_ns;
        pc.recursion_misses = st->recursion_misses;
        pc.timed_runs = st->run_cnt;
    }
    return pc;
}

int CounterReader::ncpu() const { return libbpf_num_possible_cpus(); }

int CounterReader::cpu_of(int idx) const {
    int cpu = idx < int(topo_.cpus.size()) ? topo_.cpus[std::size_t(idx)] : idx;
    return cpu < int(width()) ? cpu : -1;
}

std::uint64_t CounterReader::object_id(const std::string& target, std::uint64_t addr) const {
    auto [it, fresh] = ids_.try_emplace({target, addr}, next_id_);
    if (fresh) ++next_id_;
    return it->second;
}

Result<std::vector<hl_hits>> CounterReader::read_hits(int hits_fd) const {
    return lookup_percpu<hl_hits>(hits_fd, ncpu(), "the hit counters");
}

Status CounterReader::read_target(const Attached& a, const std::vector<hl_hits>& hits, const TargetPlan* tp,
                                  Snapshot& s) const {
    TargetCounters c;
    c.target = a.target;
    c.mechanism = a.mech;
    c.fidelity = tp ? tp->fidelity : Fidelity::kNone;
    c.has_latency = tp && tp->latency;
    size_per_cpu(c, kTargetFields, width());
    // Proxies are not timed and have no `counts` map: their latency counters stay zero.
    int counts_fd = a.obj->map_fd("counts");
    auto vals = counts_fd < 0 ? Result<std::vector<hl_counts>>(std::vector<hl_counts>(std::size_t(ncpu())))
                              : lookup_percpu<hl_counts>(counts_fd, ncpu(), "counters of " + a.target);
    if (!vals) return vals.error();
    for (int i = 0; i < ncpu(); ++i) {
        int cpu = cpu_of(i);
        if (cpu < 0) continue;
        add_cpu_value(c, kTargetFields, AbiSource::kHitsSlot, &hits[std::size_t(i)].t[a.slot], cpu);
        add_cpu_value(c, kTargetFields, AbiSource::kCounts, &(*vals)[std::size_t(i)], cpu);
    }
    if (a.handoffs)
        if (auto st = read_handoffs(a, c, s.objects); !st) return st.error();
    s.targets.push_back(std::move(c));
    return ok_status();
}

Status CounterReader::read_handoffs(const Attached& a, TargetCounters& c, std::vector<HotObject>& objects) const {
    c.has_handoffs = true;
    c.object_type = a.object_type;
    auto& h = c.handoffs;
    size_per_cpu(h, kHandoffFields, width());
    int nn = std::min<int>(HL_MAX_NODES, topo_.nodes.empty() ? 1 : topo_.nodes.back() + 1);
    h.matrix.assign(std::size_t(nn), std::vector<std::uint64_t>(std::size_t(nn), 0));
    auto vals = lookup_percpu<hl_handoff_counts>(a.obj->map_fd("handoffs"), ncpu(), "handoffs of " + a.target);
    if (!vals) return vals.error();
    for (int i = 0; i < ncpu(); ++i) {
        int cpu = cpu_of(i);
        if (cpu < 0) continue;
        const auto& v = (*vals)[std::size_t(i)];
        add_cpu_value(h, kHandoffFields, AbiSource::kHandoffCounts, &v, cpu);
        int to = std::min(topo_.node_of(cpu), nn - 1);
        for (int f = 0; f < nn; ++f) h.matrix[f][to] += v.from_node[f];
    }
    bpf_map* m = bpf_object__find_map_by_name(a.obj->obj(), "owners");
    bpf_map* mx = bpf_object__find_map_by_name(a.obj->obj(), "owner_aux");
    if (!m || !mx) return make_error("no owner table in the object of " + a.target, ENOENT);
    h.capacity = bpf_map__max_entries(m) * HL_OWNER_WAYS;
    h.sample = std::max(1, handoff_sample_);
    if (!a.owners_view) {
        auto v = map_view(m);
        if (!v) return v.error();
        auto x = map_view(mx);
        if (!x) return x.error();
        a.owners_view = std::move(*v);
        a.aux_view = std::move(*x);
    }
    std::uint64_t live = 0;
    scan_owners(a, h.capacity, objects, &live);
    h.live_objects = live;
    return ok_status();
}

// The owner table: every live object with its handoff counts, scanned in its
// mapping.  Ways are written by BPF programs while this runs; a way is read field
// by field, so a torn read can pair one object with another's counts for one
// interval (the slot contents are best effort anyway).
void CounterReader::scan_owners(const Attached& a, std::uint32_t capacity, std::vector<HotObject>& objects,
                                std::uint64_t* live) const {
    const auto* owners = static_cast<const volatile hl_owner*>(a.owners_view.get());
    const auto* aux = static_cast<const volatile std::uint64_t*>(a.aux_view.get());
    bool work = ksyms_ && a.object_type == "work_struct";
    for (std::uint32_t i = 0; i < capacity; ++i) {
        const volatile hl_owner& o = owners[i];
        std::uint64_t obj = o.obj;
        if (!obj) continue;
        ++*live;
        std::uint64_t handoffs = o.handoffs;
        if (!handoffs) continue;
        HotObject ho;
        ho.target = a.target;
        ho.type = a.object_type;
        ho.id = object_id(a.target, obj);
        ho.handoffs = handoffs;
        ho.cross_node = o.cross_node;
        ho.last_cpu = int(HL_CPU_OF(o.cpu_node));
        if (std::uint64_t fn = work ? aux[i] : 0) ho.detail = ksyms_->symbolize(fn).value_or("");
        objects.push_back(std::move(ho));
    }
}

Status CounterReader::read_workq(const LoadedObject& workq, Snapshot& s) const {
    s.has_workq = true;
    auto& w = s.workq;
    size_per_cpu(w, kWorkqFields, width());
    auto vals = lookup_percpu<hl_workq_counts>(workq.map_fd("workq"), ncpu(), "workqueue counters");
    if (!vals) return vals.error();
    for (int i = 0; i < ncpu(); ++i) {
        int cpu = cpu_of(i);
        if (cpu < 0) continue;
        add_cpu_value(w, kWorkqFields, AbiSource::kWorkqCounts, &(*vals)[std::size_t(i)], cpu);
    }
    return read_work_funcs(workq, w);
}

Status CounterReader::read_work_funcs(const LoadedObject& workq, WorkqCounters& w) const {
    auto tables = lookup_percpu<hl_work_funcs>(workq.map_fd("work_funcs"), ncpu(), "work function counts");
    if (!tables) return tables.error();
    std::uint64_t other = 0;
    for (auto [func, n] : sum_work_funcs(*tables, other)) {
        std::string name = ksyms_ ? ksyms_->symbolize(func).value_or("") : "";
        w.funcs[name.empty() ? "(unknown function)" : name] += n;
    }
    if (other) w.funcs["(other functions)"] += other;
    return ok_status();
}

Status CounterReader::read_sampling(const LoadedObject& sampling, const std::vector<SampledTarget>& sampled,
                                    Snapshot& s) const {
    auto vals = lookup_percpu<hl_sample_counts>(sampling.map_fd("samples"), ncpu(), "sampling counters");
    if (!vals) return vals.error();
    size_per_cpu(s, kSampleFields, width());
    for (int i = 0; i < ncpu(); ++i) {
        int cpu = cpu_of(i);
        if (cpu < 0) continue;
        if (cpu < int(width())) add_cpu_value(s, kSampleFields, AbiSource::kSampleCounts, &(*vals)[std::size_t(i)], cpu);
    }
    for (std::size_t k = 0; k < sampled.size(); ++k) {
        TargetCounters c;
        c.target = sampled[k].target;
        c.mechanism = Mechanism::kSampling;
        c.fidelity = Fidelity::kSampled;
        c.calls.assign(width(), 0);
        c.events = s.samples_total;
        for (int i = 0; i < ncpu(); ++i)
            if (int cpu = cpu_of(i); cpu >= 0) c.calls[cpu] = (*vals)[std::size_t(i)].hits[k];
        s.targets.push_back(std::move(c));
    }
    return ok_status();
}

}  // namespace hotline
