// SPDX-License-Identifier: Apache-2.0
// Tracepoint proxies: tp_btf programs on tracepoints standing in for a function
// (registry entries' TracepointProxy), found by name in the proxy object.
#include <fmt/format.h>

#include <cerrno>
#include <optional>
#include <utility>

#include "attach.hpp"
#include "empty.skel.h"
#include "hotline/probe/proxy_programs.hpp"
#include "proxy.skel.h"

namespace hotline {

namespace {

// The attribution's maps in the proxy object: the workqueue object's when the
// proxy does the queue side, else not created (nothing loaded uses them).
std::optional<std::string> share_workq_maps(hl_proxy_bpf* s, const WorkqMaps& m, bool attribute) {
    std::pair<bpf_map*, int> maps[] = {
        {s->maps.workq, m.counts_fd}, {s->maps.work_funcs, m.funcs_fd}, {s->maps.queued_at, m.queued_fd}};
    for (auto [map, fd] : maps) {
        int err = attribute ? bpf_map__reuse_fd(map, fd) : bpf_map__set_autocreate(map, false);
        if (err) return "sharing the workqueue attribution's maps: " + errname(err);
    }
    return std::nullopt;
}

// Which program of a tracepoint this session loads.
const std::string& proxy_program(const ProxyProgram& p, bool tracking, bool attribute) {
    if (attribute && !p.track_wq.empty()) return tracking ? p.track_wq : p.count_wq;
    return tracking ? p.track : p.count;
}

class ProxyAttach final : public MechanismAttach {
public:
    AttachOutcome attach(const TargetDef& t, AttachEnv& env) override {
        if (!t.proxy) return refused("no tracepoint proxy for " + t.name);
        LibbpfCapture cap;
        SkelGuard<hl_proxy_bpf> s(hl_proxy_bpf::open());
        if (!s) return refused(errname(errno) + " at open");
        bool tracking = configure_tracking(s.get(), t, env.opts, true);
        bool attribute = t.workqueue_attribution && env.workq.available();
        bool queue_side = false;
        std::vector<bpf_program*> progs;
        for (auto& p : t.proxy->programs) {
            const std::string& name = proxy_program(p, tracking, attribute);
            bpf_program* prog = bpf_object__find_program_by_name(s->obj, name.c_str());
            if (!prog) return refused("tp_btf: no program " + name + " in the proxy object");
            progs.push_back(prog);
            queue_side |= attribute && !p.track_wq.empty();
        }
        bpf_program* p;
        bpf_object__for_each_program(p, s->obj) {
            bpf_program__set_autoload(p, std::find(progs.begin(), progs.end(), p) != progs.end());
        }
        if (auto why = share_hits(s.get(), env.hits_fd, t.proxy->hits_slot)) return refused(*why);
        if (auto why = share_workq_maps(s.get(), env.workq, queue_side)) return refused(*why);
        if (int err = hl_proxy_bpf::load(s.get())) return refused("tp_btf: " + env.load_reason(err, cap.tail(8)));
        auto obj = s.release();
        Attached a{nullptr, t.name, Mechanism::kTracepoint, {}, tracking, t.object_type, t.proxy->hits_slot, {}, {}};
        for (auto* q : progs) {
            if (!obj->attach_link(bpf_program__name(q), [q] { return bpf_program__attach(q); }))
                return refused(fmt::format("tp_btf: {} at attach of {}", errname(errno), bpf_program__name(q)));
            a.programs.push_back(bpf_program__name(q));
        }
        a.obj = std::move(obj);
        env.attached.push_back(std::move(a));
        env.workq.queue_side_taken |= queue_side;
        return {true, t.proxy->description, false, t.proxy->fidelity, ""};
    }
};

template <class S>
bool has_program(const std::string& name) {
    SkelGuard<S> s(S::open());
    return s && bpf_object__find_program_by_name(s->obj, name.c_str());
}

}  // namespace

std::unique_ptr<MechanismAttach> make_proxy_attach() { return std::make_unique<ProxyAttach>(); }

std::vector<std::string> missing_proxy_programs(const TargetDef& t) {
    std::vector<std::string> out;
    if (!t.proxy) return out;
    for (auto& p : t.proxy->programs) {
        for (auto* n : {&p.count, &p.track, &p.count_wq, &p.track_wq})
            if (!n->empty() && !has_program<hl_proxy_bpf>(*n)) out.push_back(*n + " (not in the proxy object)");
        // `cost` looks for the empty and lead programs in the empty object, then in the proxy object.
        for (auto* n : {&p.empty, &p.lead})
            if (!n->empty() && !has_program<hl_empty_bpf>(*n) && !has_program<hl_proxy_bpf>(*n))
                out.push_back(*n + " (in neither the empty nor the proxy object)");
    }
    return out;
}

}  // namespace hotline
