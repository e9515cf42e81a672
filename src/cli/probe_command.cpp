// SPDX-License-Identifier: Apache-2.0
// `hotline probe`: machine facts and the attach plan, as text or JSON.
#include <fmt/format.h>

#include <iostream>

#include "commands.hpp"
#include "hotline/report/output.hpp"
#include "hotline/session/tracing.hpp"
#include "hotline/base/util.hpp"

namespace hotline::cli {

int run_probe(const ProbeArgs& a) {
    auto setup = check_tracing_options(attach_options(a.targets, a.funcs, a.mechanism));
    if (!setup) return fail(setup.error(), kExitUsage);
    KernelInfo k = probe_kernel();
    auto topo = read_topology();
    if (!topo) return fail(topo.error(), kExitError);
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
        nlohmann::json j = json_document(kProbeSchema);
        j["kernel"] = to_json(k);
        j["topology"] = to_json(*topo);
        j["plan"] = to_json(plan);
        j["observable"] = plan.any_observable();
        nlohmann::json layouts = nlohmann::json::array();
        for (auto& l : (*session)->info().layouts) layouts.push_back(to_json(l));
        j["layouts"] = layouts;
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
