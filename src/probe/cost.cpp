// `hotline cost`: the per-hit price of counting, latency and handoff tracking next
// to an empty program on the same attach point, all attached in one run.
#include "hotline/cost.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fmt/format.h>

#include <map>
#include <set>

#include "empty.skel.h"
#include "hotline/bpf_skeleton.hpp"

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

// Attach point of one of hotline's entry programs.
std::string attach_point(const std::string& target, const std::string& name) {
    const std::string kTrack = "_track";  // the tracking twin of a proxy program
    std::string prog = name;
    if (prog.size() > kTrack.size() && prog.compare(prog.size() - kTrack.size(), kTrack.size(), kTrack) == 0)
        prog.resize(prog.size() - kTrack.size());
    if (prog == "hl_tp_consume_skb") return "tp_btf/consume_skb";
    if (prog == "hl_tp_kfree_skb") return "tp_btf/kfree_skb";
    if (prog == "hl_tp_queue_work") return "tp_btf/workqueue_queue_work";
    if (prog.rfind("hl_fentry", 0) == 0) return "fentry/" + target;
    if (prog == "hl_kprobe") return "kprobe/" + target;
    return "";
}

bool is_exit(const std::string& prog) { return prog == "hl_fexit" || prog == "hl_kretprobe"; }

std::uint64_t stat(int fd, std::uint64_t* time_ns) {
    bpf_prog_info info{};
    std::uint32_t len = sizeof info;
    if (bpf_obj_get_info_by_fd(fd, &info, &len)) return 0;
    *time_ns = info.run_time_ns;
    return info.run_cnt;
}

// One empty program on one attach point.
struct EmptyProbe {
    std::unique_ptr<LoadedObject> obj;
    std::string prog;
};

Result<EmptyProbe> load_empty(const std::string& attach, bool toucher = false) {
    LibbpfCapture cap;
    SkelGuard<hl_empty_bpf> s(hl_empty_bpf::open());
    if (!s) return make_error("empty program: open", errno);
    bpf_program* want = nullptr;
    std::string func;
    if (attach == "tp_btf/consume_skb") want = toucher ? s->progs.hl_touch_consume_skb : s->progs.hl_empty_tp_consume_skb;
    else if (attach == "tp_btf/kfree_skb") want = toucher ? s->progs.hl_touch_kfree_skb : s->progs.hl_empty_tp_kfree_skb;
    else if (toucher) return make_error("no warm-up program for " + attach, EINVAL);
    else if (attach == "tp_btf/workqueue_queue_work") want = s->progs.hl_empty_tp_queue_work;
    else if (attach.rfind("fentry/", 0) == 0) {
        want = s->progs.hl_empty_fentry;
        func = attach.substr(7);
        bpf_program__set_attach_target(want, 0, func.c_str());
    } else if (attach.rfind("kprobe/", 0) == 0) {
        want = s->progs.hl_empty_kprobe;
        func = attach.substr(7);
    }
    if (!want) return make_error("no empty program for " + attach, EINVAL);
    bpf_program* p;
    bpf_object__for_each_program(p, s->obj) bpf_program__set_autoload(p, p == want);
    int err = hl_empty_bpf::load(s.get());
    if (err) {
        Error e = make_error("empty program for " + attach + ": load", err);
        e.detail = cap.tail(6);
        return e;
    }
    bpf_link* l = attach.rfind("kprobe/", 0) == 0 ? bpf_program__attach_kprobe(want, false, func.c_str())
                                                   : bpf_program__attach(want);
    if (!l) return make_error("empty program for " + attach + ": attach", errno);
    EmptyProbe e;
    e.prog = bpf_program__name(want);
    e.obj = s.release();
    e.obj->own_link(l);
    return e;
}

}  // namespace

