// `hotline record`: a tracing session with interval tables, an optional command or
// built-in workload, a summary, and a JSON recording.
#include <signal.h>
#include <time.h>

#include <cmath>
#include <fmt/format.h>
#include <iostream>
#include <sstream>

#include "commands.hpp"
#include "hotline/output.hpp"
#include "hotline/scenario.hpp"
#include "hotline/session.hpp"
#include "hotline/util.hpp"
#include "hotline/validator.hpp"
#include "hotline/workload.hpp"

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

int fail(const Error& e, int rc = kExitError) {
    fmt::print(stderr, "hotline: {}\n", e.message());
    return rc;
}

// What `hotline diff` needs: the kernel-pair fixes' markers and layout facts of
// this kernel, and one metric map per interval.  Each interval's operations are
// the scenario's live count at its ends (`interval_ops`, one per interval) when
// the scenario has one; otherwise, and for CPU time always, the scenario's totals
// are spread over the intervals by their length.
void record_diff_analysis(RecordingWriter& rec, const Session& session, const std::vector<Interval>& ivs,
                          const ScenarioNumbers& whole, const std::vector<std::uint64_t>& interval_ops,
                          double nominal_s) {
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

}  // namespace

int run_record(const RecordArgs& a) {
    // --- arguments first: bad input is reported before touching the kernel
    double duration = 0, interval = 1;
    if (!a.duration.empty()) {
        auto d = parse_duration(a.duration);
        if (!d) return fail(d.error(), kExitUsage);
        duration = *d;
        if (duration <= 0) return fail(make_error("--duration must be positive", EINVAL), kExitUsage);
    }
    {
        auto i = parse_duration(a.interval);
        if (!i) return fail(i.error(), kExitUsage);
        interval = *i;
        if (interval < 0.05) return fail(make_error("--interval must be at least 50ms", EINVAL), kExitUsage);
    }
    auto forced = parse_forced_mechanism(a.mechanism);
    if (!forced) return fail(forced.error(), kExitUsage);
    if (auto t = resolve_targets(a.targets, a.funcs); !t) return fail(t.error(), kExitUsage);
    if (a.handoff_sample < 1)
        return fail(make_error("--handoff-sample must be 1 or more", EINVAL), kExitUsage);
    if (a.top < 0) return fail(make_error("--top must not be negative", EINVAL), kExitUsage);
    if (a.workload != "none" && a.workload != "churn" && a.workload != "churn-split")
        return fail(make_error("unknown workload \"" + a.workload + "\"", EINVAL, "use churn, churn-split or none"),
                    kExitUsage);
    if (a.workload != "none" && !a.command.empty())
        return fail(make_error("--workload and a command are exclusive", EINVAL), kExitUsage);
    std::optional<ScenarioOptions> scen_opts;  // the command, if any, runs inside the scenario's network
    if (!a.scenario.name.empty()) {
        if (a.workload != "none") return fail(make_error("--workload and --scenario are exclusive", EINVAL), kExitUsage);
        ScenarioArgs sa = a.scenario;
        sa.command = a.command;
        if (duration > 0) sa.duration = fmt::format("{}", duration);
        auto so = to_scenario_options(sa);
        if (!so) return fail(so.error(), kExitUsage);
        scen_opts = *so;
    }

    auto topo = read_topology();
    if (!topo) return fail(topo.error());
    std::vector<int> wl_cpus = topo->cpus;
    if (!a.workload_cpus.empty()) {
        auto c = parse_cpulist(a.workload_cpus);
        if (!c) return fail(c.error(), kExitUsage);
        for (int cpu : *c)
            if (!topo->cpu_node.count(cpu))
                return fail(make_error(fmt::format("--workload-cpus: CPU {} does not exist", cpu), EINVAL,
                                       "this machine has CPUs " + format_cpulist(topo->cpus)),
                            kExitUsage);
        wl_cpus = *c;
    }

    // Signals are waited for, never handled asynchronously; children unblock them.
    sigset_t waitset;
    sigemptyset(&waitset);
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&waitset, s);
    sigprocmask(SIG_BLOCK, &waitset, nullptr);

    KernelInfo k = probe_kernel();
    SessionOptions so;
    so.targets = a.targets;
    so.forced = *forced;
    so.latency = !a.no_latency;
    so.sample_freq = a.sample_freq;
    so.funcs = a.funcs;
    so.handoffs = !a.no_handoffs;
    so.handoff_sample = a.handoff_sample;
    so.owner_capacity = a.owner_map_size;
    so.workq = !a.no_workq;
    auto session = Session::open(so, k, *topo);
    if (!session) return fail(session.error());
    const Plan& plan = (*session)->plan();
    for (auto& t : plan.targets) {
        if (t.observable())
            fmt::print(stderr, "hotline: {:<16} {} ({}): {}\n", t.target, to_string(t.mechanism), to_string(t.fidelity), t.attach);
        else
            fmt::print(stderr, "hotline: {:<16} unavailable: {}\n", t.target, t.unavailable_reason);
    }
    if (!plan.any_observable()) {
        fmt::print(stderr, "hotline: no target can be observed on this kernel; `hotline probe` says why\n");
        return kExitNothingObservable;
    }

    RecordingWriter rec(k, *topo, plan);
    rec.set_options({{"duration_s", duration}, {"interval_s", interval}, {"per_cpu", a.per_cpu},
                     {"mechanism", a.mechanism}, {"workload", a.workload}, {"sample_freq", a.sample_freq},
                     {"latency", !a.no_latency}, {"funcs", a.funcs}, {"handoffs", !a.no_handoffs},
                     {"handoff_sample", a.handoff_sample}, {"owner_map_size", a.owner_map_size}});
    const SessionInfo& info = (*session)->info();
    {
        nlohmann::json layouts = nlohmann::json::array();
        for (auto& l : info.layouts) layouts.push_back(to_json(l));
        rec.set("analysis", {{"layouts", layouts}, {"notes", info.notes}, {"random_mix", info.random_mix},
                             {"workqueue_programs", info.workq}});
    }

    // A built-in scenario's network (and any server) is built before the first
    // snapshot: its setup, seconds under emulation, is then neither recorded as
    // traffic nor taken from the traffic's time.  A command starts with the
    // network, so with one the whole scenario starts after the first snapshot.
    std::unique_ptr<Scenario> scen;
    const bool prepare_first = scen_opts && scen_opts->command.empty();
    if (prepare_first) {
        auto s = Scenario::prepare(*scen_opts);
        if (!s) return fail(s.error());
        scen = std::move(*s);
    }

    auto first = (*session)->read();
    if (!first) return fail(first.error());
    Snapshot start = *first, prev = *first;

    std::unique_ptr<ChurnWorkload> churn;
    std::optional<ChildProcess> child;
    if (scen_opts) {
        if (prepare_first) {
            if (auto st = scen->begin_run(); !st) return fail(st.error());
        } else {
            auto s = Scenario::start(*scen_opts);
            if (!s) return fail(s.error());
            scen = std::move(*s);
        }
        fmt::print(stderr, "hotline: scenario {} on CPUs {}\n", scen_opts->name, format_cpulist(scen->options().cpus));
    }
    if (a.workload == "churn" || a.workload == "churn-split") {
        ChurnOptions co;
        co.cpus = wl_cpus;
        co.split = a.workload == "churn-split";
        auto w = ChurnWorkload::start(co);
        if (!w) return fail(w.error());
        churn = std::move(*w);
        fmt::print(stderr, "hotline: {} workload on CPUs {}\n", a.workload, format_cpulist(wl_cpus));
    }
    if (!a.command.empty() && !scen) {
        auto c = ChildProcess::spawn(a.command);
        if (!c) return fail(c.error());
        child.emplace(std::move(*c));
    }

    int exit_status = -1;
    bool stop = false;
    std::string stop_reason = "duration reached";
    double t0 = start.t, next = t0 + interval;
    int n = 0;
    std::vector<Interval> intervals;  // for the per-interval metrics `hotline diff` compares
    // The scenario's operations per interval, read with each snapshot.
    std::vector<std::uint64_t> interval_ops;
    std::uint64_t ops_prev = 0;
    auto emit = [&](const Snapshot& now) {
        if (auto ops = scen ? scen->ops_so_far() : std::nullopt) {
            interval_ops.push_back(*ops - std::min(*ops, ops_prev));
            ops_prev = *ops;
        }
        Interval iv = delta(prev, now);
        rec.add_interval(iv);
        intervals.push_back(iv);
        if (!a.quiet) {
            render_interval_text(std::cout, iv, *topo, a.per_cpu,
                                 fmt::format("{}  interval {}", clock_label(), ++n));
            render_handoffs_text(std::cout, iv, *topo, a.per_cpu);
        }
        std::cout.flush();
        prev = now;
    };
    while (!stop) {
        double now = monotonic_seconds();
        double until = next;
        if (duration > 0 && !scen) until = std::min(until, t0 + duration);
        if (scen) until = std::min(until, now + 0.1);  // notice the scenario's end promptly
        double wait = std::max(0.0, until - now);
        timespec ts{time_t(wait), long(std::fmod(wait, 1.0) * 1e9)};
        int sig = sigtimedwait(&waitset, nullptr, &ts);
        if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) {
            stop = true;
            stop_reason = fmt::format("stopped by {}", sigabbrev_np(sig) ? sigabbrev_np(sig) : "signal");
            if (child) child->signal(sig == SIGINT ? SIGINT : SIGTERM);
        }
        if (child && child->poll(&exit_status)) {
            stop = true;
            stop_reason = fmt::format("command exited with status {}", exit_status);
            child.reset();
        }
        if (scen && scen->done()) {
            stop = true;
            stop_reason = "scenario finished";
        }
        now = monotonic_seconds();
        // A scenario was given the duration as its traffic time and ends itself.
        if (duration > 0 && !scen && now >= t0 + duration) stop = true;
        if (now >= next || stop) {
            // The churn ends before the last snapshot: every call its connections
            // make is then counted, and workload.connections covers the counted
            // window exactly (stopping after it left the last connections, a few
            // percent under emulation, uncounted but in the connection count).
            if (stop && churn) churn->stop();
            auto snap = (*session)->read();
            if (!snap) return fail(snap.error());
            if (snap->t - prev.t > 1e-3) emit(*snap);
            while (next <= now) next += interval;
        }
    }
    if (churn) {
        churn->stop();
        if (!churn->error().empty()) fmt::print(stderr, "hotline: workload: {}\n", churn->error());
        fmt::print(stderr, "hotline: churn workload made {} connections\n", churn->connections());
        rec.set("workload", {{"name", a.workload}, {"cpus", wl_cpus}, {"connections", churn->connections()}});
    }
    if (child) {
        child->signal(SIGTERM);
        exit_status = child->wait();
    }
    ScenarioNumbers numbers;
    if (scen) {
        auto res = scen->stop();
        if (!res) return fail(res.error());
        render_scenario_text(std::cerr, *res);
        rec.set("scenario", to_json(*res));
        if (res->command_status) exit_status = *res->command_status;
        numbers = scenario_numbers(*res);
    }
    record_diff_analysis(rec, **session, intervals, numbers, interval_ops, interval);

    Interval whole = delta(start, prev);
    std::cout << fmt::format("summary: {:.2f} s, {}\n", whole.seconds(), stop_reason);
    render_interval_text(std::cout, whole, *topo, a.per_cpu, "totals");
    for (auto& t : whole.d.targets) {
        if (!t.has_latency) continue;
        std::cout << fmt::format("{} latency ({}, {} calls timed, {} unpaired)\n", t.target,
                                 t.mechanism == Mechanism::kFentry ? "fentry/fexit" : "kprobe/kretprobe",
                                 t.lat_count, t.lat_lost);
        render_log2_hist(std::cout, t.hist, "nsecs");
        std::cout << "\n";
    }
    render_handoffs_text(std::cout, whole, *topo, a.per_cpu);
    std::cout << "\n";
    render_hot_objects_text(std::cout, top_objects(whole.d.objects, std::size_t(a.top)), whole.seconds());
    std::cout << "\n";
    render_layouts_text(std::cout, info.layouts);
    for (auto& note : info.notes) std::cout << note << "\n";
    if (whole.d.has_workq) {
        std::cout << "\n";
        render_workq_text(std::cout, whole.d.workq, *topo, whole.seconds(), info.random_mix, std::size_t(a.top));
    } else if (!info.workq.empty() && info.workq.rfind("attached", 0) != 0) {
        std::cout << "queue_work_on attribution: " << info.workq << "\n";
    }
    std::cout << "\n";
    render_cost_text(std::cout, whole.d.cost, whole.seconds());

    if (!a.output.empty()) {
        rec.finish(whole, exit_status, a.command);
        if (auto st = write_file_atomic(a.output, rec.doc().dump(1) + "\n"); !st) return fail(st.error());
        fmt::print(stderr, "hotline: recording written to {}\n", a.output);
    }
    session->reset();  // detach before reporting the command's status
    if (!a.command.empty()) return exit_status < 0 ? kExitError : exit_status;
    return kExitOk;
}

}  // namespace hotline::cli
