// `hotline scenario list|run`: argument checking and printing around the
// library's scenarios.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <iostream>

#include "commands.hpp"
#include "hotline/kernel.hpp"
#include "hotline/scenario.hpp"
#include "hotline/util.hpp"

namespace hotline::cli {

void add_scenario_options(CLI::App* app, ScenarioArgs& a, bool with_duration) {
    if (with_duration)
        app->add_option("-d,--duration", a.duration,
                        "Traffic time in total (default 10s; irq-lat and qperf tcp_lat: 1s per message size)");
    app->add_option("--cpus", a.cpus, "CPUs to pin workers to, e.g. 0-3 (default: all usable)");
    app->add_option("--flows-per-cpu", a.flows_per_cpu, "Flows per CPU (dst-refcount default 3, tcp-crr 1)");
    app->add_option("--msg-size", a.msg_size, "Message size in bytes for dst-refcount/tcp-crr/qperf tcp_bw (default 64)");
    app->add_option("--msg-sizes", a.msg_sizes, "Sweep for irq-lat/qperf tcp_lat: MIN:MAX:*F or a list (default 4K:1M:*2)");
    app->add_option("--sockbuf", a.sockbuf, "dst-refcount sender socket buffers in bytes (default 65536)");
    app->add_flag("--loopback", a.loopback, "One namespace and its loopback instead of a veth pair");
    app->add_flag("--nodelay", a.nodelay, "irq-lat: set TCP_NODELAY (qperf does not)");
    app->add_option("--qperf-test", a.qperf_test, "qperf scenario: tcp_lat (default) or tcp_bw");
    app->add_option("--server-command", a.server_command, "Shell command to run in the server namespace (sh -c)");
}

Result<ScenarioOptions> to_scenario_options(const ScenarioArgs& a) {
    ScenarioOptions o;
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
    o.flows_per_cpu = a.flows_per_cpu;
    o.msg_size = a.msg_size;
    o.sockbuf = a.sockbuf;
    o.loopback = a.loopback;
    o.nodelay = a.nodelay;
    o.qperf_test = a.qperf_test;
    if (!a.server_command.empty()) o.server_command = {"sh", "-c", a.server_command};
    o.command = a.command;
    // Without a name (validate: the fix's default scenario) the caller resolves
    // once it knows which scenario runs.
    if (!o.name.empty())
        if (auto st = resolve_scenario_options(o, usable_cpus()); !st) return st.error();
    return o;
}

int run_scenario_list(bool json) {
    if (json) {
        auto arr = nlohmann::json::array();
        for (auto& s : scenario_catalog()) arr.push_back({{"name", s.name}, {"summary", s.summary}});
        std::cout << arr.dump(1) << "\n";
        return kExitOk;
    }
    for (auto& s : scenario_catalog()) std::cout << fmt::format("{:<13} {}\n", s.name, s.summary);
    return kExitOk;
}

int run_scenario_run(const ScenarioArgs& a) {
    auto o = to_scenario_options(a);
    if (!o) {
        fmt::print(stderr, "hotline: {}\n", o.error().message());
        return kExitUsage;
    }
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
    nlohmann::json j = to_json(*r);
    if (a.json) std::cout << j.dump(1) << "\n";
    else render_scenario_text(std::cout, *r);
    if (!a.output.empty()) {
        if (auto st = write_file_atomic(a.output, j.dump(1) + "\n"); !st) {
            fmt::print(stderr, "hotline: {}\n", st.error().message());
            return kExitError;
        }
    }
    if (sig) return 128 + sig;
    if (r->command_status && *r->command_status != 0 && o->name == "exec") return *r->command_status;
    return kExitOk;
}

}  // namespace hotline::cli
