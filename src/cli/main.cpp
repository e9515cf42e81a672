// SPDX-License-Identifier: Apache-2.0
// hotline command line: parses arguments and hands off to the library.  Help
// texts name the defaults from the structures that define them.
#include <CLI/CLI.hpp>
#include <string_view>
#include <fmt/format.h>

#include <cstdio>
#include <iostream>

#include "commands.hpp"
#include "hotline/base/log.hpp"
#include "hotline/daemon/serve.hpp"

namespace hotline::cli {
namespace {

constexpr const char* kMechanismHelp = "Force one mechanism: fentry|kprobe|tracepoint|sampling";

CLI::App* add_probe_command(CLI::App& app, ProbeArgs& probe) {
    auto* p = app.add_subcommand("probe", "Report what this kernel allows and the attach plan per target");
    p->add_flag("--json", probe.json, "Print JSON");
    p->add_option("-t,--targets", probe.targets, "Targets to plan (comma list)")->delimiter(',');
    p->add_option("--mechanism", probe.mechanism, kMechanismHelp);
    p->add_option("--func", probe.funcs, "Also plan a kernel function: NAME or NAME:argN (repeatable)");
    p->footer(examples({"hotline probe", "hotline probe --json", "hotline probe -t dst_release --mechanism tracepoint"}));
    return p;
}

}  // namespace

void add_record_options(CLI::App* r, RecordArgs& rec) {
    TracingOptions& t = rec.tracing;
    r->add_option("-d,--duration", t.duration, "How long to record (e.g. 10s, 2m); default: until Ctrl-C or the command exits");
    r->add_option("-i,--interval", t.interval, fmt::format("Print interval (default {})", t.interval));
    r->add_option("-t,--targets", t.targets, "Targets (comma list); default: all built-in")->delimiter(',');
    r->add_flag("--per-cpu", rec.per_cpu, "Print a table per CPU instead of per NUMA node");
    r->add_option("-m,--mechanism", t.mechanism, kMechanismHelp);
    r->add_option("--workload", t.workload, "Built-in workload while recording: churn (loopback connect/write/close per CPU), churn-split (each connection served on the next CPU, the client waiting for its close), none");
    r->add_option("--workload-cpus", t.workload_cpus, "CPUs for the built-in workload (default: all)");
    r->add_option("-F,--sample-freq", t.sample_freq,
                  fmt::format("Sampling frequency per CPU in Hz (default {})", t.sample_freq));
    r->add_flag_callback("--no-latency", [&t] { t.latency = false; }, "Count only: do not attach fexit/kretprobe");
    r->add_flag("-q,--quiet", rec.quiet, "Print only the summary");
    r->add_option("--func", t.funcs, "Also watch a kernel function, tracking pointer argument N as the object: NAME[:argN] (repeatable)");
    r->add_flag_callback("--no-handoffs", [&t] { t.handoffs = false; }, "Count only: do not track object handoffs between CPUs");
    r->add_option("--handoff-sample", t.handoff_sample, "Track handoffs of 1 object in N (by address hash) to cut cost");
    r->add_option("--handoff-share", t.handoff_share,
                  fmt::format("Track handoffs this percent of each 2 s (default {}); calls are counted throughout, "
                              "handoffs scaled to the whole time",
                              t.handoff_share));
    r->add_option("--owner-map-size", t.owner_capacity,
                  fmt::format("Objects the handoff tracker keeps per target (default {})", t.owner_capacity));
    r->add_option("--top", rec.top, fmt::format("Hot objects and work functions to list (default {})", rec.top));
    r->add_flag_callback("--no-workq", [&t] { t.workq = false; }, "Do not attach the queue_work_on attribution programs");
    r->add_option("--scenario", rec.scenario.name, "Run this scenario while recording (see `hotline scenario list`)");
    add_scenario_options(r, rec.scenario, false);
}

namespace {

CLI::App* add_record_command(CLI::App& app, RecordArgs& rec) {
    auto* r = app.add_subcommand("record", "Trace the targets and print per-node rates every interval");
    add_record_options(r, rec);
    r->add_flag("--json", rec.json, "Print the JSON recording on stdout at the end (the tables go to stderr)");
    r->add_option("-o,--output", rec.output, "Also write the JSON recording to FILE");
    r->add_option("--html", rec.html, "Write the recording as a self-contained HTML report to FILE");
    r->add_flag("--no-findings", rec.no_findings,
                fmt::format("Do not end with the top {} findings (`hotline diagnose` gives them all)", kRecordFindings));
    r->add_option("command", rec.tracing.command, "Command to run while recording (after --)");
    r->positionals_at_end();
    r->footer(examples({"hotline record -d 10s --workload churn", "hotline record --scenario tcp-crr -d 10s -o rec.json",
                        "hotline record -t dst_release -q -- ./my-benchmark"}));
    return r;
}

CLI::App* add_cost_command(CLI::App& app, CostArgs& cost) {
    auto* c = app.add_subcommand("cost", "Per-hit cost of counting, latency and handoff tracking vs an empty program");
    c->add_option("-d,--duration", cost.duration,
                  fmt::format("How long the built-in workload runs (default {})", cost.duration));
    c->add_option("-t,--targets", cost.targets, "Targets (comma list); default: all built-in")->delimiter(',');
    c->add_option("--func", cost.funcs, "Also measure a kernel function: NAME[:argN] (repeatable)");
    c->add_option("-m,--mechanism", cost.mechanism, kMechanismHelp);
    c->add_option("--workload", cost.workload,
                  fmt::format("Built-in workload: churn+pty (loopback connection churn plus a paced pty writer for "
                              "workqueue_queue_work), churn, churn-split, pty, none; default {}",
                              cost.workload));
    c->add_flag("--json", cost.json, "Print JSON");
    c->add_flag("--strict", cost.strict, fmt::format("Exit {} when a variant is over its budget", kExitBudget));
    c->add_option("command", cost.command, "Command that drives the events instead (after --)");
    c->positionals_at_end();
    c->footer(examples({"hotline cost", "hotline cost --strict --json", "hotline cost -t dst_release -- ./my-benchmark"}));
    return c;
}

struct ScenarioCommands {
    CLI::App* list = nullptr;
    CLI::App* run = nullptr;
    bool list_json = false;
};

void add_scenario_commands(CLI::App& app, ScenarioArgs& scen, ScenarioCommands& sc) {
    auto* top = app.add_subcommand("scenario", "One-host reproducers in private network namespaces");
    top->require_subcommand(1);
    sc.list = top->add_subcommand("list", "List the scenarios");
    sc.list->add_flag("--json", sc.list_json, "Print JSON");
    sc.run = top->add_subcommand("run", "Run a scenario and print what it measured");
    sc.run->add_option("name", scen.name, "Scenario name")->required();
    add_scenario_options(sc.run, scen, true);
    sc.run->add_flag("--json", scen.json, "Print JSON");
    sc.run->add_option("-o,--output", scen.output, "Also write the JSON result to FILE");
    sc.run->add_option("command", scen.command, "Command to run in the client namespace (after --)");
    top->footer(examples({"hotline scenario list", "hotline scenario run tcp-crr -d 5s"}));
    sc.list->footer(examples({"hotline scenario list", "hotline scenario list --json"}));
    sc.run->footer(examples({"hotline scenario run tcp-crr -d 5s", "hotline scenario run dst-refcount --json -o result.json",
                             "hotline scenario run exec -- ping -c 3 10.0.0.1"}));
}

CLI::App* add_serve_command(CLI::App& app, daemon::ServeArgs& serve) {
    auto* sv = app.add_subcommand("serve", "Keep the targets attached and export their counters to Prometheus");
    sv->add_option("-c,--config", serve.config, "TOML configuration file (default: every built-in target)");
    sv->add_option("-l,--listen", serve.listen,
                   fmt::format("ADDRESS:PORT to serve on, :PORT for every address (default {}:{})",
                               daemon::kDefaultListenHost, daemon::kDefaultListenPort));
    sv->add_option("--web.config.file", serve.web_config,
                   "exporter-toolkit web configuration (YAML): TLS and basic-auth users with bcrypt hashes");
    sv->add_option("--log.level", serve.log_level, fmt::format("Least level logged: {} (default {})", kLogLevels, serve.log_level));
    sv->add_option("--log.format", serve.log_format, fmt::format("Log line format: {} (default {})", kLogFormats, serve.log_format));
    sv->add_flag("--check-config", serve.check_config, "Validate the configuration and exit (with --strict: also attach every target)");
    sv->add_flag("--strict", serve.strict, "Fail when any configured target cannot be attached");
    sv->footer(examples({"hotline serve -c /etc/hotline/serve.toml",
                         "hotline serve --listen :10464 --web.config.file /etc/hotline/web.yml --log.format json",
                         "hotline serve -c /etc/hotline/serve.toml --check-config"}));
    return sv;
}

}  // namespace
}  // namespace hotline::cli

