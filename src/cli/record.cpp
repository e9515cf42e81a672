// `hotline record`: a tracing session with interval tables, an optional command or
// built-in workload, a summary, and a JSON recording.
#include <signal.h>
#include <time.h>

#include <fmt/format.h>
#include <iostream>

#include "commands.hpp"
#include "hotline/report/html_report.hpp"
#include "hotline/diagnose/diagnose.hpp"
#include "hotline/report/finding_output.hpp"
#include "hotline/report/output.hpp"
#include "hotline/workload/scenario.hpp"
#include "hotline/probe/session.hpp"
#include "hotline/base/signals.hpp"
#include "hotline/base/util.hpp"
#include "hotline/validate/validator.hpp"
#include "hotline/workload/workload.hpp"

namespace hotline::cli {

namespace {

std::string clock_label() {
    time_t now = time(nullptr);
    struct tm tm {};
    localtime_r(&now, &tm);
    char buf[32];
    strftime(buf, sizeof buf, "%H:%M:%S", &tm);
    return buf;
}

// What `hotline diff` needs: the kernel-pair fixes' markers and layout facts of
// this kernel, and one metric map per interval.  Each interval's operations are
// the scenario's live count at its ends (`interval_ops`, one per interval) when
// the scenario has one; otherwise, and for CPU time always, the scenario's totals
// are spread over the intervals by their length.
//
// And what `hotline diagnose` reads: the whole run's metrics, with the churn's
// connections as its operations when it ran one.
void record_diff_analysis(RecordingWriter& rec, const Session& session, const std::vector<Interval>& ivs,
                          const ScenarioNumbers& whole, const std::vector<std::uint64_t>& interval_ops,
                          double nominal_s, const Interval& whole_iv, const ScenarioNumbers& whole_ops) {
    const SessionInfo& info = session.info();
    nlohmann::json an = rec.doc().contains("analysis") ? rec.doc()["analysis"] : nlohmann::json::object();
    std::optional<KernelBtf> btf;
    if (auto b = KernelBtf::load(); b) btf.emplace(std::move(*b));
    // The session's symbol table: reading /proc/kallsyms again would double its memory.
    std::optional<Kallsyms> own_ks;
    const Kallsyms* ks = session.kallsyms();
    if (!ks)
        if (auto k = Kallsyms::load(); k) ks = &own_ks.emplace(std::move(*k));
    int nodes = 1;
    if (auto t = read_topology(); t) nodes = int(t->nodes.size());
    LiveKernelFacts facts(KnobRoots{}, btf ? &*btf : nullptr, ks, nodes);
    if (auto cat = FixCatalog::builtin(); cat) an["diff"] = diff_facts(*cat, facts, info.layouts);
    an["diagnosis"] = live_diagnosis_analysis(facts, whole_iv, whole_ops, info.layouts);
    double total_s = 0;
    for (auto& iv : ivs) total_s += iv.seconds();
    const bool live = !interval_ops.empty() && interval_ops.size() == ivs.size();
    nlohmann::json per = nlohmann::json::array();
    int partial = 0;
    for (std::size_t i = 0; i < ivs.size(); ++i) {
        const Interval& iv = ivs[i];
        // A short interval (the traffic's wind-down before the final snapshot)
        // would be an outlier of every rate: left out when the operations are
        // counted live.
        if (live && ivs.size() > 1 && iv.seconds() < nominal_s / 2) {
            ++partial;
            continue;
        }
        ScenarioNumbers n;
        if (whole.seconds > 0 && total_s > 0) {
            double share = iv.seconds() / total_s;
            n.ops = live ? double(interval_ops[i]) : whole.ops * share;
            n.cpu_seconds = whole.cpu_seconds * share;
            n.seconds = iv.seconds();
        }
        per.push_back(trial_metrics(iv, n));
    }
    an["interval_metrics"] = per;
    an["interval_ops"] = live ? "live" : "spread";
    an["partial_intervals_left_out"] = partial;
    rec.set("analysis", an);
}

// The arguments, checked before anything touches the kernel.
struct RecordSetup {
    double duration = 0;  // 0: until a signal or the command's exit
    double interval = 0;
    std::optional<Mechanism> forced;
    std::optional<ScenarioOptions> scenario;  // the command, if any, runs inside its network
};

Result<RecordSetup> check_args(const RecordArgs& a) {
    RecordSetup s;
    if (!a.duration.empty()) {
        auto d = parse_duration(a.duration);
        if (!d) return d.error();
        if (*d <= 0) return make_error("--duration must be positive", EINVAL);
        s.duration = *d;
    }
    auto i = parse_duration(a.interval);
    if (!i) return i.error();
    if (*i < 0.05) return make_error("--interval must be at least 50ms", EINVAL);
    s.interval = *i;
    if (s.duration > 0 && s.duration / s.interval > double(kMaxRecordingIntervals))
        return make_error(fmt::format("--duration {}s at --interval {}s gives more than {} intervals", s.duration,
                                      s.interval, kMaxRecordingIntervals),
                          EINVAL, "use a longer --interval");
    // A bad -o is reported now, not after the whole recording.
    if (!a.output.empty())
        if (auto st = check_output_path(a.output); !st) return st.error();
    auto forced = check_target_args(a.mechanism, a.targets, a.funcs);
    if (!forced) return forced.error();
    s.forced = *forced;
    if (a.handoff_sample < 1) return make_error("--handoff-sample must be 1 or more", EINVAL);
    if (a.top < 0) return make_error("--top must not be negative", EINVAL);
    if (a.workload != "none" && a.workload != "churn" && a.workload != "churn-split")
        return make_error("unknown workload \"" + a.workload + "\"", EINVAL, "use churn, churn-split or none");
    if (a.workload != "none" && !a.command.empty()) return make_error("--workload and a command are exclusive", EINVAL);
    if (!a.scenario.name.empty()) {
        if (a.workload != "none") return make_error("--workload and --scenario are exclusive", EINVAL);
        ScenarioArgs sa = a.scenario;
        sa.command = a.command;
        if (s.duration > 0) sa.duration = fmt::format("{}", s.duration);
        auto so = to_scenario_options(sa);
        if (!so) return so.error();
        s.scenario = *so;
    }
    return s;
}

Result<std::vector<int>> workload_cpus(const RecordArgs& a, const Topology& topo) {
    if (a.workload_cpus.empty()) return topo.cpus;
    auto c = parse_cpulist(a.workload_cpus);
    if (!c) return c.error();
    for (int cpu : *c)
        if (!topo.cpu_node.count(cpu))
            return make_error(fmt::format("--workload-cpus: CPU {} does not exist", cpu), EINVAL,
                              "this machine has CPUs " + format_cpulist(topo.cpus));
    return *c;
}

SessionOptions session_options(const RecordArgs& a, const RecordSetup& s) {
    SessionOptions so;
    so.targets = a.targets;
    so.forced = s.forced;
    so.latency = !a.no_latency;
    so.sample_freq = a.sample_freq;
    so.funcs = a.funcs;
    so.handoffs = !a.no_handoffs;
    so.handoff_sample = a.handoff_sample;
    so.owner_capacity = a.owner_map_size;
    so.workq = !a.no_workq;
    return so;
}

void print_plan(const Plan& plan) {
    for (auto& t : plan.targets) {
        if (t.observable())
            fmt::print(stderr, "hotline: {:<16} {} ({}): {}\n", t.target, to_string(t.mechanism), to_string(t.fidelity), t.attach);
        else
            fmt::print(stderr, "hotline: {:<16} unavailable: {}\n", t.target, t.unavailable_reason);
    }
}

void start_recording(RecordingWriter& rec, const RecordArgs& a, const RecordSetup& s, const SessionInfo& info) {
    rec.set_options({{"duration_s", s.duration}, {"interval_s", s.interval}, {"per_cpu", a.per_cpu},
                     {"mechanism", a.mechanism}, {"workload", a.workload}, {"sample_freq", a.sample_freq},
                     {"latency", !a.no_latency}, {"funcs", a.funcs}, {"handoffs", !a.no_handoffs},
                     {"handoff_sample", a.handoff_sample}, {"owner_map_size", a.owner_map_size}});
    nlohmann::json layouts = nlohmann::json::array();
    for (auto& l : info.layouts) layouts.push_back(to_json(l));
    rec.set("analysis", {{"layouts", layouts}, {"notes", info.notes}, {"random_mix", info.random_mix},
                         {"workqueue_programs", info.workq}});
}

// The tables go to stdout, or to stderr when stdout carries the JSON recording.
std::ostream& text_out(const RecordArgs& a) { return a.json ? std::cerr : std::cout; }

void print_summary(const Interval& whole, const std::string& stop_reason, const RecordArgs& a, const Topology& topo,
                   const SessionInfo& info) {
    text_out(a) << fmt::format("summary: {:.2f} s, {}\n", whole.seconds(), stop_reason);
    render_interval_text(text_out(a), whole, topo, a.per_cpu, "totals");
    for (auto& t : whole.d.targets) {
        if (!t.has_latency) continue;
        text_out(a) << fmt::format("{} latency ({}, {} calls timed, {} unpaired)\n", t.target,
                                 t.mechanism == Mechanism::kFentry ? "fentry/fexit" : "kprobe/kretprobe",
                                 t.lat_count, t.lat_lost);
        render_log2_hist(text_out(a), t.hist, "nsecs");
        text_out(a) << "\n";
    }
    render_handoffs_text(text_out(a), whole, topo, a.per_cpu);
    text_out(a) << "\n";
    render_hot_objects_text(text_out(a), top_objects(whole.d.objects, std::size_t(a.top)), whole.seconds());
    text_out(a) << "\n";
    render_layouts_text(text_out(a), info.layouts);
    for (auto& note : info.notes) text_out(a) << note << "\n";
    if (whole.d.has_workq) {
        text_out(a) << "\n";
        render_workq_text(text_out(a), whole.d.workq, topo, whole.seconds(), info.random_mix, std::size_t(a.top));
    } else if (!info.workq.empty() && info.workq.rfind("attached", 0) != 0) {
        text_out(a) << "queue_work_on attribution: " << info.workq << "\n";
    }
    text_out(a) << "\n";
    render_cost_text(text_out(a), whole.d.cost, whole.seconds());
}

// One recording: the session, what drives the events (scenario, churn or a
// command), the intervals read so far and why the run stopped.
class Recording {
public:
    Recording(const RecordArgs& a, const RecordSetup& s, const Topology& topo, Session& session,
              RecordingWriter& rec)
        : a_(a), s_(s), topo_(topo), session_(session), rec_(rec) {}

