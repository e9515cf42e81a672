// SPDX-License-Identifier: Apache-2.0
// What hotline costs, side by side in one run: per-hit price of each program next
// to an empty one and to perf's own tracepoint counting, workload throughput
// with/without hotline and bpftrace (ABAB), the table of ns each observer adds to
// a call firing a tracepoint, queue_work_on tracking against bpftrace's, the
// workload loss of a full default session to +-1% (many short interleaved pairs, CPU per operation, checked
// against the kernel's run statistics), and the agent's attach time, first
// report, CPU and RSS.  Prints every goal missed and records it in the JSON;
// exits non-zero only when a part fails or measures nothing, never for a miss.
//
//   bench_overhead [--smoke] [--pairs N] [--duration S] [--json FILE] [--hotline BIN]
//                  [--no-bpftrace] [--no-perf]
//                  [--only cost,trigger,percall,workload,queue-work,loss,serve,discover,agent]
//                  [--loss-rounds N] [--loss-duration S] [--loss-sample-hz N]
//                  [--loss-time-every-run] [--loss-serve] [--loss-handoff-share PERCENT]
//                  [--loss-arm every-run,count,no-handoffs,no-workq,floor,serve,full-tracking]
//                  [--loss-scenarios tcp-crr,dst-refcount]
//
// The sections live beside this file (overhead.hpp lists them).
#include "overhead.hpp"

