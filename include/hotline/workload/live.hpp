// SPDX-License-Identifier: Apache-2.0
// Traffic hotline does not generate (`validate --live`): the user's own command,
// run once or repeatedly per trial, or a window of the host's own traffic.
// Operations come from the command's output (a regular expression), from its
// runs, or from the kernel's counters; CPU from /proc/stat for the whole host.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hotline/base/result.hpp"

namespace hotline {

// One number read from the command's output: the first group of the last
// match of `pattern` (ECMAScript) in stdout, then stderr.
struct OutputMetric {
    std::string name;     // "ops_per_s" is the throughput; others become scenario.<name>
    std::string pattern;  // e.g. "ops_per_s (\\S+)"
};
inline constexpr std::string_view kThroughputMetric = "ops_per_s";

// "NAME=REGEX", or a bare REGEX for the throughput; the regex must compile and
// hold one capture group.
Result<OutputMetric> parse_output_metric(std::string_view arg);
// The value of `m` in `text` (its last match); an error naming the metric and
// quoting the output's tail when it does not match or is not a number.
Result<double> read_output_metric(const OutputMetric& m, std::string_view text);

// What an observed window counts as one operation.
enum class HostOpsUnit { kConnections, kSegments, kPackets };
Result<HostOpsUnit> parse_host_ops_unit(std::string_view s);
std::string_view to_string(HostOpsUnit u);
// The kernel's running total of `u` in this network namespace: TCP
// ActiveOpens + PassiveOpens, TCP InSegs (/proc/net/snmp), received packets
// of every device (/proc/net/dev).
Result<std::uint64_t> read_host_ops(HostOpsUnit u, const std::string& proc_root = "/proc");
// Parsers of the two files, for tests.
Result<std::map<std::string, std::uint64_t>> parse_snmp_tcp(std::string_view text);
Result<std::uint64_t> parse_netdev_rx_packets(std::string_view text);
// Busy time of every CPU in /proc/stat (all but idle and iowait), in seconds.
Result<double> read_host_busy_seconds(const std::string& proc_root = "/proc");

struct LiveOptions {
    std::vector<std::string> command;   // empty: observe the host's traffic
    std::vector<OutputMetric> metrics;  // read from each run's output
    HostOpsUnit observe_unit = HostOpsUnit::kConnections;
    std::string proc_root = "/proc";
    // The command prints its own throughput: a trial is one run of it.
    bool reads_throughput() const;
};

// One trial's numbers.
struct LiveRun {
    double seconds = 0;      // wall time of the trial's traffic (of its run, with a throughput metric)
    double ops = 0;
    double cpu_seconds = 0;  // every CPU's busy time over the trial
    int runs = 0;            // command runs in the trial
    std::map<std::string, double> extra;  // the other output metrics
};

// The traffic of `validate --live`.  Per trial: begin(), poll done() until it
// is true (or the trial is cut short), end().
//   - command with an ops_per_s metric: one run per trial, ops = the metric x
//     the run's wall time;
//   - command without it: runs back to back until `length_s` has passed,
//     ops = runs;
//   - no command: a `length_s` window, ops from the kernel's counters.
// A run that exits non-zero, or whose metric cannot be read, makes end() fail
// with its stderr's tail.  Runs are killed with hotline (PR_SET_PDEATHSIG).
class LiveTraffic {
public:
    static Result<std::unique_ptr<LiveTraffic>> create(LiveOptions opts);
    ~LiveTraffic();
    LiveTraffic(const LiveTraffic&) = delete;
    LiveTraffic& operator=(const LiveTraffic&) = delete;

    // Starts a trial; the command's runs get `cpus` as their affinity and their
    // memory from `mem_nodes` (empty: ours).
    Status begin(const std::vector<int>& cpus, double length_s, const std::vector<int>& mem_nodes = {});
    bool done();
    // Ends the trial (killing a run still going) and returns its numbers.
    Result<LiveRun> end();
    // What one operation is here, for the verdict ("connections (TCP opens)").
    std::string ops_source() const;
    nlohmann::json params() const;
    const LiveOptions& options() const { return opts_; }

    struct Run;

private:
    explicit LiveTraffic(LiveOptions o);
    Status start_run();
    Status finish_run();  // after the run exited: its status and metrics
    LiveOptions opts_;
    std::unique_ptr<Run> run_;
    std::vector<int> cpus_;
    std::vector<int> mem_nodes_;
    std::chrono::steady_clock::time_point started_;
    double length_s_ = 0;
    std::uint64_t ops_before_ = 0;
    double busy_before_ = 0;
    double runs_seconds_ = 0;  // wall time of the trial's runs that printed a throughput
    LiveRun current_;
    std::optional<Error> failed_;
};

}  // namespace hotline
