// Attach planning: the order of mechanisms, the pre-checks that explain a refusal
// without touching the kernel, and the rule that a forced mechanism never falls back.
#include "hotline/planner.hpp"

namespace hotline {

bool Plan::any_observable() const {
    for (auto& t : targets)
        if (t.observable()) return true;
    return false;
}

const TargetPlan* Plan::find(std::string_view target) const {
    for (auto& t : targets)
        if (t.target == target) return &t;
    return nullptr;
}

namespace {

// A target's function facts; the kallsyms half is asked for on first use.
class LazyFacts {
public:
    LazyFacts(Attacher& a, const TargetDef& t) : a_(a), t_(t), f_(a.function_facts(t)) {}
    bool in_btf() const { return f_.in_btf; }
    const FunctionFacts& all() {
        if (!f_.kallsyms_known) {
            a_.kallsyms_facts(t_, f_);
            f_.kallsyms_known = true;
        }
        return f_;
    }

private:
    Attacher& a_;
    const TargetDef& t_;
    FunctionFacts f_;
};

// Why a mechanism cannot work for this target, decided from facts alone; empty when
// it is worth trying.
std::string precheck(const TargetDef& t, Mechanism m, const PlanFacts& f, LazyFacts& fn) {
    switch (m) {
        case Mechanism::kFentry:
            if (!f.can_bpf) return "missing CAP_BPF";
            if (!f.btf) return "kernel has no BTF (/sys/kernel/btf/vmlinux)";
            if (!fn.in_btf()) return t.name + " is not a BTF function of this kernel (inlined or static)";
            return {};
        case Mechanism::kKprobe:
            if (!f.can_bpf || !f.can_perfmon) return "missing CAP_BPF or CAP_PERFMON";
            if (!f.kprobes) return "kernel built without kprobes (no kprobe PMU)";
            if (!fn.all().in_kallsyms) return t.name + " is not in /proc/kallsyms";
            return {};
        case Mechanism::kTracepoint:
            if (t.proxy == Proxy::kNone) return "no tracepoint proxy for " + t.name;
            if (!f.can_bpf) return "missing CAP_BPF";
            if (!f.btf) return "tp_btf needs kernel BTF";
            return {};
        case Mechanism::kSampling:
            if (!f.can_bpf || !f.can_perfmon) return "missing CAP_BPF or CAP_PERFMON";
            if (!fn.all().in_kallsyms) return t.name + " is not in /proc/kallsyms";
            if (!fn.all().has_range) return "kallsyms hides addresses (kptr_restrict) or has no range for " + t.name;
            return {};
        case Mechanism::kUnavailable: break;
    }
    return "not a mechanism";
}

}  // namespace

Result<Plan> make_plan(const std::vector<TargetDef>& targets, const PlanFacts& facts,
                       Attacher& attacher, const PlanOptions& opts) {
    Plan plan;
    for (const TargetDef& t : targets) {
        TargetPlan tp;
        tp.target = t.name;
        LazyFacts fn(attacher, t);
        bool absent = !fn.in_btf() && !fn.all().in_kallsyms;
        if (absent) {
            tp.unavailable_reason = !t.absent_note.empty()
                                        ? t.absent_note
                                        : "not in this kernel: " + t.name +
                                              " is neither in BTF nor in /proc/kallsyms";
            if (opts.forced && opts.absent_is_error)
                return make_error(std::string(to_string(*opts.forced)) + " for " + t.name + ": " +
                                      tp.unavailable_reason,
                                  ENOENT, "drop it from --targets");
            plan.targets.push_back(std::move(tp));
            continue;
        }
        for (Mechanism m : kMechanismOrder) {
            if (opts.forced && *opts.forced != m) continue;
            std::string why = precheck(t, m, facts, fn);
            if (why.empty()) {
                AttachOutcome out = attacher.attach(t, m);
                if (out.ok) {
                    tp.mechanism = m;
                    tp.fidelity = out.fidelity;
                    tp.attach = out.attach;
                    tp.latency = out.latency;
                    break;
                }
                why = out.reason;
            }
            if (opts.forced)
                return make_error(std::string(to_string(m)) + " for " + t.name + ": " + why, 0,
                                  "--mechanism forbids falling back; run `hotline probe` to see "
                                  "what this kernel allows");
            tp.rejected.push_back({m, why});
        }
        if (!tp.observable()) tp.unavailable_reason = "no mechanism could attach";
        plan.targets.push_back(std::move(tp));
    }
    return plan;
}

}  // namespace hotline
