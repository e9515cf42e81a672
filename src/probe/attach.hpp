// SPDX-License-Identifier: Apache-2.0
// One attach implementation per mechanism (fentry, kprobe, tracepoint proxy,
// sampling) behind one interface; the session's planner seam dispatches to them.
#pragma once

#include <bpf/libbpf.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "background_kallsyms.hpp"
#include "hotline/model/abi.h"
#include "hotline/probe/bpf_skeleton.hpp"
#include "hotline/probe/session.hpp"

namespace hotline {

// One attached target: its object, and the programs whose run statistics it owns.
struct Attached {
    std::unique_ptr<LoadedObject> obj;
    std::string target;
    Mechanism mech = Mechanism::kUnavailable;
    std::vector<std::string> programs;
    bool handoffs = false;
    std::string object_type;
    std::uint32_t slot = 0;  // index in the session's shared `hits` map
    // The owner table and its work functions, mapped on first read (both maps are
    // mmapable): a scan of the mapping replaces lookup syscalls each interval.
    mutable std::shared_ptr<const void> owners_view, aux_view;
};

// A target the sampling object watches (loaded once for all, after planning).
struct SampledTarget {
    std::string target;
    SymRange range;
};

// The workqueue attribution's maps, from the session's workqueue object (loaded
// before planning), for a proxy that does the attribution's queue side itself.
struct WorkqMaps {
    int counts_fd = -1, funcs_fd = -1, queued_fd = -1;
    bool queue_side_taken = false;  // a proxy program does it: hl_wq_queue is not attached
    bool available() const { return counts_fd >= 0 && funcs_fd >= 0 && queued_fd >= 0; }
};

// What every mechanism's attach sees, and where it leaves what it attached.
struct AttachEnv {
    AttachEnv(const KernelInfo& k, const Topology& t, const SessionOptions& o, const std::map<std::string, int>& ids,
              BackgroundKallsyms& ks, int hits)
        : kernel(k), topo(t), opts(o), func_ids(ids), ksyms(ks), hits_fd(hits) {}

    const KernelInfo& kernel;
    const Topology& topo;
    const SessionOptions& opts;
    // Each target's BTF function id (0: not a BTF function), taken before the
    // parsed BTF was freed.
    const std::map<std::string, int>& func_ids;
    BackgroundKallsyms& ksyms;
    int hits_fd;  // the session's shared `hits` map
    WorkqMaps workq;
    std::vector<Attached> attached;
    std::vector<SampledTarget> sampled;

    int func_id(const std::string& name) const;
    // The slot of a directly probed target in `hits`: the same on every attempt.
    std::optional<std::string> direct_slot(const std::string& target, std::uint32_t* slot);
    // "EPERM at load (...)" with the privilege context and, for verifier refusals, the log tail.
    std::string load_reason(int err, const std::string& log_tail) const;

private:
    std::map<std::string, std::uint32_t> slots_;
};

class MechanismAttach {
public:
    virtual ~MechanismAttach() = default;
    virtual AttachOutcome attach(const TargetDef& t, AttachEnv& env) = 0;
};

std::unique_ptr<MechanismAttach> make_fentry_attach();
std::unique_ptr<MechanismAttach> make_kprobe_attach();
std::unique_ptr<MechanismAttach> make_proxy_attach();
std::unique_ptr<MechanismAttach> make_sampling_attach();

std::string errname(int err);
inline AttachOutcome refused(std::string reason) { return {false, "", false, Fidelity::kNone, std::move(reason)}; }

// Points the object at the session's one `hits` map, counting into `slot`.
template <class S>
std::optional<std::string> share_hits(S* s, int hits_fd, std::uint32_t slot) {
    // Proxies count into fixed slots (abi.h) and have no hl_slot to set.
    if constexpr (requires { s->rodata->hl_slot; }) s->rodata->hl_slot = slot;
    if (int err = bpf_map__reuse_fd(s->maps.hits, hits_fd)) return "sharing the hit counters: " + errname(err);
    return std::nullopt;
}

// Handoff tracking settings shared by the fentry, kprobe and proxy objects.
template <class S>
bool configure_tracking(S* s, const TargetDef& t, const SessionOptions& o, bool proxy) {
    bool on = o.handoffs && (proxy ? t.proxy.has_value() : t.object != ObjectKind::kNone);
    s->rodata->hl_obj_mode = !on                                         ? HL_OBJ_NONE
                             : t.object == ObjectKind::kSkbDst && !proxy ? HL_OBJ_SKB_DST
                                                                         : HL_OBJ_ARG;
    s->rodata->hl_obj_arg = t.object_arg < 0 ? 0 : std::uint32_t(t.object_arg);
    s->rodata->hl_obj_is_work = t.object_type == "work_struct";
    s->rodata->hl_handoff_sample = std::uint32_t(std::max(1, o.handoff_sample));
    s->rodata->hl_remote_arg = t.remote_cpu_arg < 0 ? HL_ARG_NONE : std::uint32_t(t.remote_cpu_arg);
    s->rodata->hl_nr_cpus = std::uint32_t(libbpf_num_possible_cpus());
    // The owner table: a power-of-two number of sets of HL_OWNER_WAYS ways,
    // at least the requested number of ways; one map value per set.
    std::uint32_t cap = HL_OWNER_WAYS;
    while (cap < o.owner_capacity && cap < (1u << 22)) cap <<= 1;
    if (!on) cap = HL_OWNER_WAYS;
    s->rodata->hl_owner_sets = cap / HL_OWNER_WAYS;
    bpf_map__set_max_entries(s->maps.owners, cap / HL_OWNER_WAYS);
    bpf_map__set_max_entries(s->maps.owner_aux, cap);
    return on;
}

}  // namespace hotline

namespace hotline {

// The one sampling object for all sampled targets, one perf event per CPU.
Result<std::unique_ptr<LoadedObject>> start_sampling(const std::vector<SampledTarget>& targets, const Topology& topo,
                                                     int sample_freq);

}  // namespace hotline
