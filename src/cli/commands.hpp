// SPDX-License-Identifier: Apache-2.0
// The subcommands' arguments and entry points.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <initializer_list>
#include <optional>

#include "hotline/model/exit_codes.hpp"
#include "hotline/fix/journal.hpp"
#include "hotline/model/mechanism.hpp"
#include "hotline/base/result.hpp"
#include "hotline/workload/scenario.hpp"
#include "hotline/session/tracing.hpp"
#include "hotline/base/util.hpp"
#include "hotline/validate/validator.hpp"

namespace CLI {
class App;
class ParseError;
}
namespace hotline {
struct HtmlInput;
}

namespace hotline::cli {

using hotline::kExitBudget;
using hotline::kExitError;
using hotline::kExitNothingObservable;
using hotline::kExitOk;
using hotline::kExitNotApplicable;
using hotline::kExitUsage;

// `hotline help [COMMAND...]` and the usage errors (src/cli/help_command.cpp).
struct HelpArgs {
    CLI::App* help = nullptr;
    std::vector<std::string> words;
};
void add_help_command(CLI::App& app, HelpArgs& h);
int run_help(CLI::App& app, const HelpArgs& h);
// `hotline __complete WORD...` for the shell completion (src/cli/complete_command.cpp).
struct CompleteArgs {
    CLI::App* complete = nullptr;
};
void add_complete_command(CLI::App& app, CompleteArgs& c);
int run_complete(CLI::App& app, const CompleteArgs& c);
// The exit status table for the top-level help (and so the man page).
std::string exit_status_help();
// The "Examples:" footer of a subcommand's --help.
std::string examples(std::initializer_list<const char*> lines);
// Before parsing: a word where a subcommand must stand that names none is
// reported with the closest name; the exit status then, else nullopt.
std::optional<int> check_subcommand_words(CLI::App& app, int argc, char** argv);
// The subcommand the words before "--" name (the app itself when none).
CLI::App* named_subcommand(CLI::App& app, int argc, char** argv);

struct ProbeArgs {
    bool json = false;
    std::vector<std::string> targets;
    std::vector<std::string> funcs;
    std::string mechanism;
};

// Options shared by `scenario run` and `record --scenario`.
struct ScenarioArgs {
    std::string name;
    std::string duration;
    std::string cpus;
    std::string msg_sizes;
    // The options bound as they are (flows per CPU, message size, socket
    // buffers, loopback, nodelay, qperf test), with the library's defaults.
    ScenarioOptions shape;
    std::string server_command;
    bool json = false;
    std::string output;
    std::vector<std::string> command;
};

// `record`'s and live `diagnose`'s options: the engine's (tracing) and what
// the front end prints.
struct RecordArgs {
    TracingOptions tracing = [] {
        TracingOptions t;
        t.handoff_share = kRecordHandoffShare;
        return t;
    }();
    ScenarioArgs scenario;  // scenario.name empty: none
    bool per_cpu = false;
    bool json = false;  // the recording on stdout, the tables on stderr
    std::string output;
    std::string html;
    bool quiet = false;
    int top = 10;
    bool no_findings = false;
    bool summary = true;  // the summary tables (diagnose records without them)
};
// Findings `record` and `discover` end with, one line each.
inline constexpr std::size_t kRecordFindings = 3;
// The top kRecordFindings findings of a recording just made, on stdout.
void print_recording_findings(const nlohmann::json& doc);
// A recording with its findings in analysis.diagnosis.findings, for its page
// (the saved document keeps the rules' inputs, not their judgement); any other
// document as it is.
nlohmann::json recording_with_findings(nlohmann::json doc);

struct CostArgs {
    std::string duration = "5s";
    std::vector<std::string> targets;
    std::vector<std::string> funcs;
    std::string mechanism;
    std::string workload = "churn+pty";
    bool json = false;
    bool strict = false;
    std::vector<std::string> command;
};

// `hotline fixes list|show|apply` and `hotline restore` (src/cli/fixes_command.cpp).
struct FixesCli {
    CLI::App* fixes = nullptr;
    CLI::App* list = nullptr;
    CLI::App* show = nullptr;
    CLI::App* apply = nullptr;
    CLI::App* restore = nullptr;
    std::string fixes_dir;
    bool json = false;
    std::string name;
    std::vector<std::string> netns;
    bool allow_global = false;
    std::vector<std::string> irqs_of;  // device names whose IRQs an irq_affinity change pins
    std::string journal_dir = kDefaultJournalDir;
    std::string duration;
    bool selected() const;
};
void add_fixes_commands(CLI::App& app, FixesCli& f);
// --irqs-of NAME (repeatable), on `fixes apply` and `validate`.
void add_irqs_of_option(CLI::App* app, std::vector<std::string>& names);
int run_fixes(const FixesCli& f);

// `hotline validate` and `hotline diff` (src/cli/validate_command.cpp).
struct ValidateCli {
    CLI::App* validate = nullptr;
    CLI::App* diff = nullptr;
    std::string fix;
    ScenarioArgs scenario;
    int trials = ValidateOptions{}.min_each;
    int max_trials = ValidateOptions{}.max_each;
    std::string duration;
    bool allow_global = false;
    std::vector<std::string> irqs_of;
    std::string fixes_dir;
    bool json = false;    // the verdict as JSON on stdout
    std::string output;   // the verdict as JSON to this file
    std::string junit_file;
    std::string html_file;
    std::string journal_dir = kDefaultJournalDir;
    std::vector<std::string> targets;
    std::string baseline, candidate;  // diff
    // validate --live
    bool live = false;
    std::vector<std::string> metrics;  // --metric NAME=REGEX | REGEX
    std::string observe;               // --observe D
    std::string ops_unit = "connections";
    bool yes = false;
    std::string fix_cpus;
    std::vector<std::string> command;  // after --
    bool selected() const;
};
void add_validate_commands(CLI::App& app, ValidateCli& a);
int run_validate_cli(const ValidateCli& a);

// `hotline report` and every `--html FILE` (src/cli/report_command.cpp).
struct ReportArgs {
    CLI::App* app = nullptr;
    std::string input;
    std::string output;
};
void add_report_command(CLI::App& app, ReportArgs& a);
int run_report(const ReportArgs& a);
// Writes the page of `in` to `file` (nothing when file is empty); false after
// saying why it could not.
bool write_html(const std::string& file, const HtmlInput& in);
// A JSON file, or an error naming the file and what is wrong with it.
Result<nlohmann::json> load_json(const std::string& path);

// A parse error: CLI11's message and kExitUsage (0 for --help and --version).
int usage_error(CLI::App& app, const CLI::ParseError& e, int argc, char** argv);
// Each text option's value named by what it is (FILE, DIR, DURATION, ...), for
// the usage lines and the man pages; called once every command is added.
void name_metavariables(CLI::App& app);

int run_probe(const ProbeArgs& a);
int run_cost(const CostArgs& a);
// doc_out, when given, receives the recording's document (also without --output).
int run_record(const RecordArgs& a, nlohmann::json* doc_out = nullptr);
// record's options, bound on `record` and on `diagnose` (which records live without a file).
void add_record_options(CLI::App* r, RecordArgs& rec);

// `hotline diagnose` (src/cli/diagnose_command.cpp).
struct DiagnoseCli {
    CLI::App* diagnose = nullptr;
    std::string recording;  // empty: record live first
    std::string fixes_dir;
    bool json = false;
    std::string output, html;  // the findings as JSON, as an HTML page
    RecordArgs record;
};
void add_diagnose_command(CLI::App& app, DiagnoseCli& d);

// `hotline discover` (src/cli/discover_command.cpp).
struct DiscoverCli {
    CLI::App* discover = nullptr;
    TracingOptions tracing;
    ScenarioArgs scenario;  // scenario.name empty: none
    DiscoverOptions options;
    int top = 10;
    bool json = false;
    std::string output, html;
};
void add_discover_command(CLI::App& app, DiscoverCli& d);
int run_discover(const DiscoverCli& d);
int run_diagnose(const DiagnoseCli& d);
int run_scenario_list(bool json);
int run_scenario_run(const ScenarioArgs& a);

}  // namespace hotline::cli

