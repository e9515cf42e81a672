// The subcommands' arguments and entry points.
#pragma once

#include <string>
#include <vector>

namespace hotline::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitNothingObservable = 3;
inline constexpr int kExitBudget = 4;  // `cost --strict`: a program is over its budget

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

struct CostArgs {
    std::string duration = "5s";
    std::vector<std::string> targets;
    std::vector<std::string> funcs;
    std::string mechanism;
    std::string workload = "churn";
    bool json = false;
    bool strict = false;
    std::vector<std::string> command;
};

struct ServeArgs {
    std::string config;
    std::string listen;
    bool check_config = false;
    bool strict = false;
};

int run_probe(const ProbeArgs& a);
int run_cost(const CostArgs& a);
int run_record(const RecordArgs& a);
int run_serve(const ServeArgs& a);  // src/daemon/serve.cpp

}  // namespace hotline::cli