    Status prepare_scenario();
    Status start(const std::vector<int>& wl_cpus);
    Status run(ShutdownSignals& signals);
    Status finish(const std::vector<int>& wl_cpus);
    Interval whole() const { return delta(start_, prev_); }
    const std::string& stop_reason() const { return stop_reason_; }
    int exit_status() const { return exit_status_; }

private:
    void emit(const Snapshot& now);
    double wait_seconds() const;
    void handle_signal(int sig);
    void check_ends();

    const RecordArgs& a_;
    const RecordSetup& s_;
    const Topology& topo_;
    Session& session_;
    RecordingWriter& rec_;
    std::unique_ptr<Scenario> scen_;
    std::unique_ptr<ChurnWorkload> churn_;
    std::optional<ChildProcess> child_;
    Snapshot start_, prev_;
    double next_ = 0;
    int printed_ = 0;
    bool stop_ = false;
    std::string stop_reason_ = "duration reached";
    int exit_status_ = -1;
    std::vector<Interval> intervals_;          // for the per-interval metrics `hotline diff` compares
    std::vector<std::uint64_t> interval_ops_;  // the scenario's operations per interval
    std::uint64_t ops_prev_ = 0;
};

// A built-in scenario's network (and any server) is built before the first
// snapshot: its setup, seconds under emulation, is then neither recorded as
// traffic nor taken from the traffic's time.  A command starts with the
// network, so with one the whole scenario starts after the first snapshot.
Status Recording::prepare_scenario() {
    if (!s_.scenario || !s_.scenario->command.empty()) return ok_status();
    auto sc = Scenario::prepare(*s_.scenario);
    if (!sc) return sc.error();
    scen_ = std::move(*sc);
    return ok_status();
}

Status Recording::start(const std::vector<int>& wl_cpus) {
    auto first = session_.read();
    if (!first) return first.error();
    start_ = prev_ = *first;
    next_ = start_.t + s_.interval;
    if (s_.scenario) {
        if (scen_) {
            if (auto st = scen_->begin_run(); !st) return st;
        } else {
            auto sc = Scenario::start(*s_.scenario);
            if (!sc) return sc.error();
            scen_ = std::move(*sc);
        }
        fmt::print(stderr, "hotline: scenario {} on CPUs {}\n", s_.scenario->name, format_cpulist(scen_->options().cpus));
    }
    if (a_.workload == "churn" || a_.workload == "churn-split") {
        ChurnOptions co;
        co.cpus = wl_cpus;
        co.split = a_.workload == "churn-split";
        auto w = ChurnWorkload::start(co);
        if (!w) return w.error();
        churn_ = std::move(*w);
        fmt::print(stderr, "hotline: {} workload on CPUs {}\n", a_.workload, format_cpulist(wl_cpus));
    }
    if (!a_.command.empty() && !scen_) {
        auto c = ChildProcess::spawn(a_.command);
        if (!c) return c.error();
        child_.emplace(std::move(*c));
    }
    return ok_status();
}

void Recording::emit(const Snapshot& now) {
    if (auto ops = scen_ ? scen_->ops_so_far() : std::nullopt) {
        interval_ops_.push_back(*ops - std::min(*ops, ops_prev_));
        ops_prev_ = *ops;
    }
    Interval iv = delta(prev_, now);
    rec_.add_interval(iv);
    intervals_.push_back(iv);
    if (!a_.quiet) {
        render_interval_text(text_out(a_), iv, topo_, a_.per_cpu, fmt::format("{}  interval {}", clock_label(), ++printed_));
        render_handoffs_text(text_out(a_), iv, topo_, a_.per_cpu);
    }
    text_out(a_).flush();
    prev_ = now;
}

double Recording::wait_seconds() const {
    double now = monotonic_seconds();
    double until = next_;
    if (s_.duration > 0 && !scen_) until = std::min(until, start_.t + s_.duration);
    if (scen_) until = std::min(until, now + 0.1);  // notice the scenario's end promptly
    return std::max(0.0, until - now);
}

void Recording::handle_signal(int sig) {
    if (!is_shutdown_signal(sig)) return;  // SIGCHLD only wakes the loop
    stop_ = true;
    stop_reason_ = fmt::format("stopped by {}", signal_name(sig));
    if (child_) child_->signal(sig == SIGINT ? SIGINT : SIGTERM);
}

void Recording::check_ends() {
    if (child_ && child_->poll(&exit_status_)) {
        stop_ = true;
        stop_reason_ = fmt::format("command exited with status {}", exit_status_);
        child_.reset();
    }
    if (scen_ && scen_->done()) {
        stop_ = true;
        stop_reason_ = "scenario finished";
    }
}

Status Recording::run(ShutdownSignals& signals) {
    while (!stop_) {
        handle_signal(signals.wait(wait_seconds()));
        check_ends();
        double now = monotonic_seconds();
        // A scenario was given the duration as its traffic time and ends itself.
        if (s_.duration > 0 && !scen_ && now >= start_.t + s_.duration) stop_ = true;
        if (now < next_ && !stop_) continue;
        // The churn ends before the last snapshot: every call its connections
        // make is then counted, and workload.connections covers the counted
        // window exactly (stopping after it left the last connections, a few
        // percent under emulation, uncounted but in the connection count).
        if (stop_ && churn_) churn_->stop();
        auto snap = session_.read();
        if (!snap) return snap.error();
        if (snap->t - prev_.t > 1e-3) emit(*snap);
        while (next_ <= now) next_ += s_.interval;
        // Without --duration the run could outgrow what `diff` reads back.
        if (!stop_ && intervals_.size() >= kMaxRecordingIntervals) {
            stop_ = true;
            stop_reason_ = fmt::format("the limit of {} intervals was reached", kMaxRecordingIntervals);
        }
    }
    return ok_status();
}

Status Recording::finish(const std::vector<int>& wl_cpus) {
    if (churn_) {
        churn_->stop();
        if (!churn_->error().empty()) fmt::print(stderr, "hotline: workload: {}\n", churn_->error());
        fmt::print(stderr, "hotline: churn workload made {} connections\n", churn_->connections());
        rec_.set("workload", {{"name", a_.workload}, {"cpus", wl_cpus}, {"connections", churn_->connections()}});
    }
    if (child_) {
        child_->signal(SIGTERM);
        exit_status_ = child_->wait();
    }
    ScenarioNumbers numbers, whole_ops;
    if (churn_) {
        whole_ops.ops = double(churn_->connections());
        whole_ops.seconds = whole().seconds();
    }
    if (scen_) {
        auto res = scen_->stop();
        if (!res) return res.error();
        render_scenario_text(std::cerr, *res);
        rec_.set("scenario", to_json(*res));
        if (res->command_status) exit_status_ = *res->command_status;
        numbers = whole_ops = scenario_numbers(*res);
    }
    record_diff_analysis(rec_, session_, intervals_, numbers, interval_ops_, s_.interval, whole(), whole_ops);
    return ok_status();
}

// The top findings of the recording just made, one line each.
void print_findings(const nlohmann::json& doc) {
    auto cat = FixCatalog::builtin();
    auto rules = cat ? RuleSet::builtin(*cat) : Result<RuleSet>(cat.error());
    auto in = input_from_recording(doc, "this recording");
    if (!rules || !in) {
        fmt::print(stderr, "hotline: findings: {}\n", (!rules ? rules.error() : in.error()).message());
        return;
    }
    std::cout << "\n";
    render_findings_brief(std::cout, diagnose(*rules, *cat, *in), kRecordFindings);
}

}  // namespace

int run_record(const RecordArgs& a, nlohmann::json* doc_out) {
    auto setup = check_args(a);
    if (!setup) return fail(setup.error(), kExitUsage);
    auto topo = read_topology();
    if (!topo) return fail(topo.error(), kExitError);
    auto wl_cpus = workload_cpus(a, *topo);
    if (!wl_cpus) return fail(wl_cpus.error(), kExitUsage);

    // Children unblock what they need; SIGCHLD wakes the loop when the command exits.
    ShutdownSignals signals({SIGCHLD});
    KernelInfo k = probe_kernel();
    auto session = Session::open(session_options(a, *setup), k, *topo);
    if (!session) return fail(session.error(), kExitError);
    const Plan& plan = (*session)->plan();
    print_plan(plan);
    if (!plan.any_observable()) {
        fmt::print(stderr, "hotline: no target can be observed on this kernel; `hotline probe` says why\n");
        return kExitNothingObservable;
    }
    RecordingWriter rec(k, *topo, plan);
    const SessionInfo& info = (*session)->info();
    start_recording(rec, a, *setup, info);

    Recording run(a, *setup, *topo, **session, rec);
    Status st = run.prepare_scenario();
    if (st) st = run.start(*wl_cpus);
    if (st) st = run.run(signals);
    if (st) st = run.finish(*wl_cpus);
    if (!st) return fail(st.error(), kExitError);
    Interval whole = run.whole();
    if (a.summary) print_summary(whole, run.stop_reason(), a, *topo, info);
    rec.finish(whole, run.exit_status(), a.command);
    if (a.json) std::cout << rec.doc().dump(1) << "\n";
    else if (!a.no_findings) print_findings(rec.doc());
    if (doc_out) *doc_out = rec.doc();
    if (!a.output.empty()) {
        if (auto w = write_file_atomic(a.output, rec.doc().dump(1) + "\n"); !w) return fail(w.error(), kExitError);
        fmt::print(stderr, "hotline: recording written to {}\n", a.output);
    }
    if (!write_html(a.html, HtmlInput{rec.doc(), a.output, std::nullopt, std::nullopt})) return kExitError;
    session->reset();  // detach before reporting the command's status
    if (!a.command.empty()) return run.exit_status() < 0 ? kExitError : run.exit_status();
    return kExitOk;
}

}  // namespace hotline::cli
