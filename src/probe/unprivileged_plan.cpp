// SPDX-License-Identifier: Apache-2.0
// `hotline probe` by a user who may not load BPF: the planner's own checks on
// this kernel's BTF and kallsyms, every mechanism that survives them named as
// what root would try, none of them loaded.
#include "hotline/probe/session.hpp"

#include <algorithm>

#include "hotline/kernel/btf_layout.hpp"
#include "hotline/probe/planner.hpp"

namespace hotline {

namespace {

constexpr const char* kNotLoaded = "not loaded here: needs CAP_BPF and CAP_PERFMON";

// Facts from BTF and kallsyms as an unprivileged reader sees them; attach() is
// never a real attempt.
class FactsOnlyAttacher final : public Attacher {
public:
    FactsOnlyAttacher(std::map<std::string, int> func_ids, const Kallsyms* ksyms)
        : func_ids_(std::move(func_ids)), ksyms_(ksyms) {}
    FunctionFacts function_facts(const TargetDef& t) override {
        FunctionFacts f;
        auto it = func_ids_.find(t.name);
        f.in_btf = it != func_ids_.end() && it->second > 0;
        f.in_kallsyms = ksyms_ && ksyms_->contains(t.name);
        f.has_range = ksyms_ && ksyms_->range(t.name).has_value();
        return f;
    }
    AttachOutcome attach(const TargetDef&, Mechanism) override { return {false, "", false, Fidelity::kNone, kNotLoaded}; }

private:
    std::map<std::string, int> func_ids_;
    const Kallsyms* ksyms_;
};

// A target's mechanisms that only a load could decide become its reason; the
// rejections left are the ones this kernel decides without a load.
void name_what_root_would_try(TargetPlan& tp) {
    std::vector<std::string> would_try;
    for (const Rejection& r : tp.rejected)
        if (r.reason == kNotLoaded) would_try.emplace_back(to_string(r.mechanism));
    if (would_try.empty()) return;
    std::erase_if(tp.rejected, [](const Rejection& r) { return r.reason == kNotLoaded; });
    std::string list;
    for (const std::string& m : would_try) list += (list.empty() ? "" : ", then ") + m;
    tp.unavailable_reason = "as root: " + list + " (" + kNotLoaded + ")";
}

}  // namespace

Result<UnprivilegedProbe> probe_without_privileges(const SessionOptions& opts, const KernelInfo& kernel) {
    auto targets = resolve_targets(opts.targets, opts.funcs);
    if (!targets) return targets.error();
    std::unique_ptr<KernelBtf> btf;
    if (kernel.btf)
        if (auto b = KernelBtf::load()) btf = std::make_unique<KernelBtf>(std::move(*b));
    std::vector<std::string> names;
    for (const TargetDef& t : *targets) names.push_back(t.name);
    auto ksyms = Kallsyms::load();
    FactsOnlyAttacher attacher(btf ? btf->func_ids(names) : std::map<std::string, int>{},
                               ksyms ? &*ksyms : nullptr);
    PlanFacts facts;  // as root would have them: the capabilities held
    facts.btf = btf != nullptr;
    facts.kprobes = kernel.kprobes;
    facts.lockdown = kernel.lockdown;
    // No forced mechanism: every one is named with what decides it here.
    PlanOptions po;
    po.absent_is_error = false;
    auto plan = make_plan(*targets, facts, attacher, po);
    if (!plan) return plan.error();
    UnprivilegedProbe out;
    for (TargetPlan& tp : plan->targets) name_what_root_would_try(tp);
    out.plan = std::move(*plan);
    for (const TargetDef& t : *targets) {
        if (t.object_type.empty() || t.object_type == "object" || !btf) continue;
        bool seen = std::any_of(out.layouts.begin(), out.layouts.end(),
                                [&](const LineLayout& l) { return l.type == t.object_type; });
        if (seen) continue;
        if (auto l = object_layout(btf->raw(), t.object_type)) out.layouts.push_back(std::move(*l));
    }
    return out;
}

}  // namespace hotline
