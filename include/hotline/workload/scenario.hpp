// SPDX-License-Identifier: Apache-2.0
// One-host reproducers: named scenarios that build a private network, drive
// traffic shaped like an original report, measure it, and clean up.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "hotline/workload/netns.hpp"
#include "hotline/base/result.hpp"

namespace hotline {

// --- latency percentiles -------------------------------------------------------------

// HDR-style log-linear histogram of nanosecond values: exact below 128 ns, then
// 128 linear sub-buckets per power of two, so a reported percentile is within
// 1/256 (0.4%) of a value actually recorded.  Memory is fixed (~7.5K buckets)
// however long a run lasts, and histograms of several threads merge by adding.
class LatencyHistogram {
public:
    static constexpr int kSubBits = 7;
    static constexpr std::uint64_t kSub = 1u << kSubBits;
    static constexpr int kMaxExp = 48;  // values up to 2^48 ns (~3 days)

    LatencyHistogram();
    void record(std::uint64_t ns);
    void merge(const LatencyHistogram& o);
    std::uint64_t count() const { return count_; }
    std::uint64_t min() const { return count_ ? min_ : 0; }
    std::uint64_t max() const { return max_; }
    double mean() const { return count_ ? double(sum_) / double(count_) : 0; }
    // Nearest-rank percentile, p in (0,100]: the value at rank ceil(p/100 * n),
    // reported as its bucket's midpoint clamped to [min, max].
    std::uint64_t percentile(double p) const;