Result<CostReport> measure_cost(const CostOptions& opts, const KernelInfo& k, const Topology& topo,
                                const std::function<Status()>& work) {
    SessionOptions base;
    base.targets = opts.targets;
    base.funcs = opts.funcs;
    base.forced = opts.forced;
    base.workq = false;

    SessionOptions count = base, latency = base, handoff = base;
    count.latency = false;
    count.handoffs = false;
    latency.latency = true;
    latency.handoffs = false;
    handoff.latency = false;
    handoff.handoffs = true;

    // A first session finds the attach points; it is closed again so that the
    // warm-up programs can be attached ahead of every measured variant.
    std::vector<ProgCost> points;
    {
        auto plan_only = Session::open(count, k, topo);
        if (!plan_only) return plan_only.error();
        auto snap = (*plan_only)->read();
        if (!snap) return snap.error();
        points = snap->cost;
    }
    // A lead program goes first on every attach point: the first program of a
    // tracepoint or trampoline runs on cold dispatch code and stats lines and is
    // charged ~100-300 ns more than a later one (measured: an empty program costs
    // 150-330 ns first and ~50 ns second on workqueue_queue_work), which would
    // otherwise fall on whichever variant happens to be attached first.  On the
    // skb tracepoints the lead also reads skb->_skb_refdst, so the line the
    // counting bodies read is not charged to the first of them either.
    CostReport rep;
    std::vector<EmptyProbe> touchers;
    std::set<std::string> led;
    for (auto& c : points) {
        std::string ap = attach_point(c.target, c.program);
        if (ap.empty() || !led.insert(ap).second) continue;
        bool skb = ap.rfind("tp_btf/", 0) == 0 && ap.find("skb") != std::string::npos;
        if (auto t = load_empty(ap, skb)) touchers.push_back(std::move(*t));
    }
    auto s_count = Session::open(count, k, topo);
    if (!s_count) return s_count.error();
    std::map<std::string, EmptyProbe> empties;  // by attach point
    for (auto& c : points) {
        std::string ap = attach_point(c.target, c.program);
        if (ap.empty() || empties.count(ap)) continue;
        auto e = load_empty(ap);
        if (!e) {
            rep.notes.push_back(e.error().message());
            continue;
        }
        empties.emplace(ap, std::move(*e));
    }
    auto s_latency = Session::open(latency, k, topo);
    if (!s_latency) return s_latency.error();
    auto s_handoff = Session::open(handoff, k, topo);
    if (!s_handoff) return s_handoff.error();

    std::map<std::string, std::uint64_t> empty_cnt0, empty_ns0;
    for (auto& [ap, e] : empties) {
        bpf_program* p = bpf_object__find_program_by_name(e.obj->obj(), e.prog.c_str());
        empty_cnt0[ap] = stat(bpf_program__fd(p), &empty_ns0[ap]);
    }
    auto c0 = (*s_count)->read(), l0 = (*s_latency)->read(), h0 = (*s_handoff)->read();
    if (!c0 || !l0 || !h0) return make_error("reading run statistics", EIO);
    double t0 = monotonic_seconds();
    if (auto st = work(); !st) return st.error();
    auto c1 = (*s_count)->read(), l1 = (*s_latency)->read(), h1 = (*s_handoff)->read();
    if (!c1 || !l1 || !h1) return make_error("reading run statistics", EIO);
    rep.seconds = monotonic_seconds() - t0;

    // Rows: one per attach point of the counting session, in plan order.
    auto dc = delta(*c0, *c1), dl = delta(*l0, *l1), dh = delta(*h0, *h1);
    for (auto& c : dc.d.cost) {
        std::string ap = attach_point(c.target, c.program);
        if (ap.empty()) continue;
        CostRow row;
        row.target = c.target;
        row.attach = ap;
        if (const TargetPlan* tp = (*s_count)->plan().find(c.target)) row.mechanism = tp->mechanism;
        auto it = empties.find(ap);
        if (it != empties.end()) {
            bpf_program* p = bpf_object__find_program_by_name(it->second.obj->obj(), it->second.prog.c_str());
            std::uint64_t ns = 0, cnt = stat(bpf_program__fd(p), &ns);
            row.variants.push_back({"empty", it->second.prog, cnt - empty_cnt0[ap], ns - empty_ns0[ap]});
        }
        row.variants.push_back({"count", c.program, c.run_cnt, c.run_time_ns});
        // Latency: the entry program plus its exit program, per call.
        CostVariant lv{"latency", "", 0, 0};
        bool entry_seen = false;
        for (auto& x : dl.d.cost) {
            if (x.target != c.target) continue;
            if (attach_point(x.target, x.program) == ap) {
                lv.program = x.program;
                lv.run_cnt = x.run_cnt;
                lv.run_time_ns += x.run_time_ns;
                entry_seen = true;
            } else if (is_exit(x.program)) {
                lv.program += "+" + x.program;
                lv.run_time_ns += x.run_time_ns;
            }
        }
        const TargetPlan* ltp = (*s_latency)->plan().find(c.target);
        if (entry_seen && ltp && ltp->latency) row.variants.push_back(lv);
        for (auto& x : dh.d.cost)
            if (x.target == c.target && attach_point(x.target, x.program) == ap)
                row.variants.push_back({"handoff", x.program, x.run_cnt, x.run_time_ns});
        if (const CostVariant* e = row.find("empty"); e && e->run_cnt < kCostMinHits)
            rep.notes.push_back(fmt::format(
                "{} on {}: {} hits in {:.1f} s, too few for a stable per-hit price; drive it harder "
                "(hotline cost -- COMMAND) or run longer (--duration)",
                row.target, row.attach, e->run_cnt, rep.seconds));
        rep.rows.push_back(std::move(row));
    }
    for (auto& c : dc.d.cost)
        if (c.program == "hl_sample")
            rep.notes.push_back(fmt::format("sampling handler: {:.0f} ns per sample ({} samples); no empty "
                                            "perf_event twin is attached",
                                            c.ns_per_run(), c.run_cnt));
    return rep;
}

}  // namespace hotline
