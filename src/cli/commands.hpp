// The subcommands' arguments and entry points.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <optional>

#include "hotline/exit_codes.hpp"
#include "hotline/journal.hpp"
#include "hotline/mechanism.hpp"
#include "hotline/result.hpp"
#include "hotline/scenario.hpp"
#include "hotline/session.hpp"
#include "hotline/util.hpp"
#include "hotline/validator.hpp"

namespace CLI {
class App;
}

namespace hotline::cli {

using hotline::kExitBudget;
using hotline::kExitError;
using hotline::kExitNothingObservable;
using hotline::kExitOk;
using hotline::kExitUsage;

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

struct RecordArgs {
    std::string duration;
    std::string interval = "1s";
    std::vector<std::string> targets;
    bool per_cpu = false;
    std::string output;
    std::string mechanism;
    std::string workload = "none";
    std::string workload_cpus;
    int sample_freq = SessionOptions{}.sample_freq;
    bool no_latency = false;
    bool quiet = false;
    std::vector<std::string> funcs;
    bool no_handoffs = false;
    int handoff_sample = 1;
    unsigned owner_map_size = SessionOptions{}.owner_capacity;
    int top = 10;
    bool no_workq = false;
    std::vector<std::string> command;
    ScenarioArgs scenario;  // scenario.name empty: none
    bool no_findings = false;
    bool summary = true;  // the summary tables (diagnose records without them)
};
// Findings `record` ends with, one line each.
inline constexpr std::size_t kRecordFindings = 3;

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

// `hotline fixes list|show|apply` and `hotline restore` (src/cli/fixes.cpp).
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
    std::string journal_dir = kDefaultJournalDir;
    std::string duration;
    bool selected() const;
};
void add_fixes_commands(CLI::App& app, FixesCli& f);
int run_fixes(const FixesCli& f);

// `hotline validate` and `hotline diff` (src/cli/validate.cpp).
struct ValidateCli {
    CLI::App* validate = nullptr;
    CLI::App* diff = nullptr;
    std::string fix;
    ScenarioArgs scenario;
    int trials = ValidateOptions{}.min_each;
    int max_trials = ValidateOptions{}.max_each;
    std::string duration;
    bool allow_global = false;
    std::string fixes_dir;
    std::string json_file;
    std::string junit_file;
    std::string journal_dir = kDefaultJournalDir;
    std::vector<std::string> targets;
    std::string baseline, candidate;  // diff
    bool selected() const;
};
void add_validate_commands(CLI::App& app, ValidateCli& a);
int run_validate_cli(const ValidateCli& a);

// --mechanism, --targets and --func checked together: the forced mechanism, if any.
Result<std::optional<Mechanism>> check_target_args(const std::string& mechanism,
                                                   const std::vector<std::string>& targets,
                                                   const std::vector<std::string>& funcs);

int run_probe(const ProbeArgs& a);
int run_cost(const CostArgs& a);
// doc_out, when given, receives the recording's document (also without --output).
int run_record(const RecordArgs& a, nlohmann::json* doc_out = nullptr);
// record's options, bound on `record` and on `diagnose` (which records live without a file).
void add_record_options(CLI::App* r, RecordArgs& rec);

// `hotline diagnose` (src/cli/diagnose.cpp).
struct DiagnoseCli {
    CLI::App* diagnose = nullptr;
    std::string recording;  // empty: record live first
    std::string fixes_dir;
    bool json = false;
    RecordArgs record;
};
void add_diagnose_command(CLI::App& app, DiagnoseCli& d);
int run_diagnose(const DiagnoseCli& d);
int run_scenario_list(bool json);
int run_scenario_run(const ScenarioArgs& a);

}  // namespace hotline::cli

namespace hotline::cli {
// Adds the scenario shape options to a subcommand (duration only when asked).
void add_scenario_options(CLI::App* app, ScenarioArgs& a, bool with_duration);
// Checks the arguments and turns them into library options (resolved against the
// usable CPUs when a.name is set).
hotline::Result<hotline::ScenarioOptions> to_scenario_options(const ScenarioArgs& a);
}  // namespace hotline::cli
