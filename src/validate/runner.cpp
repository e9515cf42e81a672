// SPDX-License-Identifier: Apache-2.0
// The validator loop on a live kernel (docs/validate-design.md): applicability,
// journal, one scenario network and one collector session for every trial,
// ABAB trials with the fix applied and restored around each fix trial.
#include <fmt/format.h>
#include <signal.h>
#include <string.h>

#include <algorithm>

#include "hotline/fix/journal.hpp"
#include "hotline/report/output.hpp"
#include "hotline/session/recording.hpp"
#include "hotline/base/util.hpp"
#include "hotline/validate/validator.hpp"
#include "hotline/report/fix_output.hpp"
#include "trial_traffic.hpp"

namespace hotline {

namespace {

ValidatorOutcome error_outcome(VerdictReport r, const std::string& msg) {
    ValidatorOutcome out;
    r.reason = msg;
    r.context["error"] = msg;  // exit 4: no verdict, whatever the partial trials say
    out.report = std::move(r);
    out.exit_code = kExitValidateError;
    out.error = msg;
    return out;
}

void add_restore_notes(VerdictReport& r, const RestoreReport& rr) {
    for (auto& l : rr.lines()) r.notes.push_back("restore: " + l);
}

// A verdict without trials: the fix does not apply here, or could not be applied
// (then `rr` says what was restored).
ValidatorOutcome not_applicable(const FixDef& fix, const std::string& reason, const std::string& scenario,
                                const nlohmann::json& context, const RestoreReport* rr = nullptr) {
    ValidatorOutcome out;
    out.report = not_applicable_report(fix.name, fix.criteria, reason);
    out.report.scenario = scenario;
    out.report.context = context;
    if (rr) add_restore_notes(out.report, *rr);
    out.exit_code = exit_code(out.report.overall);
    return out;
}

Applicability applicability_here(const FixDef& fix, const Topology& topo) {
    std::optional<KernelBtf> btf;
    std::optional<Kallsyms> kallsyms;
    if (auto b = KernelBtf::load(); b) btf.emplace(std::move(*b));
    if (auto k = Kallsyms::load(); k) kallsyms.emplace(std::move(*k));
    LiveKernelFacts facts(KnobRoots{}, btf ? &*btf : nullptr, kallsyms ? &*kallsyms : nullptr, int(topo.nodes.size()));
    return check_applicability(fix, facts);
}

// --duration fixes every trial's length; without it the length adapts to the
// noise when the scenario publishes a running count (the pilot reads it inside
// its trials), else every trial runs the fixed default.
TrialLengthOptions trial_length_for(const ValidatorOptions& o, const ScenarioOptions& so) {
    TrialLengthOptions t = o.validate.trial_length;
    const ScenarioDef* def = find_scenario(so.name);
    t.adapt = !o.trial_s && !o.live.on && def && def->live_ops && so.command.empty();
    if (o.trial_s) t.fixed_s = *o.trial_s;
    return t;
}

// Completes the trial scenario's options; the error text when it cannot run trials.
std::optional<std::string> resolve_trial_scenario(const FixDef& fix, ScenarioOptions& so,
                                                  const TrialLengthOptions& length) {
    if (so.name.empty() && fix.scenarios.empty())
        return fmt::format("fix {} acts on this host's own devices, which hotline's scenarios do not use; validate it "
                           "on this host with --live -- COMMAND (or --live --observe D)",
                           fix.name);
    if (so.name.empty()) return "the fix names no scenario; give --scenario";
    so.duration_s = length.adapt ? length.max_s : length.fixed_s;
    if (auto st = resolve_scenario_options(so, usable_cpus()); !st) return st.error().message();
    if (find_scenario(so.name)->command_is_traffic)
        return fmt::format("the {} scenario cannot repeat trials; use a built-in scenario or qperf", so.name);
    return std::nullopt;
}

// One validation run from the journal on: the collector, the trial traffic (a
// scenario's network, kept for every trial, or the host's own), the fix's
// writes, and the ABAB trials.  Members are destroyed traffic first, journal
// (which restores) last.
// Trials whose workload failed are repeated up to this many times in a validation.
constexpr int kMaxWorkloadErrors = 3;

class Run {
public:
    Run(const ValidatorOptions& o, ValidateOptions vopts, const FixDef& fix, ScenarioOptions so,
        nlohmann::json context, ShutdownSignals& signals, const ProgressFn& progress)
        : o_(o), vopts_(std::move(vopts)), fix_(fix), so_(std::move(so)), context_(std::move(context)),
          signals_(signals), progress_(progress) {}

