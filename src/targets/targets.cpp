// Built-in targets: the functions behind the two regressions hotline was made for.
#include "hotline/targets.hpp"

#include <cctype>
#include <iterator>

namespace hotline {

const std::vector<TargetDef>& builtin_targets() {
    static const std::vector<TargetDef> targets = {
        {"dst_release", "drops a dst_entry reference: the refcount cache line every CPU writes",
         Proxy::kSkbFree, Fidelity::kPartial,
         "tp_btf consume_skb+kfree_skb: skbs freed holding a refcounted dst", "", ObjectKind::kArg, 0,
         "dst_entry", -1, false},
        {"ipv4_dst_check", "validates a cached route: reads obsolete/rt_genid next to the refcount",
         Proxy::kNone, Fidelity::kNone, "", "", ObjectKind::kArg, 0, "dst_entry", -1, false},
        {"tcp_prequeue", "queued skbs to the reader and forced a dst reference (3.10-4.13)",
         Proxy::kNone, Fidelity::kNone, "",
         "not in this kernel: tcp_prequeue was removed in 4.14 (e7942d0633c4)", ObjectKind::kSkbDst, 1,
         "dst_entry", -1, false},
        {"queue_work_on", "queues a work item on a CPU; called from the interrupt path on 5.18-6.0",
         Proxy::kQueueWork, Fidelity::kExact, "tp_btf workqueue_queue_work (fires once per queued work)",
         "", ObjectKind::kArg, 2, "work_struct", 0, false},
    };
    return targets;
}

const TargetDef* find_target(std::string_view name) {
    for (auto& t : builtin_targets())
        if (t.name == name) return &t;
    return nullptr;
}

Result<TargetDef> parse_func_spec(std::string_view spec) {
    std::string s(spec);
    auto colon = s.find(':');
    std::string name = s.substr(0, colon);
    auto bad = [&](const std::string& why) {
        return make_error("bad --func \"" + s + "\": " + why, EINVAL,
                          "use NAME or NAME:argN with N in 0..4, e.g. --func tcp_v4_rcv or --func dst_release:arg0");
    };
    if (name.empty()) return bad("no function name");
    for (char c : name)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.')) return bad("not a symbol name");
    TargetDef t;
    t.name = name;
    t.role = "user-named function";
    t.custom = true;
    if (colon != std::string::npos) {
        std::string a = s.substr(colon + 1);
        if (a.size() != 4 || a.rfind("arg", 0) != 0 || a[3] < '0' || a[3] > '4') return bad("argument must be arg0..arg4");
        t.object = ObjectKind::kArg;
        t.object_arg = a[3] - '0';
    }
    return t;
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
