// SPDX-License-Identifier: Apache-2.0
// The attach planner: per target, walk fentry -> kprobe -> tracepoint proxy ->
// sampling and keep the first mechanism that loads and attaches, recording why
// each earlier one was refused.  Kernel access goes through the Attacher seam.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hotline/model/plan.hpp"
#include "hotline/targets/targets.hpp"
#include "hotline/base/result.hpp"

namespace hotline {

// What the planner knows before trying anything.
struct PlanFacts {
    bool btf = false;
    bool kprobes = false;
    std::string lockdown;  // "none", "confidentiality", ...
    bool can_bpf = true;
    bool can_perfmon = true;
};

struct FunctionFacts {
    bool in_btf = false;
    bool in_kallsyms = false;
    bool has_range = false;  // kallsyms shows a usable address range
    // false: in_kallsyms and has_range are not known yet.  The planner then asks
    // Attacher::kallsyms_facts only when a decision needs them, so the symbol
    // table can still be loading while the first attach attempts run.
    bool kallsyms_known = true;
};

// Result of one real attempt.
struct AttachOutcome {
    bool ok = false;
    std::string attach;  // on success: what got attached
    bool latency = false;
    Fidelity fidelity = Fidelity::kExact;
    std::string reason;  // on failure: "EPERM at load", verifier tail...
};

class Attacher {
public:
    virtual ~Attacher() = default;
    virtual FunctionFacts function_facts(const TargetDef& t) = 0;
    // Fills in in_kallsyms and has_range of facts that came without them (may wait
    // for the symbol table).
    virtual void kallsyms_facts(const TargetDef& t, FunctionFacts& f) { (void)t, (void)f; }
    // True while kallsyms_facts would still have to wait: the planner then tries
    // other targets first.
    virtual bool kallsyms_pending() { return false; }
    virtual AttachOutcome attach(const TargetDef& t, Mechanism m) = 0;
};

struct PlanOptions {
    std::optional<Mechanism> forced;  // only this mechanism; failing it is an error
    // With a forced mechanism: is a function missing from this kernel an error (the
    // user named it) or just unavailable (it came from the default target list)?
    bool absent_is_error = true;
};

// Plans every target.  With a forced mechanism, a target that cannot use it is an
// Error naming the target and the reason (no silent fallback).  Without one, a
// target whose next decision needs kallsyms facts still loading is finished after
// the others; the plan keeps the targets' order.
Result<Plan> make_plan(const std::vector<TargetDef>& targets, const PlanFacts& facts,
                       Attacher& attacher, const PlanOptions& opts);

}  // namespace hotline