namespace overhead {

// One line per goal of the run's sections, read back from their JSON; each miss
// was recorded by its section (a miss is reported, never the exit status).
struct GoalLine {
    std::string what, value, target;
    bool missed;
};

// A paired-rounds ratio (to_json(RatioCi)) against its ceiling, judged on the
// interval's upper end.
GoalLine ratio_goal(const std::string& what, const json& r) {
    const double est = r["estimate"].get<double>(), low = r["low"].get<double>(), high = r["high"].get<double>(),
                 goal = r["target"].get<double>();
    return {what, fmt::format("{:.2f} [{:.2f} .. {:.2f}]", est, low, high), fmt::format("upper end <= {}", goal),
            high > goal};
}

void workload_goals(const json& out, std::vector<GoalLine>& lines) {
    for (auto& js : out.value("workload", json::array()))
        for (const char* hm : {"hotline", "hotline-count"}) {
            std::string key = std::string("ratio_") + hm + "_bpftrace";
            if (!js.contains(key)) continue;
            double r = js[key]["ns_per_hit"].get<double>();
            bool full = std::string(hm) == "hotline";
            // The floor beside the full session's figure: what an empty program there costs.
            std::string floor;
            if (full && js.contains("ratio_floor_bpftrace") && js["ratio_floor_bpftrace"].contains("ns_per_hit"))
                floor = fmt::format(" (floor {:.2f})", js["ratio_floor_bpftrace"]["ns_per_hit"].get<double>());
            lines.push_back({fmt::format("per hit / bpftrace, {}, {}", full ? "full session" : "counting only",
                                         js["scenario"].get<std::string>()),
                             fmt::format("{:.2f}{}", r, floor), full ? "<= 0.3" : "", full && r > 0.3});
        }
    if (out.contains("queue-work"))
        for (auto [peer, what] : {std::pair{"bpftrace-track", "per hit / bpftrace, the same queue_work_on tracking"},
                                  std::pair{"empty", "per hit / an empty program, queue_work_on tracking"}}) {
            const json& r = out["queue-work"].value(std::string("ratio_hotline-track_") + peer, json::object());
            if (r.contains("ns_per_hit")) lines.push_back(ratio_goal(what, r["ns_per_hit"]));
        }
    for (auto& js : out.value("workload", json::array()))
        if (js.contains("ratio_hotline-track_bpftrace-track"))
            lines.push_back(ratio_goal("per hit / bpftrace, the same dst tracking, " + js["scenario"].get<std::string>(),
                                       js["ratio_hotline-track_bpftrace-track"]["ns_per_hit"]));
}

// Issue 43: the full record session loses at most 0.5 points more than a
// counting-only one, judged on the upper end of the interval of the two in the
// same rounds (the count arm's "over the session", negated).
void count_goal(const json& loss, std::vector<GoalLine>& lines) {
    const json* arm = loss.contains("arms") && loss["arms"].contains("count") ? &loss["arms"]["count"] : nullptr;
    if (!arm) return;
    const json& o = (*arm)["over_session_pct"];
    const double est = -o["estimate"].get<double>(), low = -o["high"].get<double>(), high = -o["low"].get<double>();
    lines.push_back({"loss, full default session over counting-only, " + loss["scenario"].get<std::string>(),
                     fmt::format("{:+.2f} points [{:+.2f} .. {:+.2f}]", est, low, high),
                     fmt::format("upper end <= +{} points", kOverCountingTargetPts), high > kOverCountingTargetPts});
}

std::vector<GoalLine> goal_lines(const json& out) {
    std::vector<GoalLine> lines;
    for (auto& jl : out.value("loss", json::array())) {
        auto& c = jl["cpu_per_op_added_pct"];
        bool full = jl.value("sample_hz", 0) == SessionOptions{}.sample_freq && !jl.value("time_every_run", false) &&
                    jl.value("track_percent", kRecordHandoffShare) == kRecordHandoffShare;
        const bool serve = jl.value("duty_percent", 100) < 100;
        const char* what = serve ? "loss, serve's default session, "
                           : full ? "loss, full default session, "
                                  : "loss, NOT the default session, ";
        // serve's goal (issue 43): the interval's upper end at most 1%.
        bool missed = c["estimate"].get<double>() > kLossTargetPct || c["half_width"].get<double>() > kLossHalfWidthPct ||
                      (serve && c["high"].get<double>() > kLossTargetPct);
        lines.push_back({what + jl["scenario"].get<std::string>(),
                         fmt::format("{:+.2f}% [{:+.2f}% .. {:+.2f}%]", c["estimate"].get<double>(),
                                     c["low"].get<double>(), c["high"].get<double>()),
                         serve ? "upper end <= 1%" : "<= 1%, +- 1%", missed});
        if (full && !serve) count_goal(jl, lines);
    }
    for (auto& js : out.value("serve", json::array())) {
        if (!js.contains("targets")) continue;
        for (auto& [target, t] : js["targets"].items()) {
            const json& r = t["runs"];
            double off = std::max(std::fabs(r["min"].get<double>() - 1), std::fabs(r["max"].get<double>() - 1));
            lines.push_back({fmt::format("serve's default handoffs/op / full tracking, {}, {}",
                                         js["scenario"].get<std::string>(), target),
                             fmt::format("runs {:.3f} .. {:.3f}", r["min"].get<double>(), r["max"].get<double>()),
                             "1 +- 0.1", off > 0.1});
        }
    }
    workload_goals(out, lines);
    if (g_count_vs_perf.perf_ns != 0)
        lines.push_back({"per hit / perf tracepoint counting, counting program (trigger)",
                         fmt::format("{:.1f} / {:.1f} ns = {:.2f}", g_count_vs_perf.count_ns, g_count_vs_perf.perf_ns,
                                     g_count_vs_perf.ratio()),
                         "", false});
    if (out.contains("agent"))
        for (auto [name, key] : {std::pair{"agent attach, idle", kAttachIdle},
                                 std::pair{"agent first report, idle", kFirstReportIdle}}) {
            if (!out["agent"].contains(key)) continue;  // the section failed: its failure is the exit status
            // The goal as the agent section judged it (agent_table writes it beside the figure).
            double v = out["agent"][key]["value"]["median"].get<double>(), goal = out["agent"][key]["target"].get<double>();
            lines.push_back({name, fmt::format("{:.3f} s", v), fmt::format("<= {} s", goal), v > goal});
        }
    return lines;
}

json summary_section(const json& out) {
    fmt::print("\n== against the goals\n");
    json js = json::array();
    for (auto& l : goal_lines(out)) {
        fmt::print("{:<64} {:>26} {:>14}{}\n", l.what, l.value, l.target, l.missed ? "  MISSED" : "");
        js.push_back({{"goal", l.what}, {"value", l.value}, {"target", l.target}, {"met", !l.missed}});
    }
    return js;
}

// The command line into O; an exit status when it is refused.
std::optional<int> parse_options(int argc, char** argv, Options& o) {
    o.hotline_bin = default_hotline(argv[0]);
    Args args("bench_overhead",
              "bench_overhead [--smoke] [--pairs N] [--duration S] [--json FILE] "
              "[--hotline BIN] [--no-bpftrace] [--no-perf] [--only cost,trigger,percall,workload,queue-work,loss,serve,discover,agent] "
              "[--loss-rounds N] [--loss-duration S] [--loss-sample-hz N] [--loss-time-every-run] [--loss-serve] "
              "[--loss-handoff-share PERCENT] "
              "[--loss-arm every-run,count,no-handoffs,no-workq,floor,serve,full-tracking,discover,discover-full,discover-settled] [--loss-scenarios tcp-crr,dst-refcount]",
              argc, argv);
    while (args.next()) {
        if (args.is("--smoke")) o.smoke = true;
        else if (args.is("--pairs")) o.pairs = args.int_value();
        else if (args.is("--duration")) o.secs = args.double_value();
        else if (args.is("--json")) o.json_path = args.value();
        else if (args.is("--hotline")) o.hotline_bin = args.value();
        else if (args.is("--no-bpftrace")) o.bpftrace = false;
        else if (args.is("--no-perf")) o.perf = false;
        else if (args.is("--loss-rounds")) o.loss_rounds = args.int_value();
        else if (args.is("--loss-duration")) o.loss_secs = args.double_value();
        else if (args.is("--loss-sample-hz")) g_loss_session.sample_freq = args.int_value();
        else if (args.is("--loss-time-every-run")) g_loss_session.time_every_run = true;
        else if (args.is("--loss-serve")) g_loss_session = serve_default_session();
        else if (args.is("--loss-handoff-share")) g_loss_session.track_percent = args.int_value();
        else if (args.is("--loss-every-run-arm")) add_loss_arms("every-run");  // the older spelling
        else if (args.is("--loss-arm")) {
            if (!add_loss_arms(args.value())) return 2;
        } else if (args.is("--loss-scenarios")) {
            o.loss_scenarios = split_list(args.value());
            o.loss_scenarios_given = true;
        } else if (args.is("--only")) {
            for (const std::string& s : split_list(args.value())) o.only.insert(s);
        } else {
            return args.usage();
        }
    }
    return std::nullopt;
}

void apply_smoke(Options& o) {
    o.pairs = 1;
    o.secs = 0.5;
    o.loss_rounds = 2;
    // A second: the session's statistics window (100 ms at a random point
    // of each second) falls in every run, so the account is never empty.
    o.loss_secs = 1;
    // The smoke checks that every part runs, every extra loss arm included, on
    // one scenario (the host tier runs every scenario).
    use_every_loss_arm();
    if (!o.loss_scenarios_given) o.loss_scenarios = {"tcp-crr"};
}

// Options that contradict each other or name nothing: false after saying why.
bool options_hold(const Options& o) {
    if (!loss_arms_hold()) return false;
    if (o.loss_scenarios.empty()) {
        fmt::print(stderr, "bench_overhead: --loss-scenarios names no scenario (scenarios: {})\n", scenario_names());
        return false;
    }
    for (const std::string& scen : o.loss_scenarios)
        if (!find_scenario(scen)) {
            fmt::print(stderr, "bench_overhead: --loss-scenarios: no scenario named '{}' (scenarios: {})\n", scen,
                       scenario_names());
            return false;
        }
    if (o.pairs < 1 || o.secs <= 0 || o.loss_rounds < 2 || o.loss_secs <= 0) {
        fmt::print(stderr, "bench_overhead: --pairs, --duration and --loss-duration must be positive, --loss-rounds at least 2\n");
        return false;
    }
    return true;
}

// Root and the peer tools the chosen sections run: false after saying what is missing.
bool machine_ready(const Options& o) {
    if (geteuid() != 0) {
        fmt::print(stderr, "bench_overhead: needs root (BPF, network namespaces); run it as root\n");
        return false;
    }
    if (o.bpftrace && std::system("command -v bpftrace > /dev/null 2>&1") != 0) {
        fmt::print(stderr, "bench_overhead: bpftrace not installed (apt-get install bpftrace, or --no-bpftrace)\n");
        return false;
    }
    if (o.perf && (o.want("trigger") || o.want("percall")) && std::system("perf stat -e task-clock true > /dev/null 2>&1") != 0) {
        fmt::print(stderr, "bench_overhead: perf does not run (apt-get install linux-perf, or --no-perf)\n");
        return false;
    }
    return true;
}

int finish_run(const Options& o, json& out) {
    out["summary"] = summary_section(out);
    out["missed"] = g_missed;
    fmt::print("\n");
    if (g_missed.empty()) fmt::print("all targets met\n");
    for (auto& m : g_missed) fmt::print("MISSED {}\n", m);
    g_run_stats.off();
    std::vector<std::string> sections;
    for (const char* part : {"cost", "trigger", "percall", "workload", "queue-work", "loss", "serve", "discover", "agent"})
        if (o.want(part) && (o.bpftrace || std::string(part) != "queue-work")) sections.push_back(part);
    sections.push_back("summary");
    // Differences of two timings may be below zero: the added ns per hit and the
    // loss estimates with their bounds (each round's figures stay positive).  The summary is empty when no section
    // with a goal ran (--only cost).
    // An idle machine's busy share may be 0; so may handoffs too few to judge (serve).
    FigureRules rules{{"added_ns_per_hit", "added_ns_per_call", "throughput_loss_pct", "cpu_per_op_added_pct", "bpf_run_time_pct",
                       "run_stats_price_pct", "over_session_pct", "run_stats_price_ns_per_run", "busy_pct_before",
                       "too_few", "ratio"},
                      {"missed", "notes", "summary"}};
    return finish("bench_overhead", out, o.json_path, sections, g_failures, rules);
}

}  // namespace overhead

