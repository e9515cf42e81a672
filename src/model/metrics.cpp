// Deltas between cumulative snapshots and per-node folds.
#include "hotline/metrics.hpp"

#include <algorithm>

namespace hotline {

std::uint64_t TargetCounters::total_calls() const {
    std::uint64_t s = 0;
    for (auto v : calls) s += v;
    return s;
}

std::uint64_t HandoffCounters::total(const std::vector<std::uint64_t>& v) const {
    std::uint64_t s = 0;
    for (auto x : v) s += x;
    return s;
}

std::vector<HotObject> top_objects(const std::vector<HotObject>& objs, std::size_t n) {
    std::vector<HotObject> v;
    for (auto& o : objs)
        if (o.handoffs) v.push_back(o);
    std::stable_sort(v.begin(), v.end(), [](const HotObject& a, const HotObject& b) {
        if (a.cross_node != b.cross_node) return a.cross_node > b.cross_node;
        return a.handoffs > b.handoffs;
    });
    if (v.size() > n) v.resize(n);
    return v;
}

const TargetCounters* Snapshot::find(const std::string& target) const {
    for (auto& t : targets)
        if (t.target == target) return &t;
    return nullptr;
}

static std::vector<std::uint64_t> sub(const std::vector<std::uint64_t>& a,
                                      const std::vector<std::uint64_t>& b) {
    std::vector<std::uint64_t> out(std::max(a.size(), b.size()), 0);
    for (std::size_t i = 0; i < out.size(); ++i) {
        std::uint64_t x = i < a.size() ? a[i] : 0, y = i < b.size() ? b[i] : 0;
        // Counters never go backwards; a smaller later value means the source restarted.
        out[i] = x >= y ? x - y : x;
    }
    return out;
}

static std::uint64_t sub1(std::uint64_t later, std::uint64_t earlier) {
    return later >= earlier ? later - earlier : later;
}

Interval delta(const Snapshot& earlier, const Snapshot& later) {
    Interval iv;
    iv.t_start = earlier.t;
    iv.t_end = later.t;
    iv.d.t = later.t - earlier.t;
    for (const auto& l : later.targets) {
        TargetCounters d = l;
        if (const TargetCounters* e = earlier.find(l.target)) {
            d.calls = sub(l.calls, e->calls);
            d.events = sub(l.events, e->events);
            d.lat_count = sub1(l.lat_count, e->lat_count);
            d.lat_sum_ns = sub1(l.lat_sum_ns, e->lat_sum_ns);
            d.lat_lost = sub1(l.lat_lost, e->lat_lost);
            for (int i = 0; i < HL_HIST_SLOTS; ++i) d.hist[i] = sub1(l.hist[i], e->hist[i]);
            if (l.has_handoffs && e->has_handoffs) {
                auto& h = d.handoffs;
                const auto& eh = e->handoffs;
                h.tracked = sub(l.handoffs.tracked, eh.tracked);
                h.same_cpu = sub(l.handoffs.same_cpu, eh.same_cpu);
                h.cross_cpu = sub(l.handoffs.cross_cpu, eh.cross_cpu);
                h.cross_node = sub(l.handoffs.cross_node, eh.cross_node);
                h.new_objects = sub(l.handoffs.new_objects, eh.new_objects);
                h.remote = sub(l.handoffs.remote, eh.remote);
                for (std::size_t f = 0; f < h.matrix.size() && f < eh.matrix.size(); ++f)
                    h.matrix[f] = sub(l.handoffs.matrix[f], eh.matrix[f]);
                h.evictions = sub1(l.handoffs.evictions, eh.evictions);
                // live_objects and capacity are gauges: the later value stands.
            }
        }
        iv.d.targets.push_back(std::move(d));
    }
    for (const auto& lo : later.objects) {
        HotObject o = lo;
        for (const auto& eo : earlier.objects) {
            if (eo.id == lo.id && eo.target == lo.target) {
                o.handoffs = sub1(lo.handoffs, eo.handoffs);
                o.cross_node = sub1(lo.cross_node, eo.cross_node);
                break;
            }
        }
        iv.d.objects.push_back(std::move(o));
    }
    if (later.has_workq) {
        iv.d.has_workq = true;
        auto& w = iv.d.workq;
        const auto& lw = later.workq;
        const auto& ew = earlier.workq;
        w = lw;
        if (earlier.has_workq) {
            w.irqs = sub(lw.irqs, ew.irqs);
            w.queued = sub(lw.queued, ew.queued);
            w.remote = sub(lw.remote, ew.remote);
            w.executed = sub(lw.executed, ew.executed);
            w.lat_count = sub1(lw.lat_count, ew.lat_count);
            w.lat_sum_ns = sub1(lw.lat_sum_ns, ew.lat_sum_ns);
            w.lat_lost = sub1(lw.lat_lost, ew.lat_lost);
            for (int i = 0; i < HL_HIST_SLOTS; ++i) w.hist[i] = sub1(lw.hist[i], ew.hist[i]);
            for (auto& [f, n] : w.funcs) {
                auto it = ew.funcs.find(f);
                if (it != ew.funcs.end()) n = sub1(n, it->second);
            }
        }
    }
    iv.d.samples_total = sub(later.samples_total, earlier.samples_total);
    iv.d.samples_kernel = sub(later.samples_kernel, earlier.samples_kernel);
    for (const auto& lc : later.cost) {
        ProgCost c = lc;
        for (const auto& ec : earlier.cost) {
            if (ec.target == lc.target && ec.program == lc.program) {
                c.run_cnt = sub1(lc.run_cnt, ec.run_cnt);
                c.run_time_ns = sub1(lc.run_time_ns, ec.run_time_ns);
                c.recursion_misses = sub1(lc.recursion_misses, ec.recursion_misses);
            }
        }
        iv.d.cost.push_back(c);
    }
    return iv;
}

std::map<int, std::uint64_t> fold_by_node(const std::vector<std::uint64_t>& per_cpu,
                                          const Topology& topo) {
    std::map<int, std::uint64_t> out;
    for (int n : topo.nodes) out[n] = 0;
    for (std::size_t cpu = 0; cpu < per_cpu.size(); ++cpu)
        if (per_cpu[cpu]) out[topo.node_of(int(cpu))] += per_cpu[cpu];
    return out;
}

double sampled_share(const TargetCounters& t, const std::vector<std::uint64_t>& samples_total) {
    std::uint64_t hits = 0, total = 0;
    for (std::size_t i = 0; i < t.calls.size(); ++i) {
        hits += t.calls[i];
        if (i < samples_total.size()) total += samples_total[i];
    }
    return total ? double(hits) / double(total) : 0.0;
}

std::uint64_t hist_slot_low(int slot) { return slot <= 0 ? 0 : (std::uint64_t(1) << slot); }

}  // namespace hotline
