// SPDX-License-Identifier: Apache-2.0
// `hotline validate` and `hotline diff`: thin front ends over the validator and
// the recording comparison (src/validate/).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <unistd.h>

#include <iostream>
#include <sstream>

#include "commands.hpp"
#include "hotline/report/html_report.hpp"
#include "hotline/kernel/interrupts.hpp"
#include "hotline/report/terminal.hpp"
#include "hotline/base/util.hpp"
#include "hotline/session/tracing.hpp"
#include "hotline/validate/validator.hpp"
#include "hotline/report/verdict_output.hpp"

namespace hotline::cli {

namespace {

// Writes one rendering of the verdict to `file` when one was asked for; false
// (after saying why) when it could not be written.
template <class Render>
bool write_rendering(const std::string& file, const VerdictReport& r, Render render) {
    if (file.empty()) return true;
    std::ostringstream os;
    render(os, r);
    auto st = write_file_atomic(file, os.str());
    if (!st) fail(st.error(), kExitValidateError);
    return st.ok();
}

}  // namespace

bool render_all(VerdictReport& r, const VerdictFiles& out) {
    r.context["command"] = own_command_line();
    if (out.print_json) render_verdict_json(std::cout, r);
    else render_verdict_text(std::cout, r, colour_wanted(STDOUT_FILENO));
    std::cout.flush();
    bool json_ok = write_rendering(out.json, r, render_verdict_json);
    bool junit_ok = write_rendering(out.junit, r, render_junit);
    bool html_ok = write_html(out.html, HtmlInput{verdict_to_json(r), out.json, out.baseline, out.candidate});
    return json_ok && junit_ok && html_ok;
}

namespace {

VerdictFiles verdict_files(const ValidateCli& a, std::optional<nlohmann::json> baseline,
                           std::optional<nlohmann::json> candidate) {
    return VerdictFiles{a.output, a.junit_file, a.html_file, a.json, std::move(baseline), std::move(candidate)};
}

int run_diff(const ValidateCli& a) {
    auto cat = load_catalog(a.fixes_dir);
    if (!cat) return fail(cat.error(), kExitUsage);
    const FixDef* fix = cat->find(a.fix);
    if (!fix) return fail(make_error(unknown_name_message("fix", a.fix, cat->names()), EINVAL, "known fixes: " + cat->names()), kExitUsage);
    auto b = load_json(a.baseline);
    if (!b) return fail(b.error(), kExitValidateError);
    auto c = load_json(a.candidate);
    if (!c) return fail(c.error(), kExitValidateError);
    auto r = diff_recordings(*fix, *b, *c, a.baseline, a.candidate);
    if (!r) return fail(r.error(), kExitValidateError);
    if (!render_all(*r, verdict_files(a, std::move(*b), std::move(*c)))) return kExitValidateError;
    return exit_code(r->overall);
}

// On a terminal (stderr), one progress line updated after each trial; else
// one line per trial, for logs.
ValidatorOutcome run_with_progress(ValidatorOptions o) {
    if (!isatty(STDERR_FILENO))
        return run_validator(o, [](const std::string& line) { fmt::print(stderr, "hotline: {}\n", line); });
    ProgressLine line(stderr, colour_wanted(STDERR_FILENO), terminal_width(STDERR_FILENO), monotonic_seconds());
    o.on_trial = [&line](const TrialProgress& p) { line.update(p, monotonic_seconds()); };
    ValidatorOutcome out = run_validator(o, [&line](const std::string& msg) { line.message(msg); });
    line.finish();
    return out;
}
// What the command line names must exist before anything runs: a fix or a
// scenario that does not is bad usage, not an error of the run (a target: the
// collector's check).
std::optional<Error> check_names(const ValidateCli& a) {
    auto cat = load_catalog(a.fixes_dir);
    if (!cat) return cat.error();
    if (!cat->find(a.fix)) return make_error(unknown_name_message("fix", a.fix, cat->names()), EINVAL, "known fixes: " + cat->names());
    if (!a.scenario.name.empty() && !find_scenario(a.scenario.name))
        return make_error(unknown_name_message("scenario", a.scenario.name, scenario_names()), EINVAL,
                          "choose one of " + scenario_names());
    return std::nullopt;
}

// Asks on the terminal; anything but y/yes is no.
bool ask_to_apply(const std::vector<std::string>& lines) {
    if (lines.empty()) return true;
    fmt::print(stderr, "hotline: apply these changes to this host during the fix trials? [y/N] ");
    std::fflush(stderr);
    std::string answer;
    if (!std::getline(std::cin, answer)) return false;
    return answer == "y" || answer == "Y" || answer == "yes";
}

// --live and what goes with it; the usage error when they do not fit together.
std::optional<Error> live_options(const ValidateCli& a, ValidatorOptions& o) {
    if (!a.fix_cpus.empty()) {
        auto c = parse_cpulist(a.fix_cpus);
        if (!c) return c.error();
        if (c->empty()) return make_error("--fix-cpus names no CPU", EINVAL);
        o.fix_cpus = *c;
    }
    const bool live_only = !a.command.empty() || !a.metrics.empty() || !a.observe.empty() || a.yes;
    if (!a.live) {
        if (live_only)
            return make_error("-- COMMAND, --metric, --observe and --yes go with --live", EINVAL,
                              "add --live to validate on this host with your own workload");
        return std::nullopt;
    }
    if (!a.scenario.name.empty())
        return make_error("--live runs your workload, not a scenario", EINVAL, "drop --scenario, or drop --live");
    if (a.command.empty() == a.observe.empty())
        return make_error(a.command.empty() ? "--live needs a workload" : "--observe watches the host instead of a command",
                          EINVAL, "give the command after --, or --observe D to watch the host's own traffic");
    o.live.on = true;
    o.live.traffic.command = a.command;
    for (auto& m : a.metrics) {
        auto om = parse_output_metric(m);
        if (!om) return om.error();
        o.live.traffic.metrics.push_back(*om);
    }
    auto unit = parse_host_ops_unit(a.ops_unit);
    if (!unit) return unit.error();
    o.live.traffic.observe_unit = *unit;
    if (!a.observe.empty()) {
        auto d = parse_duration(a.observe);
        if (!d) return d.error();
        if (*d <= 0) return make_error("--observe must be positive", EINVAL);
        if (o.trial_s) return make_error("--observe is the trial length: drop --duration", EINVAL);
        o.trial_s = *d;
    }
    if (!a.yes && isatty(STDIN_FILENO) && isatty(STDERR_FILENO)) o.live.confirm = ask_to_apply;
    return std::nullopt;
}

}  // namespace

bool ValidateCli::selected() const { return (validate && *validate) || (diff && *diff); }

void add_validate_commands(CLI::App& app, ValidateCli& a) {
    a.validate = app.add_subcommand(
        "validate", fmt::format("Apply a fix in a scenario's namespaces, measure baseline/fix trials (ABAB) and "
                                "decide; exit 0 PASS, 1 FAIL, 2 INCONCLUSIVE, 3 NOT-APPLICABLE, 4 error, {} bad usage",
                                kExitUsage));
    auto* v = a.validate;
    v->add_option("--fix", a.fix, "Fix name (see `hotline fixes list`)")->required();
    v->add_option("--scenario", a.scenario.name, "Scenario (default: the fix's first)");
    v->add_option("--trials", a.trials, fmt::format("Trials per arm before stopping is considered (default {})", a.trials));
    v->add_option("--max-trials", a.max_trials, fmt::format("Trials per arm at most while results are noisy (default {})", a.max_trials));
    const TrialLengthOptions tl;
    v->add_option("-d,--duration", a.duration,
                  fmt::format("Traffic per trial, or auto (the default): {} pilot pairs of {:g}s measure the noise "
                              "and the rest run {:g}..{:g}s as it asks (scenarios without a running count: {:g}s)",
                              kPilotPairs, tl.pilot_s, tl.min_s, tl.max_s, tl.fixed_s));
    v->add_flag("--allow-global", a.allow_global, "Permit machine-wide changes");
    add_irqs_of_option(v, a.irqs_of);
    v->add_option("--fixes", a.fixes_dir, "Also load *.toml fix definitions from DIR");
    v->add_flag("--json", a.json, "Print the verdict as JSON instead of text");
    v->add_option("-o,--output", a.output, "Also write the verdict as JSON to FILE");
    v->add_option("--junit", a.junit_file, "Write the verdict as JUnit XML to FILE");
    v->add_option("--html", a.html_file, "Write the verdict as a self-contained HTML report to FILE");
    v->add_option("--journal-dir", a.journal_dir, fmt::format("Journal directory (default {})", kDefaultJournalDir));
    v->add_option("-t,--targets", a.targets, "Collector targets (comma list); default: all built-in")->delimiter(',');
    add_scenario_options(v, a.scenario, false);
    v->add_option("--fix-cpus", a.fix_cpus, "CPUs a cpu-set placement (the placement fix) confines to (default: the "
                                            "workload's first CPU)");
    v->add_flag("--live", a.live, "Validate on this host: trials run the command after -- (or --observe the host's "
                                  "traffic), the fix's changes go to this host");
    v->add_option("--metric", a.metrics, "With --live and a command: read NAME from its output with REGEX (one "
                                         "group), as NAME=REGEX; a bare REGEX is ops_per_s, the throughput (repeatable)");
    v->add_option("--observe", a.observe, "With --live and no command: trials are windows of D of the host's own traffic");
    v->add_option("--ops", a.ops_unit, "With --observe: what one operation is: connections (default), segments, packets");
    v->add_flag("-y,--yes", a.yes, "With --live: do not ask before changing this host");
    v->add_option("command", a.command, "With --live: the workload to run in each trial (after --)");
    v->footer(examples({"hotline validate --fix numa-local -o verdict.json --junit verdict.xml",
                        "hotline validate --fix early-demux-off --scenario tcp-crr --trials 5 -d 2s",
                        "hotline validate --fix rfs --live --allow-global --metric 'ops_per_s (\\S+)' -- ./loadgen"}));

    a.diff = app.add_subcommand("diff", "Judge a kernel-pair fix between two recordings (baseline kernel first); "
                                        "exit codes as validate");
    a.diff->add_option("baseline", a.baseline, "Recording on the kernel without the fix")->required();
    a.diff->add_option("candidate", a.candidate, "Recording on the kernel with the fix")->required();
    a.diff->add_option("--expect", a.fix, "Fix whose criteria to judge")->required();
    a.diff->add_option("--fixes", a.fixes_dir, "Also load *.toml fix definitions from DIR");
    a.diff->add_flag("--json", a.json, "Print the verdict as JSON instead of text");
    a.diff->add_option("-o,--output", a.output, "Also write the verdict as JSON to FILE");
    a.diff->add_option("--junit", a.junit_file, "Write the verdict as JUnit XML to FILE");
    a.diff->add_option("--html", a.html_file, "Write the verdict and both layouts as a self-contained HTML report to FILE");
    a.diff->footer(examples({"hotline diff old-kernel.json new-kernel.json --expect dst-refcnt-false-sharing",
                             "hotline diff a.json b.json --expect dst-refcnt-false-sharing --json"}));
}

int run_validate_cli(const ValidateCli& a) {
    // Output files are checked before any trial runs, not after.
    for (const std::string* f : {&a.output, &a.junit_file, &a.html_file})
        if (!f->empty())
            if (auto st = check_output_path(*f); !st) return fail(st.error(), kExitUsage);
    if (a.diff && *a.diff) return run_diff(a);
    if (auto e = check_names(a)) return fail(*e, kExitUsage);
    TracingOptions collector;
    collector.targets = a.targets;
    auto setup = check_tracing_options(collector);
    if (!setup) return fail(setup.error(), kExitUsage);
    ValidatorOptions o;
    o.collector = setup->session;
    o.fix = a.fix;
    o.fixes_dir = a.fixes_dir;
    o.allow_global = a.allow_global;
    auto irqs = read_device_irqs(a.irqs_of);
    if (!irqs) return fail(irqs.error(), kExitUsage);
    o.irqs = std::move(*irqs);
    o.journal_dir = a.journal_dir;
    o.owner = own_command_line();
    o.validate.min_each = a.trials;
    o.validate.max_each = std::max(a.max_trials, a.trials);
    if (!a.duration.empty() && a.duration != "auto") {
        auto d = parse_duration(a.duration);
        if (!d) return fail(d.error(), kExitUsage);
        if (*d <= 0) return fail(make_error("--duration must be positive"), kExitUsage);
        o.trial_s = *d;
    }
    if (auto p = check_validate_options(o.validate)) return fail(make_error(*p, EINVAL), kExitUsage);
    // Shape options count with or without --scenario (then for the fix's default scenario).
    auto so = to_scenario_options(a.scenario);
    if (!so) return fail(so.error(), kExitUsage);
    o.scenario = *so;
    if (auto e = live_options(a, o); e) return fail(*e, kExitUsage);
    ValidatorOutcome out = run_with_progress(o);
    if (!out.error.empty()) fmt::print(stderr, "hotline: {}\n", out.error);
    bool wrote = render_all(out.report, verdict_files(a, std::nullopt, std::nullopt));
    if (!wrote && out.exit_code != kExitValidateError) return kExitValidateError;
    return out.exit_code;
}

}  // namespace hotline::cli
