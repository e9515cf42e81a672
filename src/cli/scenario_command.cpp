// SPDX-License-Identifier: Apache-2.0
// `hotline scenario list|run`: argument checking and printing around the
// library's scenarios.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <iostream>

#include "commands.hpp"
#include "hotline/kernel/kernel.hpp"
#include "hotline/report/output.hpp"
#include "hotline/workload/scenario.hpp"
#include "hotline/base/util.hpp"

namespace hotline::cli {

void add_scenario_options(CLI::App* app, ScenarioArgs& a, bool with_duration) {
    ScenarioOptions& s = a.shape;
    if (with_duration)
        app->add_option("-d,--duration", a.duration,
                        fmt::format("Traffic time in total (default {}s; a size sweep: 1s per message size)",
                                    kDefaultScenarioDurationS));
    app->add_option("--cpus", a.cpus, "CPUs to pin workers to, e.g. 0-3 (default: all usable)");
    app->add_option("--flows-per-cpu", s.flows_per_cpu,
                    fmt::format("Flows per CPU (default: {})", registry_defaults(kOptFlowsPerCpu)));
    app->add_option("--msg-size", s.msg_size,
                    fmt::format("Message size in bytes (default: {})", registry_defaults(kOptMsgSize)));
    app->add_option("--msg-sizes", a.msg_sizes,
                    fmt::format("Size sweep: MIN:MAX:*F or a list (default {}; read by: {})", kDefaultMsgSizes,
                                scenarios_reading(kOptMsgSizes)));
    app->add_option("--sockbuf", s.sockbuf,
                    fmt::format("Sender socket buffers in bytes (default {}; read by: {})", s.sockbuf,
                                scenarios_reading(kOptSockbuf)));
    app->add_flag("--loopback", s.loopback, "One namespace and its loopback instead of a veth pair");
    app->add_flag("--nodelay", s.nodelay,
                  fmt::format("Set TCP_NODELAY, which qperf leaves off (read by: {})", scenarios_reading(kOptNodelay)));
    app->add_option("--qperf-test", s.qperf_test,
                    fmt::format("tcp_lat or tcp_bw (default {}; read by: {})", s.qperf_test,
                                scenarios_reading(kOptQperfTest)));
    app->add_flag("--shared-listener", s.shared_listener,
                  fmt::format("One listening socket every server accepts from, as a server without SO_REUSEPORT "
                              "(read by: {})",
                              scenarios_reading(kOptSharedListener)));
    app->add_option("--server-command", a.server_command, "Shell command to run in the server namespace (sh -c)");
}

Result<ScenarioOptions> to_scenario_options(const ScenarioArgs& a, bool resolve) {
    ScenarioOptions o = a.shape;
    o.name = a.name;
    if (!a.duration.empty()) {
        auto d = parse_duration(a.duration);
        if (!d) return d.error();
        if (*d <= 0) return make_error("--duration must be positive", EINVAL);
        o.duration_s = *d;
    }
    if (!a.cpus.empty()) {
        auto c = parse_cpulist(a.cpus);
        if (!c) return c.error();
        if (c->empty()) return make_error("--cpus names no CPU", EINVAL);
        o.cpus = *c;
    }
    if (!a.msg_sizes.empty()) {
        auto s = parse_size_list(a.msg_sizes);
        if (!s) return s.error();
        o.msg_sizes = *s;
    }
    if (!a.server_command.empty()) o.server_command = {"sh", "-c", a.server_command};
    o.command = a.command;
    // Without a name (validate: the fix's default scenario) the caller resolves
    // once it knows which scenario runs.
    if (resolve && !o.name.empty())
        if (auto st = resolve_scenario_options(o, usable_cpus()); !st) return st.error();
    return o;
}

int run_scenario_list(bool json) {
    if (json) {
        nlohmann::json j = json_document(kScenarioListSchema);
        auto& arr = j["scenarios"] = nlohmann::json::array();
        for (auto& s : scenario_registry())
            arr.push_back({{"name", std::string(s.name)}, {"summary", std::string(s.summary)}});
        std::cout << document_text(j);
        return kExitOk;
    }
    for (auto& s : scenario_registry()) std::cout << fmt::format("{:<13} {}\n", s.name, s.summary);
    return kExitOk;
}

int run_scenario_run(const ScenarioArgs& a) {
    auto o = to_scenario_options(a);
    if (!o) {
        fmt::print(stderr, "hotline: {}\n", o.error().message());
        return kExitUsage;
    }
    // A bad -o is reported now, not after the traffic has run.
    if (!a.output.empty())
        if (auto st = check_output_path(a.output); !st) return fail(st.error(), kExitUsage);
    // A progress line: rewritten in place on a terminal, one line per step otherwise.
    bool tty = isatty(2);
    bool pending = false;
    auto progress = [&](const std::string& text) {
        if (tty) {
            fmt::print(stderr, "\r\033[K{}", text);
            pending = true;
        } else {
            fmt::print(stderr, "{}\n", text);
        }
        std::fflush(stderr);
    };
    int sig = 0;
    auto r = run_scenario(*o, progress, &sig);
    if (pending) fmt::print(stderr, "\r\033[K");
    if (!r) {
        fmt::print(stderr, "hotline: {}\n", r.error().message());
        return kExitError;
    }
    nlohmann::json j = json_document(kScenarioResultSchema);
    j.update(to_json(*r));
    if (a.json) std::cout << document_text(j);
    else render_scenario_text(std::cout, *r);
    if (!a.output.empty()) {
        if (auto st = write_file_atomic(a.output, document_text(j)); !st) {
            fmt::print(stderr, "hotline: {}\n", st.error().message());
            return kExitError;
        }
    }
    if (sig) return 128 + sig;
    // A scenario whose traffic is the command ends with the command's status.
    if (r->command_status && *r->command_status != 0 && find_scenario(o->name)->command_is_traffic)
        return *r->command_status;
    return kExitOk;
}

}  // namespace hotline::cli