    // Journal, collector, network and the fix's plan; the error text on failure.
    std::optional<std::string> open(const KernelInfo& kernel, const Topology& topo);
    ValidatorOutcome trials();

private:
    void say(const std::string& s) const {
        if (progress_) progress_(s);
    }
    std::optional<std::string> open_journal();
    std::optional<std::string> open_traffic();
    std::optional<std::string> plan_fix(const Topology& topo);
    std::optional<std::string> confirm_changes();
    void finish_scenario();
    std::string traffic_name() const { return traffic_name_.empty() ? so_.name : traffic_name_; }
    std::optional<ValidatorOutcome> apply_fix(const Validation& v, int trial_no);
    std::optional<ValidatorOutcome> restore_after_fix(const Validation& v, int trial_no);
    std::optional<ValidatorOutcome> run_trial(Validation& v, Arm arm, int trial_no, double started);
    int wait_for_traffic(std::vector<CountSample>& counts);
    std::string length_plan() const;
    bool ends_with_the_command() const;  // live, with the command's throughput metric: one run per trial
    ValidatorOutcome interrupted(const Validation& v, int sig);
    // The trials so far with what the run noted on the way (repeated trials among them).
    VerdictReport report_so_far(const Validation& v) const;
    // What the counted trials saw of the tracked objects, and their types' layouts.
    void add_contention(VerdictReport& r) const;
    ValidatorOutcome verdict(const Validation& v) const;

