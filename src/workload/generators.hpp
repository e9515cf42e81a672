// Internal: the traffic generators behind the named scenarios.  Each runs in the
// scenario's coordinator thread until its duration ends or a stop is requested.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>

#include "hotline/netns.hpp"
#include "hotline/scenario.hpp"
#include "hotline/workload.hpp"

namespace hotline::detail {

struct GenEnv {
    const ScenarioOptions& opts;
    const Network& net;
    const std::atomic<bool>& stop;               // set by Scenario::stop()
    const ProgressFn& progress;                  // may be empty
    std::function<bool(double)> sleep_for;       // false when woken by a stop
    // Publishes the generator's running operation total (empty: withdraw it, with
    // its last value kept); the callable must stay valid until withdrawn.
    std::function<void(std::function<std::uint64_t()>)> publish_ops;
};

// Publishes a running total for the life of a generator's counters.
class LiveOps {
public:
    LiveOps(GenEnv& env, std::function<std::uint64_t()> total) : env_(env) {
        if (env_.publish_ops) env_.publish_ops(std::move(total));
    }
    ~LiveOps() {
        if (env_.publish_ops) env_.publish_ops({});
    }
    LiveOps(const LiveOps&) = delete;
    LiveOps& operator=(const LiveOps&) = delete;

private:
    GenEnv& env_;
};

Result<ScenarioResult> run_dst_refcount(GenEnv& env);
Result<ScenarioResult> run_tcp_crr(GenEnv& env);
Result<ScenarioResult> run_irq_lat(GenEnv& env);
// The client half of the qperf adapter; the server runs for the whole scenario.
Result<ScenarioResult> run_qperf_client(GenEnv& env, pid_t server_pid);
// The exec scenario: only watches the command until it exits or time runs out.
Result<ScenarioResult> run_command_watch(GenEnv& env, ChildProcess& command, int* status);

// CPU seconds (user+system, own and reaped children) of a process, from
// <proc>/<pid>/stat; nullopt when it is gone.
std::optional<double> process_cpu_seconds(const std::string& proc_root, pid_t pid);

inline constexpr int kQperfPort = 19765;

}  // namespace hotline::detail
