// The subcommands' arguments and entry points.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace hotline::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitNothingObservable = 3;

struct ProbeArgs {
    bool json = false;
    std::vector<std::string> targets;
    std::vector<std::string> funcs;
    std::string mechanism;
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
    int sample_freq = 999;
    bool no_latency = false;
    bool quiet = false;
    std::vector<std::string> funcs;
    bool no_handoffs = false;
    int handoff_sample = 1;
    unsigned owner_map_size = 16384;
    int top = 10;
    bool no_workq = false;
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
    std::string journal_dir = "/var/lib/hotline";
    std::string duration;
    bool selected() const;
};
void add_fixes_commands(CLI::App& app, FixesCli& f);
int run_fixes(const FixesCli& f);

int run_probe(const ProbeArgs& a);
int run_record(const RecordArgs& a);

}  // namespace hotline::cli
