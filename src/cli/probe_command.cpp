// SPDX-License-Identifier: Apache-2.0
// `hotline probe`: machine facts and the attach plan, as text or JSON.
#include <fmt/format.h>

#include <iostream>

#include "commands.hpp"
#include "hotline/report/output.hpp"
#include "hotline/session/tracing.hpp"
#include "hotline/base/util.hpp"

namespace hotline::cli {

namespace {

// What root would add, said after an unprivileged probe's plan.
constexpr const char* kAsRoot =
    "as root (or with CAP_BPF and CAP_PERFMON: setcap cap_bpf,cap_perfmon+ep hotline), probe would also load "
    "each target's first mechanism to learn which one this kernel accepts, and record and validate could attach";

nlohmann::json probe_json(const KernelInfo& k, const Topology& topo, const Plan& plan,
                          const std::vector<LineLayout>& layouts) {
    nlohmann::json j = json_document(kProbeSchema);
    j["kernel"] = to_json(k);
    j["topology"] = to_json(topo);
    j["plan"] = to_json(plan);
    j["observable"] = plan.any_observable();
    nlohmann::json ls = nlohmann::json::array();
    for (auto& l : layouts) ls.push_back(to_json(l));
    j["layouts"] = ls;
    return j;
}

// Without the privileges to load BPF: the facts, the plan as far as they decide
// it, the layouts, and what root would add.  Nothing is observable to this user.
int probe_unprivileged(const ProbeArgs& a, const KernelInfo& k, const Topology& topo, const SessionOptions& so) {
    auto up = probe_without_privileges(so, k);
    if (!up) return fail(up.error(), kExitError);
    if (a.json) {
        nlohmann::json j = probe_json(k, topo, up->plan, up->layouts);
        j["unprivileged"] = kAsRoot;
        std::cout << document_text(j, 2);
    } else {
        render_probe_text(std::cout, k, topo, up->plan);
        std::cout << "\n";
        render_layouts_text(std::cout, up->layouts);
        std::cout << "\n" << kAsRoot << "\n";
    }
    return kExitNothingObservable;
}

}  // namespace

int run_probe(const ProbeArgs& a) {
    auto setup = check_tracing_options(attach_options(a.targets, a.funcs, a.mechanism));
    if (!setup) return fail(setup.error(), kExitUsage);
    KernelInfo k = probe_kernel();
    auto topo = read_topology();
    if (!topo) return fail(topo.error(), kExitError);
    if (!check_privileges(k)) return probe_unprivileged(a, k, *topo, setup->session);
    auto session = Session::open(setup->session, k, *topo);
    if (!session) {
        if (a.json) {
            nlohmann::json j = json_document(kProbeSchema);
            j["kernel"] = to_json(k);
            j["topology"] = to_json(*topo);
            j["error"] = session.error().message();
            std::cout << document_text(j, 2);
        } else {
            Plan empty;
            render_probe_text(std::cout, k, *topo, empty);
        }
        return fail(session.error(), kExitError);
    }
    const Plan& plan = (*session)->plan();
    if (a.json) {
        nlohmann::json j = probe_json(k, *topo, plan, (*session)->info().layouts);
        if (!(*session)->info().random_mix.empty()) j["random_mix"] = (*session)->info().random_mix;
        std::cout << document_text(j, 2);
    } else {
        render_probe_text(std::cout, k, *topo, plan);
        std::cout << "\n";
        render_layouts_text(std::cout, (*session)->info().layouts);
        if (!(*session)->info().random_mix.empty()) std::cout << (*session)->info().random_mix << "\n";
        if (!k.btf) std::cout << "\nno kernel BTF: fentry and tp_btf need /sys/kernel/btf/vmlinux (CONFIG_DEBUG_INFO_BTF)\n";
        if (k.lockdown == "confidentiality" || k.lockdown == "integrity")
            std::cout << fmt::format("\nlockdown={}: {}\n", k.lockdown,
                                     k.lockdown == "confidentiality"
                                         ? "fentry/fexit and kprobes (which read kernel memory) are refused; "
                                           "tracepoints and cpu-clock sampling still work"
                                         : "integrity mode keeps BPF tracing, but some kernels refuse kprobe writes");
    }
    return plan.any_observable() ? kExitOk : kExitNothingObservable;
}

}  // namespace hotline::cli