    const ValidatorOptions& o_;
    const ValidateOptions vopts_;  // o_.validate with the trial length settled
    const FixDef& fix_;
    ScenarioOptions so_;
    nlohmann::json context_;
    ShutdownSignals& signals_;
    const ProgressFn& progress_;
    std::vector<std::string> notes_;
    std::vector<ObjectContention> contention_;  // summed per arm over the counted trials
    int workload_errors_ = 0;
    double trials_started_s_ = 0;  // monotonic, when the first trial began
    FsKnobIo io_;
    std::unique_ptr<Journal> journal_;
    std::unique_ptr<Session> session_;
    std::unique_ptr<TrialTraffic> traffic_;
    // Kept for the report after the traffic is gone.
    std::string traffic_name_;
    nlohmann::json scenario_params_;
    ChangePlan plan_;
};

std::optional<std::string> Run::open_journal() {
    // Takes the run lock and completes whatever a killed run left.
    JournalOptions jo;
    jo.dir = o_.journal_dir;
    jo.allow_global = o_.allow_global;
    jo.owner = o_.owner;
    auto journal = Journal::open(jo, io_);
    if (!journal) return journal.error().message();
    journal_ = std::move(*journal);
    for (auto& l : journal_->recovered().lines()) {
        say("previous run: " + l);
        notes_.push_back("previous run: " + l);
    }
    return std::nullopt;
}

std::optional<std::string> Run::open_traffic() {
    if (o_.live.on) {
        auto t = LiveTraffic::create(o_.live.traffic);
        if (!t) return t.error().message();
        traffic_ = live_traffic(std::move(*t));
    } else {
        auto scen = Scenario::prepare(so_);
        if (!scen) return scen.error().message();
        traffic_ = scenario_traffic(std::move(*scen), find_scenario(so_.name)->per_cpu_routes);
    }
    traffic_name_ = traffic_->name();
    scenario_params_ = traffic_->params();
    return std::nullopt;
}

// The CPU set a cpu-set placement confines to: --fix-cpus, else the first CPU
// the workload may use.
std::vector<int> default_cpu_set(const ValidatorOptions& o, const ScenarioOptions& so) {
    if (!o.fix_cpus.empty()) return o.fix_cpus;
    std::vector<int> cpus = o.live.on || so.cpus.empty() ? usable_cpus() : so.cpus;
    if (cpus.empty()) return {};
    return {cpus.front()};
}

std::optional<std::string> Run::plan_fix(const Topology& topo) {
    ApplyTarget target;
    target.netns = traffic_->namespaces();
    if (!topo.nodes.empty()) {
        target.node_cpus = topo.cpus_of(topo.nodes.front());
        // Only a live command's memory can be bound: a scenario's threads are hotline's.
        if (o_.live.on) target.node = {topo.nodes.front()};
    }
    target.cpu_set = default_cpu_set(o_, so_);
    target.allow_global = o_.allow_global;
    target.irqs = o_.irqs;
    auto plan = plan_changes(fix_, target);
    if (!plan) return plan.error().message();
    plan_ = std::move(*plan);
    if (plan_.placement)
        if (auto why = traffic_->refuses(*plan_.placement)) return fmt::format("fix {}: {}", fix_.name, *why);
    for (auto& n : plan_.notes) notes_.push_back(n);
    return std::nullopt;
}

// On this host, before the first trial: every write the fix trials make, with
// the value it replaces, and the placement; the caller's confirmation.
std::optional<std::string> Run::confirm_changes() {
    if (!o_.live.on) return std::nullopt;
    std::vector<std::string> lines;
    for (auto& w : plan_.writes) {
        auto now = current_value(io_, w);
        lines.push_back(fmt::format("{} {}: {} -> {}", to_string(w.kind), knob_display(w.kind, w.name),
                                    now ? *now : "(unreadable: " + now.error().message() + ")", w.value));
    }
    if (plan_.placement && !plan_.placement->cpus.empty())
        lines.push_back(fmt::format("affinity of the command's runs: CPUs {}", format_cpulist(plan_.placement->cpus)));
    if (plan_.placement && !plan_.placement->mem_nodes.empty())
        lines.push_back(fmt::format("memory of the command's runs: node {} only (MPOL_BIND)",
                                    format_cpulist(plan_.placement->mem_nodes)));
    say(fmt::format("each fix trial changes, and restores after it ({}):", lines.empty() ? "nothing" : "on this host"));
    for (auto& l : lines) say("  " + l);
    if (o_.live.confirm && !o_.live.confirm(lines)) return std::string("not confirmed: nothing was changed");
    return std::nullopt;
}

std::optional<std::string> Run::open(const KernelInfo& kernel, const Topology& topo) {
    if (auto err = open_journal()) return err;
    // The collector, the same as `hotline record` uses.
    auto session = Session::open(o_.collector, kernel, topo);
    if (!session) return session.error().message();
    session_ = std::move(*session);
    if (!session_->plan().any_observable()) return std::string(kNothingObservable);
    if (auto err = open_traffic()) return err;
    auto err = plan_fix(topo);
    if (!err)
        if (auto fits = journal_->check_fits(plan_.writes); !fits) err = fits.error().message();
    if (!err) err = confirm_changes();
    if (err) {
        finish_scenario();
        return err;
    }
    say(fmt::format("{} on {}, {} per trial, {}..{} trials per arm", fix_.name, traffic_->where(), length_plan(),
                    vopts_.min_each, vopts_.max_each));
    return std::nullopt;
}

bool Run::ends_with_the_command() const { return o_.live.on && o_.live.traffic.reads_throughput(); }

std::string Run::length_plan() const {
    const TrialLengthOptions& t = vopts_.trial_length;
    if (ends_with_the_command()) return "one run of the command";
    if (!t.adapt) return fmt::format("{:g} s", t.fixed_s);
    return fmt::format("{} pilot pairs of {:g} s, then {:g}..{:g} s chosen from their noise", kPilotPairs, t.pilot_s,
                       t.min_s, t.max_s);
}

void Run::finish_scenario() {
    if (traffic_) {
        traffic_->stop();
        traffic_.reset();
    }
}

std::optional<ValidatorOutcome> Run::apply_fix(const Validation& v, int trial_no) {
    for (auto& w : plan_.writes) {
        auto r = journal_->apply(w);
        if (!r) {
            RestoreReport rr = journal_->restore();
            finish_scenario();
            VerdictReport rep = report_so_far(v);
            add_restore_notes(rep, rr);
            return error_outcome(std::move(rep), r.error().message());
        }
        if (r->status == ApplyStatus::kCouldNotApply) {
            RestoreReport rr = journal_->restore();
            finish_scenario();
            return not_applicable(fix_, fmt::format("could not apply {} = {}: {}", r->knob, r->new_value, r->reason),
                                  traffic_name(), context_, &rr);
        }
        if (trial_no == 2)  // the first fix trial says what it changed
            notes_.push_back(r->status == ApplyStatus::kApplied
                                 ? fmt::format("applied {}: {} -> {}", r->knob, r->old_value, r->new_value)
                                 : fmt::format("unchanged {}: already {}", r->knob, r->old_value));
    }
    return std::nullopt;
}

// After every fix trial, so the next baseline runs on the original values.
std::optional<ValidatorOutcome> Run::restore_after_fix(const Validation& v, int trial_no) {
    RestoreReport rr = journal_->restore();
    if (trial_no == 2)
        for (auto& l : rr.lines()) notes_.push_back("after the first fix trial: " + l);
    if (rr.clean()) return std::nullopt;
    finish_scenario();
    VerdictReport rep = report_so_far(v);
    add_restore_notes(rep, rr);
    return error_outcome(std::move(rep), "restore after a fix trial failed; run `hotline restore`");
}

// The running count is read this often inside a trial when the length adapts;
// its rates over windows of kNoiseWindowS give the trial's within-trial noise.
constexpr double kCountReadS = 0.05;
// A live command's run is waited for closely: a short run (a load generator's
// one-shot report) would otherwise end up to a count read later.
constexpr double kLiveRunPollS = 0.005;
constexpr double kNoiseWindowS = 0.1;

// Waits for the run to end, reading the running count when the length adapts;
// the signal that cut the wait short, else 0.
int Run::wait_for_traffic(std::vector<CountSample>& counts) {
    int sig = 0;
    while (!traffic_->done()) {
        if (vopts_.trial_length.adapt)
            if (auto c = traffic_->ops_so_far()) counts.push_back({monotonic_seconds(), double(*c)});
        if ((sig = signals_.wait(o_.live.on ? kLiveRunPollS : kCountReadS))) break;
    }
    return sig;
}

// `started`: when the trial began (before the fix was applied), for its wall time.
std::optional<ValidatorOutcome> Run::run_trial(Validation& v, Arm arm, int trial_no, double started) {
    const Placement* placement = arm == Arm::kCandidate && plan_.placement ? &*plan_.placement : nullptr;
    const double length = v.next_trial_length();
    auto a = session_->read();
    Status begun = a ? traffic_->begin(placement, vopts_.trial_length.adapt || o_.live.on ? length : 0)
                     : Status(a.error());
    int sig = 0;
    std::vector<CountSample> counts;
    if (begun) sig = wait_for_traffic(counts);
    auto res = begun ? traffic_->end() : Result<ScenarioNumbers>(begun.error());
    auto b = session_->read();
    if (arm == Arm::kCandidate)
        if (auto out = restore_after_fix(v, trial_no)) return out;
    if (sig || (sig = signals_.poll())) return interrupted(v, sig);
    if (!res) {
        // One bad trial (a server that died under churn) is repeated, not the end
        // of the validation; a workload that keeps failing is.
        std::string what = "trial " + std::to_string(trial_no) + ": " + res.error().message();
        if (traffic_->repeats_failed_trials() && ++workload_errors_ <= kMaxWorkloadErrors) {
            notes_.push_back(what + "; the trial was not counted and is repeated");
            say(notes_.back());
            return std::nullopt;
        }
        finish_scenario();
        if (!workload_errors_) return error_outcome(report_so_far(v), what + "; every changed knob was restored");
        return error_outcome(report_so_far(v), fmt::format("{} (workload errors in {} trials)", what, workload_errors_));
    }
    if (!b) {
        finish_scenario();
        return error_outcome(report_so_far(v), b.error().message());
    }
    Interval iv = delta(*a, *b);
    add_trial_contention(contention_, arm, iv, res->ops);
    Trial t{arm, trial_metrics(iv, *res), ""};
    t.length_s = length;
    t.wall_s = monotonic_seconds() - started;
    if (vopts_.trial_length.adapt) t.within_noise = within_trial_noise(counts, kNoiseWindowS);
    v.add_trial(std::move(t));
    TrialProgress tp = v.progress(trial_no, arm);
    if (o_.on_trial) o_.on_trial(tp);
    else say(tp.line);
    return std::nullopt;
}

VerdictReport Run::report_so_far(const Validation& v) const {
    VerdictReport r = v.report();
    r.scenario = traffic_name();
    r.context = context_;
    r.notes = notes_;
    add_contention(r);
    return r;
}

ValidatorOutcome Run::interrupted(const Validation& v, int sig) {
    RestoreReport rr = journal_->restore();
    finish_scenario();
    VerdictReport r = report_so_far(v);
    add_restore_notes(r, rr);
    return error_outcome(std::move(r), fmt::format("interrupted by {}; knobs restored",
                                                   sigabbrev_np(sig) ? sigabbrev_np(sig) : "signal"));
}

void Run::add_contention(VerdictReport& r) const {
    r.contention = contention_;
    if (!session_) return;
    for (const LineLayout& l : session_->info().layouts)
        if (std::any_of(contention_.begin(), contention_.end(),
                        [&](const ObjectContention& c) { return c.object_type == l.type; }))
            r.layouts.push_back(l);
}

ValidatorOutcome Run::verdict(const Validation& v) const {
    ValidatorOutcome out;
    out.report = v.report();
    out.report.scenario = traffic_name();
    out.report.context = context_;
    add_contention(out.report);
    // A live trial that ends with one run of the command has no fixed length to report.
    if (ends_with_the_command()) out.report.trial_length.reset();
    else if (!vopts_.trial_length.adapt) out.report.context["trial_s"] = vopts_.trial_length.fixed_s;
    if (!vopts_.trial_length.adapt && !o_.trial_s && !o_.live.on)
        out.report.notes.push_back(fmt::format("trial length fixed at {:g} s: the {} scenario publishes no running "
                                               "count to measure the noise inside a trial; --duration sets it",
                                               vopts_.trial_length.fixed_s, so_.name));
    out.report.context["scenario_params"] = scenario_params_;
    if (plan_.placement && !plan_.placement->cpus.empty())
        out.report.context["scenario_params"]["fix_cpus"] = plan_.placement->cpus;
    if (plan_.placement && plan_.placement->per_cpu_routes)
        out.report.context["scenario_params"]["fix_per_cpu_routes"] = true;
    if (o_.live.on && plan_.placement && !plan_.placement->mem_nodes.empty())
        out.report.context["scenario_params"]["fix_mem_nodes"] = plan_.placement->mem_nodes;
    // Time to a verdict: from the first trial's start, applying and restoring included.
    const double took = monotonic_seconds() - trials_started_s_;
    out.report.context["time_to_verdict_s"] = took;
    out.report.notes.push_back(fmt::format("verdict after {} trials in {:.1f} s", v.trials().size(), took));
    for (auto& n : notes_) out.report.notes.push_back(n);
    if (journal_->pending() == 0) out.report.notes.push_back("every changed knob is back to its original value");
    out.exit_code = exit_code(out.report.overall);
    return out;
}

ValidatorOutcome Run::trials() {
    Validation v(fix_.name, fix_.criteria, vopts_, fix_.preconditions);
    int trial_no = 0;
    bool length_said = !vopts_.trial_length.adapt;
    trials_started_s_ = monotonic_seconds();
    while (!v.finished()) {
        Arm arm = v.next_arm();
        ++trial_no;
        const double started = monotonic_seconds();
        if (arm == Arm::kCandidate)
            if (auto out = apply_fix(v, trial_no)) return std::move(*out);
        if (auto out = run_trial(v, arm, trial_no, started)) return std::move(*out);
        if (!length_said && v.trial_length().pilot_done) {
            TrialLengthChoice c = v.trial_length();
            say(fmt::format("trial length {:.2f} s: {}", c.length_s, c.reason));
            length_said = true;
        }
    }
    finish_scenario();
    return verdict(v);
}

}  // namespace

ValidatorOutcome run_validator(const ValidatorOptions& o, const ProgressFn& progress) {
    // Signals before any thread (session, scenario, netns helpers inherit the mask).
    ShutdownSignals signals;
    VerdictReport empty;
    empty.fix = o.fix;
    empty.scenario = o.scenario.name;
    auto cat = load_catalog(o.fixes_dir);
    if (!cat) return error_outcome(empty, cat.error().message());
    const FixDef* fix = cat->find(o.fix);
    if (!fix) return error_outcome(empty, fmt::format("{}; known fixes: {}", unknown_name_message("fix", o.fix, cat->names()), cat->names()));
    if (o.trial_s && !(*o.trial_s > 0)) return error_outcome(empty, "the trial length must be positive");
    ScenarioOptions so = o.scenario;
    if (o.live.on) so = ScenarioOptions{};
    else if (so.name.empty() && !fix->scenarios.empty()) so.name = fix->scenarios.front();
    ValidateOptions vopts = o.validate;
    vopts.trial_length = trial_length_for(o, so);
    if (auto p = check_validate_options(vopts)) return error_outcome(empty, *p);
    empty.scenario = o.live.on ? "live" : so.name;
    auto topo = read_topology();
    if (!topo) return error_outcome(empty, topo.error().message());
    Applicability here = applicability_here(*fix, *topo);
    KernelInfo kernel = probe_kernel();
    nlohmann::json context = {{"kernel", to_json(kernel)}, {"fix", to_json(*fix)}, {"here", to_json(here)}};
    if (!here.applicable) return not_applicable(*fix, here.reason_line(), empty.scenario, context);
    if (!o.live.on)
        if (auto err = resolve_trial_scenario(*fix, so, vopts.trial_length)) return error_outcome(empty, *err);

    Run run(o, vopts, *fix, so, context, signals, progress);
    if (auto err = run.open(kernel, *topo)) return error_outcome(empty, *err);
    return run.trials();
}

}  // namespace hotline
