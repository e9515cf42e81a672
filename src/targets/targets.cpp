// SPDX-License-Identifier: Apache-2.0
// Built-in targets: the functions behind the two regressions hotline was made for.
#include "hotline/targets/targets.hpp"

#include <cctype>
#include <iterator>

#include "hotline/model/abi.h"

namespace hotline {

namespace {

std::string random_mix_text(const std::string& mix, bool sym) {
    if (!sym && mix.empty())
        return "mix_interrupt_randomness is not in this kernel: add_interrupt_randomness mixes inline "
               "(before 5.18, or the path was changed): no queue_work_on from it";
    if (mix == "timer_list")
        return "mix_interrupt_randomness runs from a per-CPU timer on this kernel (fast_pool.mix is a "
               "timer_list: 748bc4dd9e66 is present): the interrupt path queues no work";
    if (mix == "work_struct")
        return "mix_interrupt_randomness is queued with queue_work_on from the interrupt path on this "
               "kernel (fast_pool.mix is a work_struct: 58340f8e952b without 748bc4dd9e66): "
               "see the work-function table";
    return "mix_interrupt_randomness is present; fast_pool.mix type unknown (" +
           (mix.empty() ? std::string("no BTF") : mix) + ")";
}

// One definition per target; builtin_targets() lists them in the order every
// listing and plan shows.

// Two partial views of the references dropped, feeding one owner table so a
// route released by an skb on one CPU and a socket on another is one handoff.
TargetDef dst_release() {
    return {
        .name = "dst_release",
        .role = "drops a dst_entry reference: the refcount cache line every CPU writes",
        .proxy = TracepointProxy{
            .fidelity = Fidelity::kPartial,
            .description = "tp_btf consume_skb+kfree_skb: skbs freed holding a refcounted dst; "
                           "tp_btf tcp_destroy_sock: the routes a TCP socket held (sk_rx_dst, sk_dst_cache)",
            .programs = {{.tracepoint = "consume_skb",
                          .count = "hl_tp_consume_skb",
                          .track = "hl_tp_consume_skb_track",
                          .empty = "hl_empty_tp_consume_skb",
                          .lead = "hl_touch_consume_skb",
                          .fidelity = Fidelity::kPartial,
                          .sees = "one dst reference per skb freed with a refcounted dst; dst_release has "
                                  "other callers, and on >= 4.14 TCP data skbs carry noref dsts"},
                         {.tracepoint = "kfree_skb",
                          .count = "hl_tp_kfree_skb",
                          .track = "hl_tp_kfree_skb_track",
                          .empty = "hl_empty_tp_kfree_skb",
                          .lead = "hl_touch_kfree_skb",
                          .fidelity = Fidelity::kPartial,
                          .sees = "as consume_skb, for dropped skbs"},
                         {.tracepoint = "tcp_destroy_sock",
                          .count = "hl_tp_tcp_destroy_sock",
                          .track = "hl_tp_tcp_destroy_sock_track",
                          .empty = "hl_empty_tp_tcp_destroy_sock",
                          .fidelity = Fidelity::kPartial,
                          .sees = "socket-route: the references a full TCP socket held on its input route "
                                  "(sk_rx_dst, shared by every connection to one local address) and output "
                                  "route; inet_sock_destruct drops them just after, on the same CPU unless "
                                  "the last socket reference goes elsewhere; other sockets are not seen"}},
            .hits_slot = HL_SLOT_SKB_FREE,
        },
        .object = ObjectKind::kArg,
        .object_arg = 0,
        .object_type = "dst_entry",
    };
}

TargetDef ipv4_dst_check() {
    return {
        .name = "ipv4_dst_check",
        .role = "validates a cached route: reads obsolete/rt_genid next to the refcount",
        .object = ObjectKind::kArg,
        .object_arg = 0,
        .object_type = "dst_entry",
    };
}

TargetDef tcp_prequeue() {
    return {
        .name = "tcp_prequeue",
        .role = "queued skbs to the reader and forced a dst reference (3.10-4.13)",
        .absent_note = "not in this kernel: tcp_prequeue was removed in 4.14 (e7942d0633c4)",
        .object = ObjectKind::kSkbDst,
        .object_arg = 1,
        .object_type = "dst_entry",
    };
}

TargetDef queue_work_on() {
    return {
        .name = "queue_work_on",
        .role = "queues a work item on a CPU; called from the interrupt path on 5.18-6.0",
        .proxy = TracepointProxy{
            .fidelity = Fidelity::kExact,
            .description = "tp_btf workqueue_queue_work (fires once per queued work)",
            .programs = {{.tracepoint = "workqueue_queue_work",
                          .count = "hl_tp_queue_work",
                          .track = "hl_tp_queue_work_track",
                          .count_wq = "hl_tp_queue_work_wq",
                          .track_wq = "hl_tp_queue_work_track_wq",
                          .empty = "hl_empty_tp_queue_work",
                          .fidelity = Fidelity::kExact,
                          .sees = "fires in __queue_work for every queue_work_on"}},
            .hits_slot = HL_SLOT_QUEUE_WORK,
        },
        .object = ObjectKind::kArg,
        .object_arg = 2,
        .object_type = "work_struct",
        .remote_cpu_arg = 0,
        .workqueue_attribution = true,
        // The second regression: mix_interrupt_randomness queued from the interrupt path.
        .finding = KernelFinding{.btf_struct = "fast_pool",
                                 .btf_member = "mix",
                                 .symbol = "mix_interrupt_randomness",
                                 .describe = random_mix_text},
    };
}

}  // namespace

const std::vector<TargetDef>& builtin_targets() {
    static const std::vector<TargetDef> targets = {dst_release(), ipv4_dst_check(), tcp_prequeue(), queue_work_on()};
    return targets;
}

const ProxyProgram* find_proxy_program(std::string_view program) {
    for (auto& t : builtin_targets()) {
        if (!t.proxy) continue;
        for (auto& p : t.proxy->programs)
            for (auto* name : {&p.count, &p.track, &p.count_wq, &p.track_wq})
                if (!name->empty() && *name == program) return &p;
    }
    return nullptr;
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
