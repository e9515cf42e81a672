// SPDX-License-Identifier: Apache-2.0
// Whether a fix applies to a kernel (and why not), and the concrete knob writes
// and placement it asks for in one validation run.
#include <bpf/btf.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "hotline/fix/fix.hpp"

namespace hotline {

bool LiveKernelFacts::knob_exists(const std::string& sysctl) const {
    auto rel = knob_relpath(KnobKind::kSysctl, sysctl);
    if (!rel) return false;
    FsKnobIo io(roots_);
    return io.read(KnobKind::kSysctl, *rel, std::nullopt).ok();
}

std::optional<bool> LiveKernelFacts::has_function(const std::string& name) const {
    if (btf_ && btf_->has_func(name)) return true;
    if (kallsyms_ && kallsyms_->size() > 0) return kallsyms_->contains(name);
    if (btf_) return false;
    return std::nullopt;
}

std::optional<bool> LiveKernelFacts::has_field(const std::string& type, const std::string& member) const {
    if (!btf_) return std::nullopt;
    return btf_->has_member(type, member);
}

std::optional<std::string> LiveKernelFacts::field_type(const std::string& type, const std::string& member) const {
    if (!btf_) return std::nullopt;
    return btf_member_type_name(*btf_, type, member);
}

std::optional<std::string> btf_member_type_name(const KernelBtf& kb, std::string_view type, std::string_view member) {
    const struct btf* b = kb.raw();
    if (!b) return std::nullopt;
    std::string tn(type);
    int id = btf__find_by_name_kind(b, tn.c_str(), BTF_KIND_STRUCT);
    if (id <= 0) return std::nullopt;
    const struct btf_type* t = btf__type_by_id(b, id);
    const struct btf_member* m = btf_members(t);
    for (int i = 0; i < btf_vlen(t); ++i, ++m) {
        if (member != btf__name_by_offset(b, m->name_off)) continue;
        __u32 tid = m->type;
        // Peel typedefs, qualifiers and arrays down to the named type.
        for (int depth = 0; depth < 32; ++depth) {
            const struct btf_type* mt = btf__type_by_id(b, tid);
            if (!mt) return std::nullopt;
            if (btf_is_typedef(mt) || btf_is_mod(mt)) {
                tid = mt->type;
                continue;
            }
            if (btf_is_array(mt)) {
                tid = btf_array(mt)->type;
                continue;
            }
            const char* name = btf__name_by_offset(b, mt->name_off);
            if (btf_is_ptr(mt)) return std::string("pointer");
            return std::string(name ? name : "");
        }
        return std::nullopt;
    }
    return std::nullopt;
}

std::string Applicability::reason_line() const {
    std::string s;
    for (auto& r : reasons) s += (s.empty() ? "" : "; ") + r;
    return s;
}

namespace {

CheckOutcome run_check(const Check& c, const KernelFacts& f) {
    CheckOutcome o;
    o.check = c;
    std::optional<bool> found;
    switch (c.kind) {
    case CheckKind::kKnob:
        found = f.knob_exists(c.knob);
        o.detail = *found ? "sysctl present" : "sysctl absent";
        break;
    case CheckKind::kFunction:
        found = f.has_function(c.function);
        o.detail = !found ? "cannot tell: no BTF or kallsyms" : (*found ? "function present" : "function absent");
        break;
    case CheckKind::kField: {
        found = f.has_field(c.type, c.member);
        if (!found) {
            o.detail = "cannot tell: no kernel BTF";
        } else if (*found && !c.member_type.empty()) {
            auto ty = f.field_type(c.type, c.member);
            found = ty && *ty == c.member_type;
            o.detail = fmt::format("{}.{} is {}", c.type, c.member, ty ? *ty : "of unknown type");
        } else {
            o.detail = *found ? "field present" : "field absent";
        }
        break;
    }
    case CheckKind::kNumaNodes:
        found = f.numa_nodes() >= c.min_nodes;
        o.detail = fmt::format("{} NUMA node{}", f.numa_nodes(), f.numa_nodes() == 1 ? "" : "s");
        break;
    }
    o.known = found.has_value();
    o.held = found && *found == c.present;
    return o;
}

}  // namespace

Applicability check_applicability(const FixDef& fix, const KernelFacts& facts) {
    Applicability a;
    a.applicable = true;
    for (auto& c : fix.checks) {
        CheckOutcome o = run_check(c, facts);
        if (!o.held) {
            a.applicable = false;
            a.reasons.push_back(o.known ? c.why : fmt::format("cannot check {}: {}", c.describe(), o.detail));
        }
        a.checks.push_back(std::move(o));
    }
    if (!fix.fixed_when.empty()) {
        bool all = true, known = true;
        for (auto& c : fix.fixed_when) {
            CheckOutcome o = run_check(c, facts);
            known = known && o.known;
            all = all && o.held;
        }
        if (known) a.carries_fix = all;
    }
    if (fix.mode == FixMode::kKernelPair) {
        a.applicable = false;
        a.reasons.insert(a.reasons.begin(),
                         "a kernel change: it is judged between two kernels, not applied to this one (record the "
                         "scenario on a kernel without and one with the fix, then `hotline diff`)");
    }
    return a;
}

Status check_queue_file(std::string_view spec) {
    const bool dir_ok = spec.rfind("rx/", 0) == 0 || spec.rfind("tx/", 0) == 0;
    std::string_view file = spec.size() > 3 ? spec.substr(3) : std::string_view();
    const bool name_ok = !file.empty() && std::all_of(file.begin(), file.end(), [](char ch) {
        return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_';
    });
    if (dir_ok && name_ok) return ok_status();
    return make_error(fmt::format("queues = \"{}\" is not a queue file", spec), EINVAL,
                      "write \"rx/FILE\" or \"tx/FILE\", e.g. \"rx/rps_flow_cnt\"");
}

std::vector<std::string> list_queue_files(std::string_view spec, const std::string& sys_root) {
    namespace fs = std::filesystem;
    std::vector<std::string> out;
    if (!check_queue_file(spec)) return out;
    const std::string prefix = std::string(spec.substr(0, 2)) + "-";
    const std::string file(spec.substr(3));
    std::error_code ec;
    for (auto& dev : fs::directory_iterator(sys_root + "/class/net", ec)) {
        std::error_code qec;
        for (auto& q : fs::directory_iterator(dev.path() / "queues", qec)) {
            std::string qname = q.path().filename().string();
            if (qname.rfind(prefix, 0) != 0 || !fs::is_regular_file(q.path() / file, qec)) continue;
            out.push_back(fmt::format("class/net/{}/queues/{}/{}", dev.path().filename().string(), qname, file));
        }
    }
    std::sort(out.begin(), out.end());
    return out;
}

namespace {

// A sysctl or sysfs change: one write per namespace for netns scope.
Status plan_knob(const FixDef& fix, const Change& c, const ApplyTarget& target, ChangePlan& plan) {
    KnobKind kk = c.kind == ChangeKind::kSysctl ? KnobKind::kSysctl : KnobKind::kSysfs;
    if (auto rel = knob_relpath(kk, c.knob); !rel) return rel.error();
    KnobWrite w;
    w.kind = kk;
    w.name = c.knob;
    w.value = c.value;
    w.scope = c.scope;
    w.fix = fix.name;
    if (c.scope == Scope::kGlobal && !target.allow_global)
        return make_error(fmt::format("fix {} changes {} for the whole machine", fix.name, c.knob), EPERM,
                          "add --allow-global to permit machine-wide changes");
    if (c.scope == Scope::kNetns && target.netns.empty() && !target.allow_global)
        return make_error(fmt::format("fix {} changes {} per network namespace, and no namespace was given",
                                      fix.name, c.knob),
                          EPERM,
                          "give the scenario's namespace (--netns NAME), or --allow-global to change "
                          "the host's own namespace");
    if (c.scope == Scope::kGlobal || target.netns.empty()) {
        plan.writes.push_back(w);
        return ok_status();
    }
    for (auto& ns : target.netns) {
        w.netns = ns;
        plan.writes.push_back(w);
    }
    return ok_status();
}

// Every device queue's file, one global write each; none is a note when optional.
Status plan_queue_files(const FixDef& fix, const Change& c, const ApplyTarget& target, ChangePlan& plan) {
    if (!target.allow_global)
        return make_error(fmt::format("fix {} changes {} of every network device, which is machine-wide", fix.name,
                                      c.knob),
                          EPERM, "add --allow-global to permit machine-wide changes");
    std::vector<std::string> files = list_queue_files(c.knob, target.sys_root);
    const std::size_t planned_before = plan.writes.size();
    if (files.empty()) {
        if (!c.optional)
            return make_error(fmt::format("fix {}: no network device here has {} queues with {}", fix.name,
                                          c.knob.substr(0, 2), c.knob.substr(3)),
                              ENOENT);
        plan.notes.push_back(fmt::format("{}: no device queue has it; nothing to change", c.knob));
        return ok_status();
    }
    for (auto& f : files) {
        if (auto rel = knob_relpath(KnobKind::kSysfs, f); !rel) return rel.error();
        KnobWrite w;
        w.kind = KnobKind::kSysfs;
        w.name = f;
        w.value = c.value;
        if (c.value == kNodeCpusValue) {
            std::string why;
            auto mask = node_cpus_value(target.sys_root, f, &why);
            if (!mask) {
                plan.notes.push_back(why);
                continue;
            }
            w.value = *mask;
        }
        w.scope = Scope::kGlobal;
        w.fix = fix.name;
        plan.writes.push_back(w);
    }
    if (plan.writes.size() == planned_before && !c.optional)
        return make_error(fmt::format("fix {}: no {} queue here has {} to set", fix.name, c.knob.substr(0, 2),
                                      c.knob.substr(3)),
                          ENOENT, plan.notes.empty() ? "" : plan.notes.back());
    return ok_status();
}

Status plan_irq_affinity(const FixDef& fix, const Change& c, const ApplyTarget& target, ChangePlan& plan) {
    if (target.irqs.empty()) {
        if (!c.optional)
            return make_error(fmt::format("fix {} pins device IRQs, but none were given", fix.name), EINVAL,
                              "name the device with --irqs-of NAME");
        plan.notes.push_back("IRQ affinity: no IRQs given (--irqs-of NAME); nothing to pin");
        return ok_status();
    }
    if (target.node_cpus.empty())
        return make_error(fmt::format("fix {} needs the CPUs of the node to confine to", fix.name), EINVAL);
    if (!target.allow_global)
        return make_error(fmt::format("fix {} changes IRQ affinity, which is machine-wide", fix.name), EPERM,
                          "add --allow-global to permit machine-wide changes");
    for (int irq : target.irqs) {
        KnobWrite w;
        w.kind = KnobKind::kIrqAffinity;
        w.name = std::to_string(irq);
        w.value = format_cpulist(target.node_cpus);
        w.scope = Scope::kGlobal;
        w.fix = fix.name;
        plan.writes.push_back(w);
    }
    return ok_status();
}

Status plan_placement(const FixDef& fix, const Change& c, const ApplyTarget& target, ChangePlan& plan) {
    if (c.value == "cpu-local") {
        plan.placement = Placement{{}, true,
                                   "each CPU's flows run on that CPU at both ends, to their own address pair: "
                                   "no route is shared between CPUs",
                                   {}};
        return ok_status();
    }
    if (c.value == "cpu-set") {
        if (target.cpu_set.empty())
            return make_error(fmt::format("fix {} confines the workload to a CPU set, and none was given", fix.name),
                              EINVAL, "give the CPUs with --fix-cpus LIST");
        plan.placement = Placement{target.cpu_set, false,
                                   fmt::format("the workload runs on CPUs {}", format_cpulist(target.cpu_set)), {}};
        return ok_status();
    }
    if (target.node_cpus.empty())
        return make_error(fmt::format("fix {} confines the scenario to one node, but no node CPUs were given", fix.name),
                          EINVAL);
    plan.placement = Placement{target.node_cpus, false,
                               fmt::format("the workload runs on CPUs {} (one node){}", format_cpulist(target.node_cpus),
                                           target.node.empty() ? "" : fmt::format(", a command's memory on node {}",
                                                                                  target.node.front())),
                               target.node};
    return ok_status();
}

}  // namespace

Result<ChangePlan> plan_changes(const FixDef& fix, const ApplyTarget& target) {
    ChangePlan plan;
    for (auto& c : fix.changes) {
        Status st = ok_status();
        switch (c.kind) {
        case ChangeKind::kSysctl:
        case ChangeKind::kSysfs: st = plan_knob(fix, c, target, plan); break;
        case ChangeKind::kIrqAffinity: st = plan_irq_affinity(fix, c, target, plan); break;
        case ChangeKind::kCpuPlacement: st = plan_placement(fix, c, target, plan); break;
        case ChangeKind::kQueueFiles: st = plan_queue_files(fix, c, target, plan); break;
        }
        if (!st) return st.error();
    }
    return plan;
}

}  // namespace hotline
