// Built-in targets: the functions behind the two regressions hotline was made for.
#include "hotline/catalog.hpp"

namespace hotline {

std::string_view to_string(Mechanism m) {
    switch (m) {
        case Mechanism::kFentry: return "fentry";
        case Mechanism::kKprobe: return "kprobe";
        case Mechanism::kTracepoint: return "tracepoint";
        case Mechanism::kSampling: return "sampling";
        case Mechanism::kUnavailable: return "unavailable";
    }
    return "?";
}

std::string_view to_string(Fidelity f) {
    switch (f) {
        case Fidelity::kExact: return "exact";
        case Fidelity::kPartial: return "partial";
        case Fidelity::kSampled: return "sampled";
        case Fidelity::kNone: return "none";
    }
    return "?";
}

std::optional<Mechanism> parse_mechanism(std::string_view s) {
    for (Mechanism m : kMechanismOrder)
        if (to_string(m) == s) return m;
    return std::nullopt;
}

const std::vector<TargetDef>& builtin_targets() {
    static const std::vector<TargetDef> targets = {
        {"dst_release", "drops a dst_entry reference: the refcount cache line every CPU writes",
         Proxy::kSkbFree, Fidelity::kPartial,
         "tp_btf consume_skb+kfree_skb: skbs freed holding a refcounted dst", ""},
        {"ipv4_dst_check", "validates a cached route: reads obsolete/rt_genid next to the refcount",
         Proxy::kNone, Fidelity::kNone, "", ""},
        {"tcp_prequeue", "queued skbs to the reader and forced a dst reference (3.10-4.13)",
         Proxy::kNone, Fidelity::kNone, "",
         "not in this kernel: tcp_prequeue was removed in 4.14 (e7942d0633c4)"},
        {"queue_work_on", "queues a work item on a CPU; called from the interrupt path on 5.18-6.0",
         Proxy::kQueueWork, Fidelity::kExact, "tp_btf workqueue_queue_work (fires once per queued work)",
         ""},
    };
    return targets;
}

const TargetDef* find_target(std::string_view name) {
    for (auto& t : builtin_targets())
        if (t.name == name) return &t;
    return nullptr;
}

std::string builtin_target_names() {
    std::string s;
    for (auto& t : builtin_targets()) {
        if (!s.empty()) s += ", ";
        s += t.name;
    }
    return s;
}

}  // namespace hotline
