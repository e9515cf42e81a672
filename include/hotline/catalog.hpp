// The watched targets: kernel functions, how each can be observed, and why not.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hotline {

enum class Mechanism { kFentry, kKprobe, kTracepoint, kSampling, kUnavailable };
enum class Fidelity { kExact, kPartial, kSampled, kNone };

std::string_view to_string(Mechanism m);
std::string_view to_string(Fidelity f);
std::optional<Mechanism> parse_mechanism(std::string_view s);

// The attach order the planner walks.
inline constexpr Mechanism kMechanismOrder[] = {Mechanism::kFentry, Mechanism::kKprobe,
                                                Mechanism::kTracepoint, Mechanism::kSampling};

enum class Proxy { kNone, kQueueWork, kSkbFree };

struct TargetDef {
    std::string name;         // kernel function
    std::string role;         // one line on why it matters
    Proxy proxy = Proxy::kNone;
    Fidelity proxy_fidelity = Fidelity::kNone;
    std::string proxy_desc;   // e.g. "tp_btf workqueue_queue_work"
    std::string absent_note;  // said when the function is not in this kernel
};

const std::vector<TargetDef>& builtin_targets();
const TargetDef* find_target(std::string_view name);
std::string builtin_target_names();  // "dst_release, ipv4_dst_check, ..."

}  // namespace hotline
