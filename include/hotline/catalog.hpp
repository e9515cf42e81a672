// The watched targets: kernel functions, how each can be observed, and why not.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hotline/result.hpp"

namespace hotline {

enum class Mechanism { kFentry, kKprobe, kTracepoint, kSampling, kUnavailable };
enum class Fidelity { kExact, kPartial, kSampled, kNone };

std::string_view to_string(Mechanism m);
std::string_view to_string(Fidelity f);
std::optional<Mechanism> parse_mechanism(std::string_view s);
// A --mechanism option: empty lets the planner choose; anything else must name one
// mechanism, or the error says which names are valid.
Result<std::optional<Mechanism>> parse_forced_mechanism(std::string_view s);

// The attach order the planner walks.
inline constexpr Mechanism kMechanismOrder[] = {Mechanism::kFentry, Mechanism::kKprobe,
                                                Mechanism::kTracepoint, Mechanism::kSampling};

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
