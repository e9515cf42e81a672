// SPDX-License-Identifier: Apache-2.0
// Deltas between cumulative snapshots and per-node folds.
#include "hotline/model/metrics.hpp"

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

std::map<std::uint64_t, std::uint64_t> sum_work_funcs(const std::vector<hl_work_funcs>& per_cpu,
                                                      std::uint64_t& other) {
    std::map<std::uint64_t, std::uint64_t> by_func;
    other = 0;
    for (const hl_work_funcs& t : per_cpu) {
        for (const hl_work_func& e : t.e)
            if (e.func && e.queued) by_func[e.func] += e.queued;
        other += t.other;
    }
    return by_func;
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

// d = later - earlier for every counter of the table; gauges keep the later value.
template <class S>
static void sub_fields(S& d, const S& later, const S& earlier, Fields<S> fields) {
    for (const auto& f : fields) {
        if (f.gauge) continue;
        if (f.per_cpu) d.*f.per_cpu = sub(later.*f.per_cpu, earlier.*f.per_cpu);
        else if (f.value) d.*f.value = sub1(later.*f.value, earlier.*f.value);
        else if (f.hist)
            for (std::size_t i = 0; i < HL_HIST_SLOTS; ++i)
                (d.*f.hist)[i] = sub1((later.*f.hist)[i], (earlier.*f.hist)[i]);
    }
}

static TargetCounters target_delta(const TargetCounters& l, const TargetCounters* e) {
    TargetCounters d = l;
    if (!e) return d;
    sub_fields(d, l, *e, kTargetFields);
    if (l.has_handoffs && e->has_handoffs) {
        auto& h = d.handoffs;
        const auto& eh = e->handoffs;
        sub_fields(h, l.handoffs, eh, kHandoffFields);
        for (std::size_t f = 0; f < h.matrix.size() && f < eh.matrix.size(); ++f)
            h.matrix[f] = sub(l.handoffs.matrix[f], eh.matrix[f]);
    }
    return d;
}

// The entry of `earlier` that names the same thing (the same key) as a later one.
template <class T, class SameKey>
static const T* earlier_of(const std::vector<T>& earlier, SameKey same) {
    for (const auto& e : earlier)
        if (same(e)) return &e;
    return nullptr;
}

static HotObject object_delta(const HotObject& lo, const std::vector<HotObject>& earlier) {
    HotObject o = lo;
    auto* eo = earlier_of(earlier, [&](const HotObject& e) { return e.id == lo.id && e.target == lo.target; });
    if (!eo) return o;
    o.handoffs = sub1(lo.handoffs, eo->handoffs);
    o.cross_node = sub1(lo.cross_node, eo->cross_node);
    return o;
}

static WorkqCounters workq_delta(const WorkqCounters& lw, const WorkqCounters* ew) {
    WorkqCounters w = lw;
    if (!ew) return w;
    sub_fields(w, lw, *ew, kWorkqFields);
    for (auto& [f, n] : w.funcs) {
        auto it = ew->funcs.find(f);
        if (it != ew->funcs.end()) n = sub1(n, it->second);
    }
    return w;
}

static ProgCost cost_delta(const ProgCost& lc, const std::vector<ProgCost>& earlier) {
    ProgCost c = lc;
    auto* ec = earlier_of(earlier, [&](const ProgCost& e) { return e.target == lc.target && e.program == lc.program; });
    if (!ec) return c;
    c.run_cnt = sub1(lc.run_cnt, ec->run_cnt);
    c.run_time_ns = sub1(lc.run_time_ns, ec->run_time_ns);
    c.recursion_misses = sub1(lc.recursion_misses, ec->recursion_misses);
    c.timed_runs = sub1(lc.timed_runs, ec->timed_runs);
    return c;
}

Interval delta(const Snapshot& earlier, const Snapshot& later) {
    Interval iv;
    iv.t_start = earlier.t;
    iv.t_end = later.t;
    iv.d.t = later.t - earlier.t;
    iv.d.attached_s = later.attached_s - earlier.attached_s;
    iv.d.duty_percent = later.duty_percent;
    iv.d.tracking_s = later.tracking_s - earlier.tracking_s;
    iv.d.track_percent = later.track_percent;
    iv.d.duty_period_s = later.duty_period_s;
    for (const auto& l : later.targets) iv.d.targets.push_back(target_delta(l, earlier.find(l.target)));
    for (const auto& lo : later.objects) iv.d.objects.push_back(object_delta(lo, earlier.objects));
    if (later.has_workq) {
        iv.d.has_workq = true;
        iv.d.workq = workq_delta(later.workq, earlier.has_workq ? &earlier.workq : nullptr);
    }
    sub_fields(iv.d, later, earlier, kSampleFields);
    for (const auto& lc : later.cost) iv.d.cost.push_back(cost_delta(lc, earlier.cost));
    return iv;
}

double Interval::windows_scale(const TargetCounters& t) const {
    const HandoffCounters& h = t.handoffs;
    const std::uint64_t windowed = h.total(h.windowed), calls = t.total_calls();
    return d.track_percent < 100 && windowed > 0 && windowed < calls ? double(calls) / double(windowed) : 1.0;
}

double Interval::handoff_scale(const TargetCounters& t) const {
    return double(std::max(t.handoffs.sample, 1)) * windows_scale(t);
}

bool Interval::handoffs_tracked(const TargetCounters& t) const {
    return t.has_handoffs && (d.track_percent >= 100 || t.handoffs.total(t.handoffs.windowed) > 0);
}

void merge_session(Snapshot& into, Snapshot&& from) {
    // Sessions opened together run their windows in step (one duty cycle, begun
    // within the milliseconds of opening): the first one's attached time stands for all.
    if (into.attached_s == 0) {
        into.attached_s = from.attached_s;
        into.duty_percent = from.duty_percent;
        into.tracking_s = from.tracking_s;
        into.track_percent = from.track_percent;
        into.duty_period_s = from.duty_period_s;
    }
    for (auto& t : from.targets) into.targets.push_back(std::move(t));
    for (auto& c : from.cost) into.cost.push_back(std::move(c));
    for (auto& o : from.objects) into.objects.push_back(std::move(o));
    if (!into.has_workq && from.has_workq) {
        into.has_workq = true;
        into.workq = std::move(from.workq);
    }
    // samples_total is empty in a session without the sampling program.
    if (!into.samples_total.empty()) return;
    for (const auto& f : kSampleFields) {
        if (f.per_cpu) into.*f.per_cpu = std::move(from.*f.per_cpu);
        else if (f.value) into.*f.value = from.*f.value;
        else if (f.hist) into.*f.hist = from.*f.hist;
    }
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
