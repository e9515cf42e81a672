// The target registry: the kernel functions hotline watches, how each can be
// observed, and why not.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hotline/mechanism.hpp"
#include "hotline/result.hpp"

namespace hotline {

enum class Proxy { kNone, kQueueWork, kSkbFree };

// How a hit names the kernel object it touches (for handoff tracking).
enum class ObjectKind { kNone, kArg, kSkbDst };

struct TargetDef {
    std::string name;         // kernel function
    std::string role;         // one line on why it matters
    Proxy proxy = Proxy::kNone;
    Fidelity proxy_fidelity = Fidelity::kNone;
    std::string proxy_desc;   // e.g. "tp_btf workqueue_queue_work"
    std::string absent_note;  // said when the function is not in this kernel
    ObjectKind object = ObjectKind::kNone;
    int object_arg = -1;      // argument index holding the object (or the skb)
    std::string object_type;  // BTF struct name of the object, e.g. "dst_entry"
    int remote_cpu_arg = -1;  // argument holding a requested CPU (queue_work_on)
    bool custom = false;      // from --func
};

// "NAME" or "NAME:argN" (N = 0..4) -> a custom target tracking argument N.
// The object type comes from kernel BTF later (see describe_func_arg).
Result<TargetDef> parse_func_spec(std::string_view spec);

const std::vector<TargetDef>& builtin_targets();
const TargetDef* find_target(std::string_view name);
std::string builtin_target_names();  // "dst_release, ipv4_dst_check, ..."

}  // namespace hotline
