// SPDX-License-Identifier: Apache-2.0
// Attach planning: the order of mechanisms, the pre-checks that explain a refusal
// without touching the kernel, and the rule that a forced mechanism never falls back.
#include "hotline/probe/planner.hpp"

#include <optional>

namespace hotline {

namespace {

// A target's function facts; the kallsyms half is asked for on first use.
class LazyFacts {
public:
    LazyFacts(Attacher& a, const TargetDef& t) : a_(a), t_(t), f_(a.function_facts(t)) {}
    bool in_btf() const { return f_.in_btf; }
    // All facts; null when the kallsyms half is still loading and may_wait is false.
    const FunctionFacts* all(bool may_wait) {
        if (!f_.kallsyms_known) {
            if (!may_wait && a_.kallsyms_pending()) return nullptr;
            a_.kallsyms_facts(t_, f_);
            f_.kallsyms_known = true;
        }
        return &f_;
    }

private:
    Attacher& a_;
    const TargetDef& t_;
    FunctionFacts f_;
};

// Why a mechanism cannot work for this target, decided from facts alone; empty when
// it is worth trying, nullopt when the decision needs kallsyms facts not there yet.
std::optional<std::string> precheck(const TargetDef& t, Mechanism m, const PlanFacts& f, LazyFacts& fn,
                                    bool may_wait) {
    switch (m) {
        case Mechanism::kFentry:
            if (!f.can_bpf) return "missing CAP_BPF";
            if (!f.btf) return "kernel has no BTF (/sys/kernel/btf/vmlinux)";
            if (!fn.in_btf()) return t.name + " is not a BTF function of this kernel (inlined or static)";
            return std::string();
        case Mechanism::kKprobe: {
            if (!f.can_bpf || !f.can_perfmon) return "missing CAP_BPF or CAP_PERFMON";
            if (!f.kprobes) return "kernel built without kprobes (no kprobe PMU)";
            const FunctionFacts* k = fn.all(may_wait);
            if (!k) return std::nullopt;
            if (!k->in_kallsyms) return t.name + " is not in /proc/kallsyms";
            return std::string();
        }
        case Mechanism::kTracepoint:
            if (!t.proxy) return "no tracepoint proxy for " + t.name;
            if (!f.can_bpf) return "missing CAP_BPF";
            if (!f.btf) return "tp_btf needs kernel BTF";
            return std::string();
        case Mechanism::kSampling: {
            if (!f.can_bpf || !f.can_perfmon) return "missing CAP_BPF or CAP_PERFMON";
            const FunctionFacts* k = fn.all(may_wait);
            if (!k) return std::nullopt;
            if (!k->in_kallsyms) return t.name + " is not in /proc/kallsyms";
            if (!k->has_range) return "kallsyms hides addresses (kptr_restrict) or has no range for " + t.name;
            return std::string();
        }
        case Mechanism::kUnavailable: break;
    }
    return std::string("not a mechanism");
}

// Where planning of one target stands.
struct Progress {
    Progress(Attacher& a, const TargetDef& t) : fn(a, t) { tp.target = t.name; }
    TargetPlan tp;
    LazyFacts fn;
    bool presence_checked = false;
    std::size_t next = 0;  // index into kMechanismOrder
    bool done = false;
};

// Plans a target as far as it can.  Without may_wait it stops (done stays false)
// at the first decision that needs kallsyms facts still loading.
Status advance(const TargetDef& t, Progress& p, const PlanFacts& facts, Attacher& attacher,
               const PlanOptions& opts, bool may_wait) {
    TargetPlan& tp = p.tp;
    if (!p.presence_checked) {
        bool absent = false;
        if (!p.fn.in_btf()) {
            const FunctionFacts* k = p.fn.all(may_wait);
            if (!k) return ok_status();
            absent = !k->in_kallsyms;
        }
        p.presence_checked = true;
        if (absent) {
            tp.absent = true;
            tp.unavailable_reason = !t.absent_note.empty()
                                        ? t.absent_note
                                        : "not in this kernel: " + t.name +
                                              " is neither in BTF nor in /proc/kallsyms";
            if (opts.forced && opts.absent_is_error)
                return make_error(std::string(to_string(*opts.forced)) + " for " + t.name + ": " +
                                      tp.unavailable_reason,
                                  ENOENT, "drop it from --targets");
            p.done = true;
            return ok_status();
        }
    }
    constexpr std::size_t kCount = sizeof kMechanismOrder / sizeof kMechanismOrder[0];
    for (; p.next < kCount; ++p.next) {
        Mechanism m = kMechanismOrder[p.next];
        if (opts.forced && *opts.forced != m) continue;
        std::optional<std::string> pre = precheck(t, m, facts, p.fn, may_wait);
        if (!pre) return ok_status();
        std::string why = std::move(*pre);
        if (why.empty()) {
            AttachOutcome out = attacher.attach(t, m);
            if (out.ok) {
                tp.mechanism = m;
                tp.fidelity = out.fidelity;
                tp.attach = out.attach;
                tp.latency = out.latency;
                p.done = true;
                return ok_status();
            }
            why = out.reason;
        }
        if (opts.forced)
            return make_error(std::string(to_string(m)) + " for " + t.name + ": " + why, 0,
                              "--mechanism forbids falling back; run `hotline probe` to see "
                              "what this kernel allows");
        tp.rejected.push_back({m, why});
    }
    tp.unavailable_reason = "no mechanism could attach";
    p.done = true;
    return ok_status();
}

}  // namespace

Result<Plan> make_plan(const std::vector<TargetDef>& targets, const PlanFacts& facts,
                       Attacher& attacher, const PlanOptions& opts) {
    std::vector<Progress> progress;
    progress.reserve(targets.size());
    for (const TargetDef& t : targets) progress.emplace_back(attacher, t);
    // The first pass sets aside decisions that need kallsyms facts still loading, so
    // the other targets' attach attempts overlap the load; the second finishes them.
    // Each target still walks its mechanisms in order.  With a forced mechanism the
    // targets go strictly in order: the error reported is the first target's.
    for (bool may_wait : {bool(opts.forced), true})
        for (std::size_t i = 0; i < targets.size(); ++i)
            if (!progress[i].done)
                if (auto st = advance(targets[i], progress[i], facts, attacher, opts, may_wait); !st)
                    return st.error();
    Plan plan;
    for (auto& p : progress) plan.targets.push_back(std::move(p.tp));
    return plan;
}

}  // namespace hotline