    static std::size_t bucket_of(std::uint64_t v);
    static std::uint64_t bucket_low(std::size_t idx);
    static std::uint64_t bucket_width(std::size_t idx);

private:
    std::vector<std::uint64_t> buckets_;
    std::uint64_t count_ = 0, sum_ = 0, min_ = UINT64_MAX, max_ = 0;
};

// --- CPU accounting ---------------------------------------------------------------------

// One /proc/stat "cpuN" line, in USER_HZ ticks.
struct CpuTicks {
    std::uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
    std::uint64_t total() const { return user + nice + system + idle + iowait + irq + softirq + steal; }
    std::uint64_t busy() const { return total() - idle - iowait; }
};
// cpu -> ticks, from the text of /proc/stat (the aggregate "cpu" line is skipped).
Result<std::map<int, CpuTicks>> parse_proc_stat(std::string_view text);

struct CpuUse {
    double seconds = 0;
    double sender_pct = 0;    // CPU time of the sending/client threads / wall time; 100 = one CPU
    double receiver_pct = 0;  // same for the receiving/server threads
    std::vector<int> cpus;    // the CPUs /proc/stat was read for
    double busy_pct = 0;      // /proc/stat: non-idle share of those CPUs, 0..100
    double softirq_pct = 0;   // of which softirq (where veth and loopback receive)
    bool threads_measured = false;
};

// --- results ---------------------------------------------------------------------------

struct LatencyPoint {
    std::uint64_t msg_size = 0;
    std::uint64_t exchanges = 0;  // request/response round trips
    double seconds = 0;
    double rate_per_s = 0;        // round trips per second
    double one_way_ns = 0;        // half the mean round trip: qperf's "latency"
    bool has_percentiles = false; // false for qperf, which reports a mean only
    double rtt_mean_ns = 0, rtt_min_ns = 0, rtt_max_ns = 0;
    double p50_ns = 0, p90_ns = 0, p99_ns = 0, p999_ns = 0;  // of the round trip
};

struct ScenarioResult {
    std::string scenario;   // dst-refcount, tcp-crr, irq-lat, qperf, exec
    std::string generator;  // built-in, qperf, command
    nlohmann::json params;  // everything that shaped the traffic
    nlohmann::json network; // mode, namespaces, addresses, sysctls set inside them
    double seconds = 0;     // measured window
    std::string stop_reason;
    // throughput (dst-refcount, qperf tcp_bw)
    std::uint64_t messages = 0;
    std::uint64_t bytes = 0;
    double messages_per_s = 0;
    double mbit_per_s = 0;
    // connection churn (tcp-crr)
    std::uint64_t connections = 0;
    double connections_per_s = 0;
    // single connections that met a reset, a refusal or a timeout: counted, not fatal
    std::uint64_t connection_resets = 0, connection_refusals = 0, connection_timeouts = 0;
    // latency sweep (irq-lat, qperf tcp_lat)
    std::vector<LatencyPoint> latency;
    CpuUse cpu;
    std::optional<int> command_status;  // the external command's exit status
    std::vector<std::string> notes;
};

nlohmann::json to_json(const ScenarioResult& r);
void render_scenario_text(std::ostream& os, const ScenarioResult& r);

// --- qperf ---------------------------------------------------------------------------------

// Parses qperf's output (any -v/-uu/-ub combination) into per-test blocks of
// name -> value in base units (ns, bytes, bits/sec, 1/sec, percent).
struct QperfBlock {
    std::string test;  // tcp_lat, tcp_bw, ...
    std::map<std::string, double> values;
};
Result<std::vector<QperfBlock>> parse_qperf_output(std::string_view text);
// Fills latency points or throughput from parsed blocks.
Status apply_qperf_blocks(const std::vector<QperfBlock>& blocks, ScenarioResult& r);

// --- options ----------------------------------------------------------------------------------

inline constexpr double kDefaultScenarioDurationS = 10;      // traffic that is not a size sweep
inline constexpr std::string_view kDefaultMsgSizes = "4K:1M:*2";  // qperf tcp_lat's sweep in the second report

struct ScenarioOptions {
    std::string name;
    double duration_s = 0;             // total traffic time; 0: the scenario's default
    std::vector<int> cpus;             // empty: every CPU this process may use
    int flows_per_cpu = 0;             // 0: the scenario's default (its registry entry)
    int msg_size = 0;                  // 0: the scenario's default (its registry entry)
    int sockbuf = 64 * 1024;           // sender SO_SNDBUF/SO_RCVBUF (netperf -s 64K)
    std::vector<std::uint64_t> msg_sizes;  // size sweep; empty: kDefaultMsgSizes
    bool loopback = false;
    // Each CPU's flows on their own address pair (ScenarioDef::per_cpu_routes);
    // set per run by begin_run.
    bool per_cpu_routes = false;
    bool nodelay = false;              // latency sweep: qperf leaves Nagle on, and so do we by default
    bool shared_listener = false;      // one listening socket every server accepts from
    std::string qperf_test = "tcp_lat";
    std::vector<std::string> command;         // runs in the client namespace
    std::vector<std::string> server_command;  // runs in the server namespace (exec scenario)
    NetPaths paths;
};

// --- the scenario registry ----------------------------------------------------------------------

namespace detail {
struct GenEnv;
struct PrepareEnv;
}  // namespace detail

// The shape options a scenario's traffic reads (bits of ScenarioDef::options).
// Reading one puts it into the result's "params"; kOptMsgSizes makes the
// traffic a size sweep (1 s per size by default).
enum ShapeOption : unsigned {
    kOptFlowsPerCpu = 1u << 0,  // --flows-per-cpu
    kOptMsgSize = 1u << 1,      // --msg-size
    kOptMsgSizes = 1u << 2,     // --msg-sizes
    kOptSockbuf = 1u << 3,      // --sockbuf
    kOptNodelay = 1u << 4,      // --nodelay
    kOptQperfTest = 1u << 5,    // --qperf-test
    kOptSharedListener = 1u << 6,  // --shared-listener
};
inline constexpr unsigned kAllShapeOptions = (1u << 7) - 1;

// One operation of a scenario: the unit of validate's scenario.ops_per_s and
// of record's per-interval operation counts.
enum class OpsUnit {
    kNone,                  // the traffic is a command hotline does not count
    kMessages,              // writes completed by the senders
    kConnections,           // connect, request, response, close cycles
    kExchanges,             // request/response round trips of a size sweep
    kExchangesOrMessages,   // round trips when the result is a sweep, else messages
};

// One named scenario: a registry entry.  Adding a scenario is an entry in
// src/workload/registry.cpp plus its generator file (src/workload/gen_*.cpp).
struct ScenarioDef {
    std::string_view name;
    std::string_view summary;  // one line for `hotline scenario list`
    unsigned options = 0;      // ShapeOption bits the traffic may read
    // When the options read depend on another option (qperf: on its test):
    // the subset read for these options.  Empty: always `options`.
    unsigned (*options_read)(const ScenarioOptions&) = nullptr;
    int flows_per_cpu = 1;     // defaults, within the ranges of shape_option_ranges()
    int msg_size = 64;
    bool always_nodelay = false;      // every socket sets TCP_NODELAY (recorded in params)
    OpsUnit ops = OpsUnit::kNone;
    bool live_ops = false;            // the generator publishes a running total (Scenario::ops_so_far)
    // A run may give each CPU's flows their own address pair (both ends on that
    // CPU): the placement that keeps every route on one CPU.
    bool per_cpu_routes = false;
    // The command after -- is the traffic: required, runs once (no repeated
    // runs, so no validator trials), and its exit status is the run's.
    bool command_is_traffic = false;
    // Checks of this scenario's own options, after the common ones and defaults.
    Status (*check)(const ScenarioOptions&) = nullptr;
    // Network set-up beyond the namespaces (sysctls, a server process), before
    // any other process starts.
    Status (*prepare)(detail::PrepareEnv&) = nullptr;
    // The traffic generator: runs in the scenario's coordinator thread.
    Result<ScenarioResult> (*run)(detail::GenEnv&) = nullptr;
};

const std::vector<ScenarioDef>& scenario_registry();
const ScenarioDef* find_scenario(std::string_view name);
std::string scenario_names();  // "dst-refcount, tcp-crr, ..."
// What is missing or wrong in registry entries, one line each ("NAME: no
// summary"); empty when every entry is complete.  A unit test runs it on
// scenario_registry().
std::vector<std::string> scenario_registry_problems(const std::vector<ScenarioDef>& entries);

// The range every value (and every registry default) of a numeric shape option must be in.
struct ShapeOptionRange {
    ShapeOption option;
    std::string_view flag;  // "--msg-size"
    long min, max;
    std::string_view hint;  // "use 1 to 1M bytes"
};
const std::vector<ShapeOptionRange>& shape_option_ranges();

// "dst-refcount 3, tcp-crr 1": the registry default of kOptFlowsPerCpu or
// kOptMsgSize for every scenario that reads it.
std::string registry_defaults(ShapeOption option);
// "irq-lat, qperf": the scenarios that may read an option.
std::string scenarios_reading(ShapeOption option);

// The options `o.name`'s traffic reads with these options (0 for an unknown name).
unsigned shape_options_read(const ScenarioOptions& o);

// A result's operations in its scenario's unit (see OpsUnit).
double scenario_ops(const ScenarioResult& r);

// "4K:1M:*2" (qperf's min:max:*factor) or "4K,64K,1M"; K/M/G are powers of 1024.
Result<std::vector<std::uint64_t>> parse_size_list(std::string_view text);
std::string format_size(std::uint64_t bytes);

// Checks and completes options against the CPUs this process may use.
Status resolve_scenario_options(ScenarioOptions& o, const std::vector<int>& usable_cpus);
// CPUs in this process's affinity mask.
std::vector<int> usable_cpus();

// Progress text for a long run, e.g. "irq-lat: 64K (5/9)".
using ProgressFn = std::function<void(const std::string&)>;

// A running scenario.  start() builds the network and starts the traffic in the
// background; stop() ends it, collects the result and removes the network.
class Scenario {
public:
    static Result<std::unique_ptr<Scenario>> start(ScenarioOptions opts, ProgressFn progress = {});
    // Builds the network (and any server) without starting traffic, so one
    // network serves many runs: begin_run() / done() / end_run() per run, then
    // stop() tears it down.  Built-in generators and qperf only (not exec).
    static Result<std::unique_ptr<Scenario>> prepare(ScenarioOptions opts, ProgressFn progress = {});
    // Starts one run of the traffic on `cpus` (empty: the options' CPUs), with
    // per-CPU address pairs when `per_cpu_routes` (scenarios whose entry allows it),
    // for `duration_s` (0: the options' duration; others only for scenarios with
    // live_ops, whose generators run for any time).
    Status begin_run(const std::vector<int>& cpus = {}, bool per_cpu_routes = false, double duration_s = 0);
    // Ends the current run (early if still going) and returns what it measured;
    // the network stays up.
    Result<ScenarioResult> end_run();
    ~Scenario();
    Scenario(const Scenario&) = delete;
    Scenario& operator=(const Scenario&) = delete;

    // True once the traffic ended by itself (duration, sweep done, command exited).
    bool done() const;
    // Operations of the current run so far, read live from the generator's
    // counters (messages for dst-refcount, connections for tcp-crr; 0 before the
    // traffic starts, the final count after it ends).  nullopt for scenarios
    // whose operations are only known at the end (irq-lat, qperf, a command).
    std::optional<std::uint64_t> ops_so_far() const;
    // Stops the traffic, tears the network down and returns what was measured.
    Result<ScenarioResult> stop();
    const ScenarioOptions& options() const;
    const Network& network() const;
    nlohmann::json params() const;

    struct Impl;

private:
    explicit Scenario(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

// Runs a scenario to its end in the calling thread, stopping early on SIGINT,
// SIGTERM or SIGHUP (blocked in the caller while it runs, so every exit path
// removes the network).  *signalled receives the signal number, 0 if none.
Result<ScenarioResult> run_scenario(ScenarioOptions opts, ProgressFn progress, int* signalled = nullptr);

}  // namespace hotline