using namespace overhead;

int main(int argc, char** argv) {
    Options o;
    if (auto rc = parse_options(argc, argv, o)) return *rc;
    if (o.smoke) apply_smoke(o);
    if (!options_hold(o)) return 2;
    if (!machine_ready(o)) return 1;
    // Run statistics on for the whole run, bpftrace's programs included; dropped
    // with this fd at exit, so kernel.bpf_stats_enabled is never touched.
    if (!g_run_stats.on()) failed(fmt::format("cannot enable BPF run statistics: {}", std::strerror(errno)));

    KernelInfo k = probe_kernel();
    auto topo = read_topology();
    if (!topo) {
        fmt::print(stderr, "bench_overhead: {}\n", topo.error().message());
        return 1;
    }
    json out = {{"pairs", o.pairs}, {"duration_s", o.secs}, {"smoke", o.smoke}};
    if (o.want("cost")) out["cost"] = cost_section(o, k, *topo);
    if (o.want("trigger")) out["trigger"] = trigger_section(o.smoke, o.pairs, o.perf);
    if (o.want("percall")) out["percall"] = per_call_section(o.smoke, o.pairs, o.perf, o.bpftrace);
    if (o.want("workload")) out["workload"] = workload_section(o, k, *topo);
    if (o.want("queue-work") && o.bpftrace) out["queue-work"] = queue_work_peer(o, k, *topo);
    if (o.want("loss")) out["loss"] = loss_section(o.loss_scenarios, o.loss_rounds, o.loss_secs, k, *topo);
    if (o.want("serve")) out["serve"] = serve_fidelity_section(o, k, *topo);
    if (o.want("discover")) out["discover"] = discover_section(o.smoke, *topo);
    if (o.want("agent"))
        out["agent"] = agent_section(o.hotline_bin, o.smoke ? 1 : std::min(o.pairs, 3),
                                     o.smoke ? 3 : std::max(10.0, o.secs * 2));
    return finish_run(o, out);
}