namespace {

// The subcommand the words before the first "--" select, and its trailing
// positional (the command to run, or vm's hotline arguments), if it has one.
CLI::Option* trailing_positional(CLI::App& app, int argc, char** argv) {
    CLI::App* cur = hotline::cli::named_subcommand(app, argc, argv);
    if (cur == &app) return nullptr;
    if (auto* o = cur->get_option_no_throw("command")) return o;
    return cur->get_option_no_throw("args");
}

// CLI11 ends a vector option's values at "--" and then parses what follows as
// options (`validate -t dst_release -- sh -c x` would read `-c`): the words
// after the first "--" are given to the subcommand's trailing positional
// as they are.
void parse_with_command(CLI::App& app, int argc, char** argv) {
    int dashes = 1;
    while (dashes < argc && std::string_view(argv[dashes]) != "--") ++dashes;
    CLI::Option* trailing = dashes < argc ? trailing_positional(app, argc, argv) : nullptr;
    if (!trailing) {
        app.parse(argc, argv);
        return;
    }
    app.parse(dashes, argv);
    for (int i = dashes + 1; i < argc; ++i) trailing->add_result(argv[i]);
    trailing->run_callback();
}

}  // namespace

int main(int argc, char** argv) {
    using namespace hotline::cli;
    CLI::App app{"hotline: find kernel cache-line contention and prove a fix removes it"};
    app.name("hotline");  // the usage lines and man pages name the program, not argv[0]
    app.require_subcommand(1);
    app.set_version_flag("-V,--version", std::string("hotline ") + HOTLINE_VERSION);
    // Exit status before the examples: help2man makes "Examples:" the man page's EXAMPLES section.
    app.footer(exit_status_help() + examples({"hotline probe", "hotline validate --fix numa-local -o verdict.json",
                                              "hotline help validate"}));

    ProbeArgs probe;
    RecordArgs rec;
    CostArgs cost;
    ScenarioArgs scen;
    ScenarioCommands sc;
    hotline::daemon::ServeArgs serve;
    FixesCli fixes;
    ValidateCli validate;
    ReportArgs report;
    VmCli vm;
    HelpArgs help;
    CompleteArgs complete;
    DiagnoseCli diagnose;
    DiscoverCli discover;
    auto* p = add_probe_command(app, probe);
    auto* r = add_record_command(app, rec);
    auto* c = add_cost_command(app, cost);
    add_scenario_commands(app, scen, sc);
    auto* sv = add_serve_command(app, serve);
    add_fixes_commands(app, fixes);
    add_validate_commands(app, validate);
    add_report_command(app, report);
    add_vm_commands(app, vm);
    add_help_command(app, help);
    add_complete_command(app, complete);
    add_diagnose_command(app, diagnose);
    add_discover_command(app, discover);

    name_metavariables(app);
    if (auto rc = check_subcommand_words(app, argc, argv)) return *rc;
    try {
        parse_with_command(app, argc, argv);
    } catch (const CLI::ParseError& e) {
        return usage_error(app, e, argc, argv);
    }
    if (*help.help) return run_help(app, help);
    if (*complete.complete) return run_complete(app, complete);
    if (*p) return run_probe(probe);
    if (*r) return run_record(rec);
    if (*c) return run_cost(cost);
    if (*sc.list) return run_scenario_list(sc.list_json);
    if (*sc.run) return run_scenario_run(scen);
    if (*sv) return hotline::daemon::run_serve(serve);
    if (fixes.selected()) return run_fixes(fixes);
    if (validate.selected()) return run_validate_cli(validate);
    if (*report.app) return run_report(report);
    if (vm.selected()) return run_vm_cli(vm);
    if (*diagnose.diagnose) return run_diagnose(diagnose);
    if (*discover.discover) return run_discover(discover);
    return kExitUsage;
}
