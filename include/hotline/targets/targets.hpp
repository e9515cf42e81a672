// SPDX-License-Identifier: Apache-2.0
// The target registry: the kernel functions hotline watches, how each can be
// observed, and why not.  Everything specific to one target lives in its entry;
// no code outside the registry compares target names.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hotline/model/mechanism.hpp"
#include "hotline/base/result.hpp"

namespace hotline {

// One tracepoint of a proxy and its BPF programs, found by name in the loaded
// objects (bpf/proxy.bpf.c, bpf/empty.bpf.c).
struct ProxyProgram {
    std::string tracepoint{};  // tp_btf attach point, e.g. "consume_skb"
    std::string count{};       // counting only: reads no .rodata, counts into a fixed slot
    std::string track{};       // counting plus handoff tracking
    // The same two that also do the workqueue attribution's queue side (bpf/workq.bpf.h),
    // for a target with workqueue_attribution: one program on the tracepoint, not two.
    // "": this tracepoint has none.
    std::string count_wq{};
    std::string track_wq{};
    std::string empty{};       // empty program on the same tracepoint: the floor `cost` prices against
    // What `cost` attaches first on this tracepoint ("": the empty program), so that
    // cold dispatch code and cold lines are not charged to the first measured variant.
    std::string lead{};
    // What this tracepoint's counts stand for, and why at this fidelity: one
    // proxy may join tracepoints that see different parts of the function's calls.
    Fidelity fidelity = Fidelity::kNone;
    std::string sees{};
    std::string attach_point() const { return "tp_btf/" + tracepoint; }
};

// Tracepoints standing in for a function that cannot be probed directly.
struct TracepointProxy {
    Fidelity fidelity = Fidelity::kNone;  // of the whole: the weakest of its tracepoints
    std::string description{};  // the plan's attach text, e.g. "tp_btf workqueue_queue_work (...)"
    std::vector<ProxyProgram> programs{};
    // The counting programs' slot in the shared `hits` map: a compile-time constant
    // of the BPF side (HL_SLOT_* in abi.h), as they read no .rodata.
    std::uint32_t hits_slot = 0;
};

// What this kernel does on a target's path, told from the type of one struct
// member in BTF and the presence of one symbol.
struct KernelFinding {
    std::string btf_struct{};  // e.g. "fast_pool"
    std::string btf_member{};  // e.g. "mix"
    std::string symbol{};      // e.g. "mix_interrupt_randomness"
    // member_type is "" without BTF.
    std::string (*describe)(const std::string& member_type, bool symbol_present) = nullptr;
};

// How a hit names the kernel object it touches (for handoff tracking).
enum class ObjectKind { kNone, kArg, kSkbDst };

struct TargetDef {
    std::string name{};         // kernel function
    std::string role{};         // one line on why it matters
    std::optional<TracepointProxy> proxy{};
    std::string absent_note{};  // said when the function is not in this kernel
    ObjectKind object = ObjectKind::kNone;
    int object_arg = -1;      // argument index holding the object (or the skb)
    std::string object_type{};  // BTF struct name of the object, e.g. "dst_entry"
    int remote_cpu_arg = -1;  // argument holding a requested CPU, counted as a remote request
    // Watching it also attaches the workqueue attribution programs (bpf/workq.bpf.c).
    bool workqueue_attribution = false;
    std::optional<KernelFinding> finding{};
    bool custom = false;      // from --func
};

// "NAME" or "NAME:argN" (N = 0..4) -> a custom target tracking argument N.
// The object type comes from kernel BTF later (see describe_func_arg).
Result<TargetDef> parse_func_spec(std::string_view spec);

const std::vector<TargetDef>& builtin_targets();
const TargetDef* find_target(std::string_view name);
std::string builtin_target_names();  // "dst_release, ipv4_dst_check, ..."

// The proxy tracepoint whose count or track program is `program` (null: none).
const ProxyProgram* find_proxy_program(std::string_view program);

}  // namespace hotline
