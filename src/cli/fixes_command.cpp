// SPDX-License-Identifier: Apache-2.0
// `hotline fixes list|show|apply` and `hotline restore`: thin front ends over
// the fix catalog and the journal.  `apply` exists for testing and manual use;
// the validator drives the same library calls.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <iostream>

#include "commands.hpp"
#include "hotline/fix/fix.hpp"
#include "hotline/kernel/interrupts.hpp"
#include "hotline/fix/journal.hpp"
#include "hotline/report/output.hpp"
#include "hotline/base/util.hpp"
#include "hotline/report/fix_output.hpp"

namespace hotline::cli {

namespace {

struct HostFacts {
    std::optional<KernelBtf> btf;
    std::optional<Kallsyms> kallsyms;
    std::unique_ptr<LiveKernelFacts> facts;
};

HostFacts host_facts() {
    HostFacts h;
    if (auto b = KernelBtf::load(); b) h.btf.emplace(std::move(*b));
    if (auto k = Kallsyms::load(); k) h.kallsyms.emplace(std::move(*k));
    int nodes = 1;
    if (auto t = read_topology(); t) nodes = int(t->nodes.size());
    h.facts = std::make_unique<LiveKernelFacts>(KnobRoots{}, h.btf ? &*h.btf : nullptr,
                                                h.kallsyms ? &*h.kallsyms : nullptr, nodes);
    return h;
}

void print_report(const RestoreReport& r, const char* prefix) {
    for (auto& l : r.lines()) fmt::print(stderr, "hotline: {}{}\n", prefix, l);
}

Result<ApplyTarget> apply_target(const FixesCli& a) {
    ApplyTarget target;
    target.allow_global = a.allow_global;
    for (auto& n : a.netns) {
        auto ns = parse_netns(n);
        if (!ns) return ns.error();
        target.netns.push_back(*ns);
    }
    if (auto t = read_topology(); t && !t->nodes.empty()) target.node_cpus = t->cpus_of(t->nodes.front());
    auto irqs = read_device_irqs(a.irqs_of);
    if (!irqs) return irqs.error();
    target.irqs = std::move(*irqs);
    return target;
}

enum class Applied { kAll, kCouldNot, kError };

// Applies the writes in order until one is refused or a signal arrives.
Applied apply_writes(Journal& journal, const ChangePlan& plan, ShutdownSignals& signals) {
    for (auto& w : plan.writes) {
        auto r = journal.apply(w);
        if (!r) {
            fail(r.error(), kExitError);
            return Applied::kError;
        }
        switch (r->status) {
        case ApplyStatus::kApplied:
            fmt::print("applied {}: {} -> {}\n", r->knob, r->old_value, r->new_value);
            break;
        case ApplyStatus::kAlreadySet:
            fmt::print("unchanged {}: already {}\n", r->knob, r->old_value);
            break;
        case ApplyStatus::kCouldNotApply:
            fmt::print(stderr, "hotline: could not apply {} = {}: {}\n", r->knob, r->new_value, r->reason);
            return Applied::kCouldNot;
        }
        if (signals.poll()) break;
    }
    return Applied::kAll;
}

void hold(const std::string& fix, double duration, ShutdownSignals& signals) {
    fmt::print("{} applied; {}\n", fix,
               duration > 0 ? fmt::format("restoring in {}s or on SIGINT/SIGTERM/SIGHUP", duration)
                            : "holding until SIGINT/SIGTERM/SIGHUP");
    std::cout.flush();
    if (duration > 0) signals.wait(duration);
    else
        while (!signals.wait(3600)) {
        }
}

int run_apply(const FixesCli& a, const FixCatalog& cat) {
    const FixDef* fix = cat.find(a.name);
    if (!fix) return fail(make_error(unknown_name_message("fix", a.name, cat.names()), EINVAL, "known fixes: " + cat.names()), kExitUsage);
    double duration = 0;
    if (!a.duration.empty()) {
        auto d = parse_duration(a.duration);
        if (!d) return fail(d.error(), kExitUsage);
        if (*d <= 0) return fail(make_error("--duration must be positive; leave it out to hold until a signal"), kExitUsage);
        duration = *d;
    }
    auto target = apply_target(a);
    if (!target) return fail(target.error(), kExitUsage);
    HostFacts hf = host_facts();
    Applicability app = check_applicability(*fix, *hf.facts);
    if (!app.applicable) {
        fmt::print(stderr, "hotline: {} is NOT APPLICABLE here: {}\n", fix->name, app.reason_line());
        return kExitNotApplicable;
    }
    auto plan = plan_changes(*fix, *target);
    if (!plan) return fail(plan.error(), kExitUsage);
    for (auto& n : plan->notes) fmt::print(stderr, "hotline: {}\n", n);
    if (plan->placement)
        fmt::print(stderr, "hotline: placement is for the scenario to honour, not a system change: {}\n",
                   plan->placement->note);

    // Signals first (so the netns helper threads inherit the mask), then the journal.
    ShutdownSignals signals;
    FsKnobIo io;
    JournalOptions jo;
    jo.dir = a.journal_dir;
    jo.allow_global = a.allow_global;
    jo.owner = own_command_line();
    auto journal = Journal::open(jo, io);
    if (!journal) return fail(journal.error(), kExitError);
    print_report((*journal)->recovered(), "previous run: ");
    if (auto fits = (*journal)->check_fits(plan->writes); !fits) return fail(fits.error(), kExitError);
    Applied applied = apply_writes(**journal, *plan, signals);
    if (applied == Applied::kAll && !signals.received()) hold(fix->name, duration, signals);
    RestoreReport rep = (*journal)->restore();
    print_report(rep, "restore: ");
    if (applied == Applied::kError || !rep.clean()) return kExitError;
    if (applied == Applied::kCouldNot) return kExitNotApplicable;
    return kExitOk;
}

void add_fixes_examples(FixesCli& f) {
    f.fixes->footer(examples({"hotline fixes list", "hotline fixes show numa-local", "hotline fixes list --json"}));
    f.list->footer(examples({"hotline fixes list", "hotline fixes list --json", "hotline fixes list --fixes ./my-fixes"}));
    f.show->footer(examples({"hotline fixes show numa-local", "hotline fixes show early-demux-off --json"}));
    f.apply->footer(examples({"hotline fixes apply early-demux-off --netns pid:1234 -d 30s",
                              "hotline fixes apply tcp-low-latency --allow-global",
                              "hotline fixes apply numa-local --irqs-of eth0 --allow-global -d 60s"}));
    f.restore->footer(examples({"hotline restore", "hotline restore --journal-dir /tmp/hotline-journal"}));
}

}  // namespace

void add_irqs_of_option(CLI::App* app, std::vector<std::string>& names) {
    app->add_option("--irqs-of", names,
                     "Pin the IRQs whose /proc/interrupts action names contain NAME (e.g. eth0, mlx5_comp) for a "
                     "fix's irq_affinity change (machine-wide: needs --allow-global); repeatable")
        ->type_name("NAME");
}

bool FixesCli::selected() const { return (fixes && *fixes) || (restore && *restore); }

void add_fixes_commands(CLI::App& app, FixesCli& f) {
    f.fixes = app.add_subcommand("fixes", "The fix catalog: list, show, and apply a fix with journaled restore");
    f.fixes->require_subcommand(1);
    f.fixes->add_option("--fixes", f.fixes_dir, "Also load *.toml fix definitions from DIR");
    f.list = f.fixes->add_subcommand("list", "List the fixes and whether each applies to this kernel");
    f.list->add_flag("--json", f.json, "Print JSON");
    f.show = f.fixes->add_subcommand("show", "Show one fix in full, with its applicability here");
    f.show->add_option("name", f.name, "Fix name")->required();
    f.show->add_flag("--json", f.json, "Print JSON");
    f.apply = f.fixes->add_subcommand(
        "apply", "Apply a fix's knob changes, hold them, and restore on exit (for testing; validate does this per trial)");
    f.apply->add_option("name", f.name, "Fix name")->required();
    f.apply->add_option("--netns", f.netns, "Network namespace for netns-scoped knobs (ip netns name or pid:N); repeatable");
    f.apply->add_flag("--allow-global", f.allow_global, "Permit machine-wide changes");
    add_irqs_of_option(f.apply, f.irqs_of);
    f.apply->add_option("-d,--duration", f.duration, "Restore after this long (default: hold until a signal)");
    f.apply->add_option("--journal-dir", f.journal_dir, fmt::format("Journal directory (default {})", kDefaultJournalDir));
    for (auto* sub : {f.list, f.show, f.apply}) sub->add_option("--fixes", f.fixes_dir, "Also load *.toml fix definitions from DIR");
    f.restore = app.add_subcommand("restore", "Restore knobs left changed by a run that was killed");
    f.restore->add_option("--journal-dir", f.journal_dir, fmt::format("Journal directory (default {})", kDefaultJournalDir));
    add_fixes_examples(f);
}

int run_fixes(const FixesCli& a) {
    if (a.restore && *a.restore) {
        FsKnobIo io;
        JournalOptions jo;
        jo.dir = a.journal_dir;
        auto rep = recover(jo, io);
        if (!rep) return fail(rep.error(), kExitError);
        if (rep->empty()) fmt::print("nothing to restore\n");
        for (auto& l : rep->lines()) fmt::print("{}\n", l);
        return rep->clean() ? kExitOk : kExitError;
    }
    auto cat = load_catalog(a.fixes_dir);
    if (!cat) return fail(cat.error(), kExitUsage);
    if (*a.list) {
        HostFacts hf = host_facts();
        if (a.json) {
            nlohmann::json j = json_document(kFixListSchema);
            auto& arr = j["fixes"] = nlohmann::json::array();
            for (auto& f : cat->fixes()) {
                nlohmann::json e = to_json(f);
                e["here"] = to_json(check_applicability(f, *hf.facts));
                arr.push_back(std::move(e));
            }
            std::cout << document_text(j, 2);
        } else {
            render_fix_list_text(std::cout, *cat, hf.facts.get());
        }
        return kExitOk;
    }
    if (*a.show) {
        const FixDef* f = cat->find(a.name);
        if (!f) return fail(make_error(unknown_name_message("fix", a.name, cat->names()), EINVAL, "known fixes: " + cat->names()), kExitUsage);
        HostFacts hf = host_facts();
        Applicability here = check_applicability(*f, *hf.facts);
        if (a.json) {
            nlohmann::json j = json_document(kFixSchema);
            j.update(to_json(*f));
            j["here"] = to_json(here);
            std::cout << document_text(j, 2);
        } else {
            render_fix_text(std::cout, *f, &here);
        }
        return kExitOk;
    }
    if (*a.apply) return run_apply(a, *cat);
    return kExitUsage;
}

}  // namespace hotline::cli
