// The validator loop on a live kernel (docs/validate-design.md): applicability,
// journal, one scenario network and one collector session for every trial,
// ABAB trials with the fix applied and restored around each fix trial.
#include <fmt/format.h>
#include <signal.h>
#include <string.h>

#include <algorithm>

#include "hotline/journal.hpp"
#include "hotline/output.hpp"
#include "hotline/session.hpp"
#include "hotline/util.hpp"
#include "hotline/validator.hpp"
#include "hotline/fix_output.hpp"

namespace hotline {

ScenarioNumbers scenario_numbers(const ScenarioResult& r) {
    ScenarioNumbers n;
    n.seconds = r.seconds;
    if (r.scenario == "tcp-crr") n.ops = double(r.connections);
    else if (!r.latency.empty())
        for (auto& p : r.latency) n.ops += double(p.exchanges);
    else n.ops = double(r.messages);
    // Thread CPU time where the generator measured it, else the busy share of its CPUs.
    if (r.cpu.threads_measured) n.cpu_seconds = (r.cpu.sender_pct + r.cpu.receiver_pct) / 100.0 * r.seconds;
    else n.cpu_seconds = r.cpu.busy_pct / 100.0 * double(r.cpu.cpus.size()) * r.seconds;
    if (r.mbit_per_s > 0) n.extra["mbit_per_s"] = r.mbit_per_s;
    if (!r.latency.empty() && r.latency.front().has_percentiles) {
        n.extra["latency_p50_us"] = r.latency.front().p50_ns / 1e3;
        n.extra["latency_p99_us"] = r.latency.front().p99_ns / 1e3;
    }
    return n;
}

namespace {

struct HostFacts {
    std::optional<KernelBtf> btf;
    std::optional<Kallsyms> kallsyms;
};

ValidatorOutcome error_outcome(VerdictReport r, const std::string& msg) {
    ValidatorOutcome out;
    r.reason = msg;
    r.context["error"] = msg;  // exit 4: no verdict, whatever the partial trials say
    out.report = std::move(r);
    out.exit_code = kExitValidateError;
    out.error = msg;
    return out;
}

}  // namespace

ValidatorOutcome run_validator(const ValidatorOptions& o, const ProgressFn& progress) {
    auto say = [&](const std::string& s) {
        if (progress) progress(s);
    };
    // 1. Signals before any thread (session, scenario, netns helpers inherit the mask).
    ShutdownSignals signals;
    VerdictReport empty;
    empty.fix = o.fix;
    empty.scenario = o.scenario.name;

    auto cat = load_catalog(o.fixes_dir);
    if (!cat) return error_outcome(empty, cat.error().message());
    const FixDef* fix = cat->find(o.fix);
    if (!fix) return error_outcome(empty, fmt::format("unknown fix \"{}\"; known fixes: {}", o.fix, cat->names()));
    if (auto p = check_options(o.validate)) return error_outcome(empty, *p);

    auto topo = read_topology();
    if (!topo) return error_outcome(empty, topo.error().message());
    HostFacts hf;
    if (auto b = KernelBtf::load(); b) hf.btf.emplace(std::move(*b));
    if (auto k = Kallsyms::load(); k) hf.kallsyms.emplace(std::move(*k));
    LiveKernelFacts facts(KnobRoots{}, hf.btf ? &*hf.btf : nullptr, hf.kallsyms ? &*hf.kallsyms : nullptr,
                          int(topo->nodes.size()));
    KernelInfo kernel = probe_kernel();
    Applicability here = check_applicability(*fix, facts);
    ScenarioOptions so = o.scenario;
    if (so.name.empty() && !fix->scenarios.empty()) so.name = fix->scenarios.front();
    empty.scenario = so.name;
    nlohmann::json context = {{"kernel", to_json(kernel)}, {"fix", to_json(*fix)}, {"here", to_json(here)}};

    // 2. Not applicable: a verdict without trials.
    if (!here.applicable) {
        ValidatorOutcome out;
        out.report = not_applicable_report(fix->name, fix->criteria, here.reason_line());
        out.report.scenario = so.name;
        out.report.context = context;
        out.exit_code = exit_code(out.report.overall);
        return out;
    }
    if (so.name.empty()) return error_outcome(empty, "the fix names no scenario; give --scenario");
    so.duration_s = o.trial_s;
    if (auto st = resolve_scenario_options(so, usable_cpus()); !st) return error_outcome(empty, st.error().message());
    if (so.name == "exec") return error_outcome(empty, "the exec scenario cannot repeat trials; use a built-in scenario or qperf");

    // 3. Journal: takes the run lock and completes whatever a killed run left.
    FsKnobIo io;
    JournalOptions jo;
    jo.dir = o.journal_dir;
    jo.allow_global = o.allow_global;
    jo.owner = o.owner;
    auto journal = Journal::open(jo, io);
    if (!journal) return error_outcome(empty, journal.error().message());
    std::vector<std::string> notes;
    for (auto& l : (*journal)->recovered().lines()) {
        say("previous run: " + l);
        notes.push_back("previous run: " + l);
    }

    // The collector, the same as `hotline record` uses.
    SessionOptions sopts;
    sopts.targets = o.targets;
    auto session = Session::open(sopts, kernel, *topo);
    if (!session) return error_outcome(empty, session.error().message());
    if (!(*session)->plan().any_observable())
        return error_outcome(empty, "no target can be observed on this kernel; `hotline probe` says why");

    // 4. The network, once for every trial.
    auto scen = Scenario::prepare(so);
    if (!scen) return error_outcome(empty, scen.error().message());
    auto finish_scenario = [&] {
        if (*scen) {
            (void)(*scen)->stop();
            scen->reset();
        }
    };
    const Network& net = (*scen)->network();
    ApplyTarget target;
    target.netns.push_back(NetnsRef{net.client().name(), 0});
    if (net.server().name() != net.client().name()) target.netns.push_back(NetnsRef{net.server().name(), 0});
    if (!topo->nodes.empty()) target.node_cpus = topo->cpus_of(topo->nodes.front());
    target.allow_global = o.allow_global;
    auto plan = plan_changes(*fix, target);
    if (!plan) {
        finish_scenario();
        return error_outcome(empty, plan.error().message());
    }
    for (auto& n : plan->notes) notes.push_back(n);
    say(fmt::format("{} on scenario {} (CPUs {}), {:.1f}s per trial, {}..{} trials per arm", fix->name, so.name,
                    format_cpulist(so.cpus), o.trial_s, o.validate.min_each, o.validate.max_each));

    Validation v(fix->name, fix->criteria, o.validate);
    auto interrupted = [&](int sig) {
        RestoreReport rr = (*journal)->restore();
        finish_scenario();
        VerdictReport r = v.report();
        r.scenario = so.name;
        r.context = context;
        r.notes = notes;
        for (auto& l : rr.lines()) r.notes.push_back("restore: " + l);
        return error_outcome(std::move(r), fmt::format("interrupted by {}; knobs restored", sigabbrev_np(sig) ? sigabbrev_np(sig) : "signal"));
    };
    int trial_no = 0;
    while (!v.finished()) {
        Arm arm = v.next_arm();
        ++trial_no;
        if (arm == Arm::kCandidate) {
            for (auto& w : plan->writes) {
                auto r = (*journal)->apply(w);
                if (!r) {
                    RestoreReport rr = (*journal)->restore();
                    finish_scenario();
                    VerdictReport rep = v.report();
                    for (auto& l : rr.lines()) rep.notes.push_back("restore: " + l);
                    return error_outcome(std::move(rep), r.error().message());
                }
                if (r->status == ApplyStatus::kCouldNotApply) {
                    RestoreReport rr = (*journal)->restore();
                    finish_scenario();
                    ValidatorOutcome out;
                    out.report = not_applicable_report(
                        fix->name, fix->criteria, fmt::format("could not apply {} = {}: {}", r->knob, r->new_value, r->reason));
                    out.report.scenario = so.name;
                    out.report.context = context;
                    for (auto& l : rr.lines()) out.report.notes.push_back("restore: " + l);
                    out.exit_code = exit_code(out.report.overall);
                    return out;
                }
                if (trial_no == 2)  // the first fix trial says what it changed
                    notes.push_back(r->status == ApplyStatus::kApplied
                                        ? fmt::format("applied {}: {} -> {}", r->knob, r->old_value, r->new_value)
                                        : fmt::format("unchanged {}: already {}", r->knob, r->old_value));
            }
        }
        std::vector<int> cpus;
        if (arm == Arm::kCandidate && plan->placement) cpus = plan->placement->cpus;
        auto a = (*session)->read();
        Status begun = a ? (*scen)->begin_run(cpus) : Status(a.error());
        int sig = 0;
        if (begun)
            while (!(*scen)->done())
                if ((sig = signals.wait(0.05))) break;
        auto res = begun ? (*scen)->end_run() : Result<ScenarioResult>(begun.error());
        auto b = (*session)->read();
        if (arm == Arm::kCandidate) {
            // After every fix trial, so the next baseline runs on the original values.
            RestoreReport rr = (*journal)->restore();
            if (trial_no == 2)
                for (auto& l : rr.lines()) notes.push_back("after the first fix trial: " + l);
            if (!rr.clean()) {
                finish_scenario();
                VerdictReport rep = v.report();
                for (auto& l : rr.lines()) rep.notes.push_back("restore: " + l);
                return error_outcome(std::move(rep), "restore after a fix trial failed; run `hotline restore`");
            }
        }
        if (sig || (sig = signals.poll())) return interrupted(sig);
        if (!res) {
            finish_scenario();
            return error_outcome(v.report(), "trial " + std::to_string(trial_no) + ": " + res.error().message());
        }
        if (!b) {
            finish_scenario();
            return error_outcome(v.report(), b.error().message());
        }
        TrialMetrics m = trial_metrics(delta(*a, *b), scenario_numbers(*res));
        v.add_trial({arm, std::move(m), ""});
        say(fmt::format("trial {} ({}): {}", trial_no, to_string(arm), v.progress_line()));
    }
    finish_scenario();
    ValidatorOutcome out;
    out.report = v.report();
    out.report.scenario = so.name;
    out.report.context = context;
    out.report.context["trial_s"] = o.trial_s;
    out.report.context["scenario_params"] = nlohmann::json{{"name", so.name}, {"cpus", so.cpus}, {"loopback", so.loopback}};
    if (plan->placement) out.report.context["scenario_params"]["fix_cpus"] = plan->placement->cpus;
    for (auto& n : notes) out.report.notes.push_back(n);
    if ((*journal)->pending() == 0) out.report.notes.push_back("every changed knob is back to its original value");
    out.exit_code = exit_code(out.report.overall);
    return out;
}

}  // namespace hotline
