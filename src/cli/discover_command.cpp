// SPDX-License-Identifier: Apache-2.0
// `hotline discover`: the record engine with discover's typed attach points
// and no target, printing the struct types whose objects move between CPUs.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <iostream>

#include "commands.hpp"
#include "hotline/base/signals.hpp"
#include "hotline/report/html_report.hpp"
#include "hotline/report/output.hpp"
#include "hotline/session/recording.hpp"

namespace hotline::cli {

void add_discover_command(CLI::App& app, DiscoverCli& d) {
    auto* c = app.add_subcommand("discover", "Find the kernel objects of any type that move between CPUs and nodes");
    d.discover = c;
    TracingOptions& t = d.tracing;
    DiscoverOptions& o = d.options;
    c->add_option("-d,--duration", t.duration, "How long to watch (e.g. 10s); default: until Ctrl-C or the command exits");
    c->add_option("--types", o.types, "Struct types to follow (comma list); default: every type the attach points pass")
        ->delimiter(',');
    c->add_option("--tracepoints", o.tracepoints,
                  "Tracepoints to attach (globs, comma list; GLOB:N only argument N), e.g. 'sched_*', or the sets "
                  "@default (wakeups, switches, socket data and sends, work items, timer expiries) and @busy "
                  "(socket states, reads and ends, the network stack's queues and frees, timer starts: 2-9 runs "
                  "per connection each); default: @default")
        ->delimiter(',');
    c->add_option("--functions", o.functions,
                  "Also attach fentry to these functions (globs, comma list), e.g. 'tcp_*' (needs fentry)")
        ->delimiter(',');
    c->add_option("--top", d.top, fmt::format("Types to show in detail (default {})", d.top));
    c->add_option("--sample", o.sample,
                  fmt::format("Track 1 object in N, by address hash (default {}; 1: every object)", o.sample));
    c->add_option("--duty-cycle", o.duty_percent,
                  fmt::format("Percent of the time the programs are attached, in windows of {} s (default {}, "
                              "100 with --functions; 100: throughout); detached, they cost the workload nothing",
                              std::chrono::duration<double>(kDiscoverDutyPeriod).count(), kDiscoverDutyPercent));
    c->add_option("--owner-map-size", o.owner_capacity,
                  fmt::format("Objects the owner table keeps (default {})", o.owner_capacity));
    c->add_option("--workload", t.workload, "Built-in workload: churn, churn-split or none (default none)");
    c->add_option("--workload-cpus", t.workload_cpus, "CPUs for the built-in workload (default: all)");
    c->add_option("--scenario", d.scenario.name, "Run this scenario while watching (see `hotline scenario list`)");
    add_scenario_options(c, d.scenario, false);
    c->add_flag("--json", d.json, "Print the JSON recording on stdout (the text goes to stderr)");
    c->add_option("-o,--output", d.output, "Also write the JSON recording to FILE");
    c->add_option("--html", d.html, "Write the recording as a self-contained HTML report to FILE");
    c->add_option("command", t.command, "Command to run while watching (after --)");
    c->positionals_at_end();
    c->footer(examples({"hotline discover -d 10s --workload churn-split",
                        "hotline discover --tracepoints @default,@busy --types sock,sk_buff -d 30s -o discover.json",
                        "hotline discover --scenario tcp-crr -d 10s --functions dst_release,inet_csk_accept"}));
}

int run_discover(const DiscoverCli& d) {
    TracingOptions t = d.tracing;
    t.watch_targets = false;
    t.discover = d.options;
    if (d.top < 1) return fail(make_error("--top must be at least 1", EINVAL), kExitUsage);
    if (auto sets = expand_tracepoint_sets(d.options.tracepoints); !sets) return fail(sets.error(), kExitUsage);
    if (!d.scenario.name.empty()) {
        auto so = to_scenario_options(d.scenario, false);
        if (!so) return fail(so.error(), kExitUsage);
        t.scenario = *so;
    }
    auto setup = check_tracing_options(t);
    if (!setup) return fail(setup.error(), kExitUsage);
    if (!d.output.empty())
        if (auto st = check_output_path(d.output); !st) return fail(st.error(), kExitUsage);
    auto topo = read_topology();
    if (!topo) return fail(topo.error(), kExitError);
    auto wl_cpus = check_workload_cpus(t, *topo);
    if (!wl_cpus) return fail(wl_cpus.error(), kExitUsage);

    ShutdownSignals signals({SIGCHLD});
    auto run = Recording::open(*setup, *wl_cpus, probe_kernel(), *topo);
    if (!run) return fail(run.error(), kExitError);
    RecordingHooks hooks;
    hooks.log = &std::cerr;
    if (auto st = (*run)->run(signals, hooks); !st) return fail(st.error(), kExitError);
    const nlohmann::json& doc = (*run)->writer().doc();
    render_discover_text(d.json ? std::cerr : std::cout, doc["discover"], std::size_t(d.top));
    if (d.json) std::cout << document_text(doc);
    else print_recording_findings(doc);
    if (!d.output.empty()) {
        if (auto w = write_file_atomic(d.output, document_text(doc)); !w) return fail(w.error(), kExitError);
        fmt::print(stderr, "hotline: recording written to {}\n", d.output);
    }
    if (!write_html(d.html, HtmlInput{doc, d.output, std::nullopt, std::nullopt})) return kExitError;
    const int status = (*run)->exit_status();
    (*run)->detach();
    if (!t.command.empty()) return status < 0 ? kExitError : status;
    return kExitOk;
}

}  // namespace hotline::cli
