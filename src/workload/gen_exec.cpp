// SPDX-License-Identifier: Apache-2.0
// The exec scenario: the network only.  The command after -- is the traffic;
// this generator watches it until it exits or the duration runs out.
#include <fmt/format.h>

#include "generators.hpp"

namespace hotline::detail {

Result<ScenarioResult> run_exec(GenEnv& env) {
    ScenarioResult r;
    r.scenario = env.opts.name;
    r.generator = "command";
    CpuSample a = sample_cpu(nullptr, env.opts.paths.proc);
    double end = env.opts.duration_s > 0 ? a.wall + env.opts.duration_s : 0;
    r.stop_reason = "stopped";
    while (!env.stop.load()) {
        if (env.command->poll(env.command_status)) {
            r.stop_reason = fmt::format("command exited with status {}", *env.command_status);
            break;
        }
        if (end > 0 && monotonic_seconds() >= end) {
            r.stop_reason = "duration reached";
            break;
        }
        env.sleep_for(0.05);
    }
    CpuSample b = sample_cpu(nullptr, env.opts.paths.proc);
    r.seconds = b.wall - a.wall;
    r.cpu.seconds = r.seconds;
    fill_proc_stat_use(a, b, env.opts.cpus, r.cpu);
    return r;
}

}  // namespace hotline::detail