namespace hotline::cli {
// Adds the scenario shape options to a subcommand (duration only when asked).
void add_scenario_options(CLI::App* app, ScenarioArgs& a, bool with_duration);
// Checks the arguments and turns them into library options, resolved against the
// usable CPUs when a.name is set and `resolve` (the record engine resolves its own).
hotline::Result<hotline::ScenarioOptions> to_scenario_options(const ScenarioArgs& a, bool resolve = true);
}  // namespace hotline::cli

namespace hotline::cli {
// `hotline vm` and `hotline ab` (src/cli/vm_command.cpp, src/cli/ab_command.cpp): the guest's
// shape and kernel, booted by the vm layer (src/vm/).
struct VmOptions {
    std::string kernel = "debian:6.12";
    std::string modules;  // modules directory of a kernel given as an image file
    int nodes = 2;
    int cpus = 4;
    std::string memory = "1G";
    std::string timeout = "10m";
    bool console = false;
};

struct VmCli {
    CLI::App* vm = nullptr;
    CLI::App* ab = nullptr;
    VmOptions guest;
    std::string keep;
    std::vector<std::string> scripts;
    std::vector<std::string> args;  // the hotline command line after --
    // ab
    std::string fix, baseline, candidate, baseline_modules, candidate_modules;
    std::string duration = "3s";
    std::vector<std::string> targets;
    std::string fixes_dir, output, junit_file, html_file;
    bool json = false;  // the verdict as JSON on stdout
    bool selected() const;
};
void add_vm_commands(CLI::App& app, VmCli& v);
int run_vm_cli(const VmCli& v);
int run_ab(const VmCli& v);

// One guest run of a request built from the options (src/vm/): the command's
// exit status, kExitUsage, kExitVmGuestFailed or kExitInterrupted, the error
// printed.  stdout_to_stderr: the inner command's output is progress, not the result.
int run_guest_cli(const VmOptions& o, const std::string& keep, const std::vector<std::string>& scripts,
                  const std::vector<std::string>& args, bool stdout_to_stderr);
// Where one verdict goes: its text (in colour on a terminal) or JSON on stdout;
// JSON, JUnit and HTML files when named; a diff's recordings feed the page.
struct VerdictFiles {
    std::string json, junit, html;
    bool print_json = false;  // --json: the verdict as JSON on stdout instead of text
    std::optional<nlohmann::json> baseline, candidate;
};
// (src/cli/validate_command.cpp) false when a file could not be written.
bool render_all(VerdictReport& r, const VerdictFiles& out);
}  // namespace hotline::cli
