// SPDX-License-Identifier: Apache-2.0
// `hotline cost`: the per-hit price of counting, latency and handoff tracking next
// to an empty program on the same attach point, all attached in one run.
#include "hotline/probe/cost.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fmt/format.h>

#include <map>
#include <optional>
#include <set>

#include "empty.skel.h"
#include "proxy.skel.h"
#include "hotline/probe/bpf_skeleton.hpp"
#include "hotline/probe/prog_stats.hpp"

namespace hotline {

const CostVariant* CostRow::find(const std::string& name) const {
    for (auto& v : variants)
        if (v.name == name) return &v;
    return nullptr;
}

double CostRow::ratio(const std::string& name) const {
    const CostVariant* e = find("empty");
    const CostVariant* v = find(name);
    if (!e || !v || e->ns_per_run() <= 0 || v->run_cnt == 0) return 0;
    return v->ns_per_run() / e->ns_per_run();
}

double CostRow::hits_per_s(double seconds) const {
    const CostVariant* e = find("empty");
    return e && seconds > 0 ? double(e->run_cnt) / seconds : 0;
}

double CostRow::extra_ns_per_s(const std::string& name, double seconds) const {
    const CostVariant* e = find("empty");
    const CostVariant* v = find(name);
    if (!e || !v || !v->run_cnt || seconds <= 0) return 0;
    return (v->ns_per_run() - e->ns_per_run()) * double(v->run_cnt) / seconds;
}

double cost_budget(const std::string& variant) {
    if (variant == "count") return kCountBudget;
    if (variant == "latency") return kLatencyBudget;
    if (variant == "handoff") return kHandoffBudget;
    return 0;
}

namespace {

// Where one of hotline's entry programs is attached, and how its empty twin is.
struct AttachPoint {
    std::string name;                     // "tp_btf/consume_skb", "fentry/dst_release"
    const ProxyProgram* proxy = nullptr;  // a proxy's tracepoint (registry)
    Mechanism mechanism = Mechanism::kUnavailable;
    std::string func;                     // fentry and kprobe: the function
};

std::optional<AttachPoint> attach_point(const std::string& target, const std::string& prog) {
    if (const ProxyProgram* p = find_proxy_program(prog))
        return AttachPoint{p->attach_point(), p, Mechanism::kTracepoint, ""};
    if (prog.rfind("hl_fentry", 0) == 0) return AttachPoint{"fentry/" + target, nullptr, Mechanism::kFentry, target};
    if (prog == "hl_kprobe") return AttachPoint{"kprobe/" + target, nullptr, Mechanism::kKprobe, target};
    return std::nullopt;
}

std::string attach_name(const std::string& target, const std::string& prog) {
    auto ap = attach_point(target, prog);
    return ap ? ap->name : "";
}

bool is_exit(const std::string& prog) { return prog == "hl_fexit" || prog == "hl_kretprobe"; }

// One empty program on one attach point.
struct EmptyProbe {
    std::unique_ptr<LoadedObject> obj;
    std::string prog;
    ProgRunStats at_start, at_end;
    ProgRunStats now() const { return prog_run_stats(obj->obj(), prog.c_str()).value_or(ProgRunStats{}); }
};

// The empty program of an attach point, or with `lead` the program attached
// ahead of every measured variant (registry: ProxyProgram::lead).
std::string empty_program(const AttachPoint& ap, bool lead) {
    if (ap.proxy) return lead && !ap.proxy->lead.empty() ? ap.proxy->lead : ap.proxy->empty;
    return ap.mechanism == Mechanism::kKprobe ? "hl_empty_kprobe" : "hl_empty_fentry";
}

// Loads and attaches one program of object S, nothing else of it; nullopt when
// S has no program of that name.
template <class S>
std::optional<Result<EmptyProbe>> load_only(const AttachPoint& ap, const std::string& name) {
    LibbpfCapture cap;
    SkelGuard<S> s(S::open());
    if (!s) return make_error("empty program: open", errno);
    bpf_program* want = bpf_object__find_program_by_name(s->obj, name.c_str());
    if (!want) return std::nullopt;
    if (ap.mechanism == Mechanism::kFentry) bpf_program__set_attach_target(want, 0, ap.func.c_str());
    bpf_program* p;
    bpf_object__for_each_program(p, s->obj) bpf_program__set_autoload(p, p == want);
    if (int err = S::load(s.get())) {
        Error e = make_error("empty program for " + ap.name + ": load", err);
        e.detail = cap.tail(6);
        return e;
    }
    bpf_link* l = ap.mechanism == Mechanism::kKprobe ? bpf_program__attach_kprobe(want, false, ap.func.c_str())
                                                     : bpf_program__attach(want);
    if (!l) return make_error("empty program for " + ap.name + ": attach", errno);
    EmptyProbe e;
    e.prog = name;
    e.obj = s.release();
    e.obj->own_link(l);
    return e;
}

// A proxy's empty and lead programs live in the empty object or next to the
// proxy's own programs.
Result<EmptyProbe> load_empty(const AttachPoint& ap, bool lead) {
    std::string name = empty_program(ap, lead);
    if (auto e = load_only<hl_empty_bpf>(ap, name)) return std::move(*e);
    if (ap.proxy)
        if (auto e = load_only<hl_proxy_bpf>(ap, name)) return std::move(*e);
    return make_error("no empty program for " + ap.name, EINVAL);
}

struct VariantOptions {
    SessionOptions count, latency, handoff;
};

VariantOptions variant_options(const SessionOptions& opts) {
    SessionOptions base;
    base.targets = opts.targets;
    base.funcs = opts.funcs;
    base.forced = opts.forced;
    base.workq = false;
    base.time_every_run = true;  // variants are compared run by run
    VariantOptions v{base, base, base};
    v.count.latency = false;
    v.count.handoffs = false;
    v.latency.latency = true;
    v.latency.handoffs = false;
    v.handoff.latency = false;
    v.handoff.handoffs = true;
    return v;
}

// The attach points of the counting variant, from a session closed again so that
// the lead programs can be attached ahead of every measured variant.
Result<std::vector<AttachPoint>> find_attach_points(const SessionOptions& count, const KernelInfo& k,
                                                    const Topology& topo) {
    auto plan_only = Session::open(count, k, topo);
    if (!plan_only) return plan_only.error();
    auto snap = (*plan_only)->read();
    if (!snap) return snap.error();
    std::vector<AttachPoint> out;
    std::set<std::string> seen;
    for (auto& c : snap->cost)
        if (auto ap = attach_point(c.target, c.program); ap && seen.insert(ap->name).second) out.push_back(*ap);
    return out;
}

// Empty programs by attach point; with `lead`, failures are skipped silently (the
// lead only shields the measured variants from cold code and cold lines).
std::map<std::string, EmptyProbe> attach_empties(const std::vector<AttachPoint>& points, bool lead,
                                                 std::vector<std::string>* notes) {
    std::map<std::string, EmptyProbe> out;
    for (auto& ap : points) {
        auto e = load_empty(ap, lead);
        if (!e) {
            if (notes) notes->push_back(e.error().message());
            continue;
        }
        out.emplace(ap.name, std::move(*e));
    }
    return out;
}

// Latency: the entry program plus its exit program, per call.
std::optional<CostVariant> latency_variant(const std::vector<ProgCost>& cost, const std::string& target,
                                           const std::string& ap) {
    CostVariant lv{"latency", "", 0, 0};
    bool entry_seen = false;
    for (auto& x : cost) {
        if (x.target != target) continue;
        if (attach_name(x.target, x.program) == ap) {
            lv.program = x.program;
            lv.run_cnt = x.run_cnt;
            lv.run_time_ns += x.run_time_ns;
            entry_seen = true;
        } else if (is_exit(x.program)) {
            lv.program += "+" + x.program;
            lv.run_time_ns += x.run_time_ns;
        }
    }
    if (!entry_seen) return std::nullopt;
    return lv;
}

struct VariantSessions {
    std::unique_ptr<Session> count, latency, handoff;
};

struct VariantDeltas {
    Interval count, latency, handoff;
};

CostRow make_row(const ProgCost& c, const std::string& ap, const std::map<std::string, EmptyProbe>& empties,
                 const VariantSessions& s, const VariantDeltas& d) {
    CostRow row;
    row.target = c.target;
    row.attach = ap;
    if (const TargetPlan* tp = s.count->plan().find(c.target)) row.mechanism = tp->mechanism;
    if (auto it = empties.find(ap); it != empties.end()) {
        const ProgRunStats &end = it->second.at_end, &start = it->second.at_start;
        row.variants.push_back(
            {"empty", it->second.prog, end.run_cnt - start.run_cnt, end.run_time_ns - start.run_time_ns});
    }
    row.variants.push_back({"count", c.program, c.run_cnt, c.run_time_ns});
    const TargetPlan* ltp = s.latency->plan().find(c.target);
    if (auto lv = latency_variant(d.latency.d.cost, c.target, ap); lv && ltp && ltp->latency)
        row.variants.push_back(*lv);
    for (auto& x : d.handoff.d.cost)
        if (x.target == c.target && attach_name(x.target, x.program) == ap)
            row.variants.push_back({"handoff", x.program, x.run_cnt, x.run_time_ns});
    return row;
}

// Runs `work` between two reads of every variant session and empty program,
// both in the same order: each program's window then starts and ends at the
// same place in the sequence, and every variant sees the calls the empty one
// saw (a slow guest's reads take long enough to miss or add calls otherwise).
Result<VariantDeltas> measure(const VariantSessions& s, std::map<std::string, EmptyProbe>& empties,
                              const std::function<Status()>& work, double* seconds) {
    for (auto& [ap, e] : empties) e.at_start = e.now();
    auto c0 = s.count->read(), l0 = s.latency->read(), h0 = s.handoff->read();
    if (!c0 || !l0 || !h0) return make_error("reading run statistics", EIO);
    double t0 = monotonic_seconds();
    if (auto st = work(); !st) return st.error();
    for (auto& [ap, e] : empties) e.at_end = e.now();
    auto c1 = s.count->read(), l1 = s.latency->read(), h1 = s.handoff->read();
    if (!c1 || !l1 || !h1) return make_error("reading run statistics", EIO);
    *seconds = monotonic_seconds() - t0;
    return VariantDeltas{delta(*c0, *c1), delta(*l0, *l1), delta(*h0, *h1)};
}

}  // namespace

Result<CostReport> measure_cost(const SessionOptions& opts, const KernelInfo& k, const Topology& topo,
                                const std::function<Status()>& work) {
    VariantOptions vo = variant_options(opts);
    auto points = find_attach_points(vo.count, k, topo);
    if (!points) return points.error();
    // A lead program goes first on every attach point: the first program of a
    // tracepoint or trampoline runs on cold dispatch code and stats lines and is
    // charged more than a later one (docs/overhead.md), which would otherwise fall
    // on whichever variant happens to be attached first.
    auto leads = attach_empties(*points, true, nullptr);
    CostReport rep;
    VariantSessions s;
    auto count = Session::open(vo.count, k, topo);
    if (!count) return count.error();
    s.count = std::move(*count);
    auto empties = attach_empties(*points, false, &rep.notes);
    auto latency = Session::open(vo.latency, k, topo);
    if (!latency) return latency.error();
    s.latency = std::move(*latency);
    auto handoff = Session::open(vo.handoff, k, topo);
    if (!handoff) return handoff.error();
    s.handoff = std::move(*handoff);

    auto d = measure(s, empties, work, &rep.seconds);
    if (!d) return d.error();
    // Rows: one per attach point of the counting session, in plan order.
    for (auto& c : d->count.d.cost) {
        std::string ap = attach_name(c.target, c.program);
        if (ap.empty()) continue;
        CostRow row = make_row(c, ap, empties, s, *d);
        if (const CostVariant* e = row.find("empty"); e && e->run_cnt < kCostMinHits)
            rep.notes.push_back(fmt::format(
                "{} on {}: {} hits in {:.1f} s, too few for a stable per-hit price; drive it harder "
                "(hotline cost -- COMMAND) or run longer (--duration)",
                row.target, row.attach, e->run_cnt, rep.seconds));
        rep.rows.push_back(std::move(row));
    }
    for (auto& c : d->count.d.cost)
        if (c.program == "hl_sample")
            rep.notes.push_back(fmt::format("sampling handler: {:.0f} ns per sample ({} samples); no empty "
                                            "perf_event twin is attached",
                                            c.ns_per_run(), c.run_cnt));
    return rep;
}

}  // namespace hotline
