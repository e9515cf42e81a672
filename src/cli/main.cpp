// hotline command line: parses arguments and hands off to the library.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <iostream>

#include "commands.hpp"
#include "hotline/serve.hpp"

int main(int argc, char** argv) {
    CLI::App app{"hotline: find kernel cache-line contention and prove a fix removes it"};
    app.require_subcommand(1);
    app.set_version_flag("--version", std::string("hotline ") + HOTLINE_VERSION);

    hotline::cli::ProbeArgs probe;
    auto* p = app.add_subcommand("probe", "Report what this kernel allows and the attach plan per target");
    p->add_flag("--json", probe.json, "Print JSON");
    p->add_option("-t,--targets", probe.targets, "Targets to plan (comma list)")->delimiter(',');
    p->add_option("--mechanism", probe.mechanism, "Force one mechanism: fentry|kprobe|tracepoint|sampling");
    p->add_option("--func", probe.funcs, "Also plan a kernel function: NAME or NAME:argN (repeatable)");

    hotline::cli::RecordArgs rec;
    auto* r = app.add_subcommand("record", "Trace the targets and print per-node rates every interval");
    r->add_option("-d,--duration", rec.duration, "How long to record (e.g. 10s, 2m); default: until Ctrl-C or the command exits");
    r->add_option("-i,--interval", rec.interval, "Print interval (default 1s)");
    r->add_option("-t,--targets", rec.targets, "Targets (comma list); default: all built-in")->delimiter(',');
    r->add_flag("--per-cpu", rec.per_cpu, "Print a table per CPU instead of per NUMA node");
    r->add_option("-o,--output", rec.output, "Write a JSON recording to FILE");
    r->add_option("-m,--mechanism", rec.mechanism, "Force one mechanism: fentry|kprobe|tracepoint|sampling");
    r->add_option("--workload", rec.workload, "Built-in workload while recording: churn (loopback connect/write/close per CPU), churn-split (each connection served on the next CPU), none");
    r->add_option("--workload-cpus", rec.workload_cpus, "CPUs for the built-in workload (default: all)");
    r->add_option("-F,--sample-freq", rec.sample_freq, "Sampling frequency per CPU in Hz (default 999)");
    r->add_flag("--no-latency", rec.no_latency, "Count only: do not attach fexit/kretprobe");
    r->add_flag("-q,--quiet", rec.quiet, "Print only the summary");
    r->add_option("--func", rec.funcs, "Also watch a kernel function, tracking pointer argument N as the object: NAME[:argN] (repeatable)");
    r->add_flag("--no-handoffs", rec.no_handoffs, "Count only: do not track object handoffs between CPUs");
    r->add_option("--handoff-sample", rec.handoff_sample, "Track handoffs of 1 object in N (by address hash) to cut cost");
    r->add_option("--owner-map-size", rec.owner_map_size, "Objects the handoff tracker keeps per target (LRU, default 16384)");
    r->add_option("--top", rec.top, "Hot objects and work functions to list (default 10)");
    r->add_flag("--no-workq", rec.no_workq, "Do not attach the queue_work_on attribution programs");
    r->add_option("--scenario", rec.scenario.name, "Run this scenario while recording (see `hotline scenario list`)");
    hotline::cli::add_scenario_options(r, rec.scenario, false);
    r->add_option("command", rec.command, "Command to run while recording (after --)");
    r->positionals_at_end();

    hotline::cli::CostArgs cost;
    auto* c = app.add_subcommand("cost", "Per-hit cost of counting, latency and handoff tracking vs an empty program");
    c->add_option("-d,--duration", cost.duration, "How long the built-in workload runs (default 5s)");
    c->add_option("-t,--targets", cost.targets, "Targets (comma list); default: all built-in")->delimiter(',');
    c->add_option("--func", cost.funcs, "Also measure a kernel function: NAME[:argN] (repeatable)");
    c->add_option("-m,--mechanism", cost.mechanism, "Force one mechanism: fentry|kprobe|tracepoint|sampling");
    c->add_option("--workload", cost.workload,
                  "Built-in workload: churn+pty (default: loopback connection churn plus a paced pty writer "
                  "for workqueue_queue_work), churn, churn-split, pty, none");
    c->add_flag("--json", cost.json, "Print JSON");
    c->add_flag("--strict", cost.strict, "Exit 4 when a variant is over its budget");
    c->add_option("command", cost.command, "Command that drives the events instead (after --)");
    c->positionals_at_end();

    hotline::cli::ScenarioArgs scen;
    bool scen_list_json = false;
    auto* sc = app.add_subcommand("scenario", "One-host reproducers in private network namespaces");
    sc->require_subcommand(1);
    auto* sl = sc->add_subcommand("list", "List the scenarios");
    sl->add_flag("--json", scen_list_json, "Print JSON");
    auto* sr = sc->add_subcommand("run", "Run a scenario and print what it measured");
    sr->add_option("name", scen.name, "Scenario name")->required();
    hotline::cli::add_scenario_options(sr, scen, true);
    sr->add_flag("--json", scen.json, "Print JSON");
    sr->add_option("-o,--output", scen.output, "Also write the JSON result to FILE");
    sr->add_option("command", scen.command, "Command to run in the client namespace (after --)");
    hotline::daemon::ServeArgs serve;
    auto* sv = app.add_subcommand("serve", "Keep the targets attached and export their counters to Prometheus");
    sv->add_option("-c,--config", serve.config, "TOML configuration file (default: every built-in target)");
    sv->add_option("-l,--listen", serve.listen, "ADDRESS:PORT to serve on (default 127.0.0.1:9464)");
    sv->add_flag("--check-config", serve.check_config, "Validate the configuration and exit (with --strict: also attach every target)");
    sv->add_flag("--strict", serve.strict, "Fail when any configured target cannot be attached");
    hotline::cli::FixesCli fixes;
    hotline::cli::add_fixes_commands(app, fixes);
    hotline::cli::ValidateCli validate;
    hotline::cli::add_validate_commands(app, validate);

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        int rc = app.exit(e);
        return rc == 0 ? 0 : hotline::cli::kExitUsage;
    }
    if (*p) return hotline::cli::run_probe(probe);
    if (*r) return hotline::cli::run_record(rec);
    if (*c) return hotline::cli::run_cost(cost);
    if (*sl) return hotline::cli::run_scenario_list(scen_list_json);
    if (*sr) return hotline::cli::run_scenario_run(scen);
    if (*sv) return hotline::daemon::run_serve(serve);
    if (fixes.selected()) return hotline::cli::run_fixes(fixes);
    if (validate.selected()) return hotline::cli::run_validate_cli(validate);
    return hotline::cli::kExitUsage;
}
