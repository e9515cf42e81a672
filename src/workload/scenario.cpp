// SPDX-License-Identifier: Apache-2.0
// Named scenarios: option checking, the lifecycle of one run (network, helper
// processes, coordinator thread, teardown), and the result's text and JSON.
#include "hotline/base/util.hpp"
#include "hotline/workload/scenario.hpp"

#include <sched.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <condition_variable>
#include <fmt/format.h>
#include <mutex>
#include <thread>

#include "generators.hpp"
#include "hotline/kernel/kernel.hpp"
#include "hotline/base/signals.hpp"
#include "hotline/workload/workload.hpp"

namespace hotline {

std::vector<int> usable_cpus() {
    cpu_set_t set;
    CPU_ZERO(&set);
    std::vector<int> out;
    if (sched_getaffinity(0, sizeof set, &set)) return out;
    for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &set)) out.push_back(c);
    return out;
}

namespace {

Status check_cpus(ScenarioOptions& o, const std::vector<int>& usable) {
    if (o.cpus.empty()) o.cpus = usable;
    if (o.cpus.empty()) return make_error("no CPU is usable by this process", EINVAL);
    for (int c : o.cpus)
        if (std::find(usable.begin(), usable.end(), c) == usable.end())
            return make_error(fmt::format("--cpus: CPU {} is not usable here", c), EINVAL,
                              "this process may use CPUs " + format_cpulist(usable));
    return ok_status();
}

long shape_value(const ScenarioOptions& o, ShapeOption option) {
    switch (option) {
    case kOptMsgSize: return o.msg_size;
    case kOptFlowsPerCpu: return o.flows_per_cpu;
    case kOptSockbuf: return o.sockbuf;
    default: return 0;
    }
}

// Fills what the caller left at 0 from the scenario's entry.
void apply_defaults(ScenarioOptions& o, const ScenarioDef& def) {
    if (o.msg_sizes.empty()) o.msg_sizes = *parse_size_list(kDefaultMsgSizes);
    if (o.msg_size == 0) o.msg_size = def.msg_size;
    if (o.flows_per_cpu == 0) o.flows_per_cpu = def.flows_per_cpu;
    if (o.duration_s == 0) {
        if (shape_options_read(o) & kOptMsgSizes) o.duration_s = double(o.msg_sizes.size());  // 1 s per size, as qperf --time 1
        else if (!def.command_is_traffic) o.duration_s = kDefaultScenarioDurationS;
    }
}

Status check_ranges(const ScenarioOptions& o) {
    for (auto& r : shape_option_ranges()) {
        long v = shape_value(o, r.option);
        if (v < r.min || v > r.max)
            return make_error(fmt::format("{} {} is out of range", r.flag, v), EINVAL, std::string(r.hint));
    }
    return ok_status();
}

}  // namespace

Status resolve_scenario_options(ScenarioOptions& o, const std::vector<int>& usable) {
    const ScenarioDef* def = find_scenario(o.name);
    if (!def)
        return make_error(unknown_name_message("scenario", o.name, scenario_names()), EINVAL,
                          "choose one of " + scenario_names());
    if (auto st = check_cpus(o, usable); !st) return st;
    if (o.duration_s < 0 || !std::isfinite(o.duration_s)) return make_error("--duration must be positive", EINVAL);
    apply_defaults(o, *def);
    if (auto st = check_ranges(o); !st) return st;
    if (def->check)
        if (auto st = def->check(o); !st) return st;
    if (def->command_is_traffic && o.command.empty())
        return make_error(fmt::format("the {} scenario needs a command after --", o.name), EINVAL,
                          fmt::format("e.g. hotline scenario run {} --server-command 'iperf3 -s' -- sh -c 'iperf3 -c "
                                      "$HOTLINE_SERVER_ADDR'",
                                      o.name));
    return ok_status();
}

// --- Scenario -------------------------------------------------------------------------------

static nlohmann::json network_json(const Network& n);

struct Scenario::Impl {
    const ScenarioDef* def = nullptr;
    ScenarioOptions opts;
    ProgressFn progress;
    std::unique_ptr<Network> net;
    // scenario_server: the one a scenario's prepare step may start (qperf's).
    std::optional<ChildProcess> command, server_command, scenario_server;
    std::thread coordinator;
    std::atomic<bool> stop{false}, finished{false};
    std::mutex mu;
    std::condition_variable cv;
    std::optional<Result<ScenarioResult>> outcome;
    int command_status = -1;
    bool stopped = false;
    std::vector<int> base_cpus;  // the resolved CPUs; a run may use others
    double base_duration_s = 0;  // the resolved duration; a run may be shorter or longer
    // The running operation total of the current run (see ops_so_far()).
    mutable std::mutex ops_mu;
    std::function<std::uint64_t()> ops_fn;
    std::uint64_t ops_last = 0;

    void publish_ops(std::function<std::uint64_t()> fn) {
        std::lock_guard<std::mutex> g(ops_mu);
        if (!fn && ops_fn) ops_last = ops_fn();
        ops_fn = std::move(fn);
    }

    bool sleep_for(double secs) {
        std::unique_lock<std::mutex> lk(mu);
        cv.wait_for(lk, std::chrono::duration<double>(secs), [&] { return stop.load(); });
        return !stop.load();
    }

    std::vector<std::string> command_env() const {
        return {"HOTLINE_SCENARIO=" + opts.name,
                "HOTLINE_SERVER_ADDR=" + net->server_addr(),
                "HOTLINE_CLIENT_ADDR=" + net->client_addr(),
                "HOTLINE_CLIENT_NETNS=" + net->client().name(),
                "HOTLINE_SERVER_NETNS=" + net->server().name(),
                "HOTLINE_CPUS=" + format_cpulist(opts.cpus)};
    }

    Result<ChildProcess> spawn_in(bool client, const std::vector<std::string>& argv, std::vector<int> cpus) {
        SpawnOptions so;
        so.netns_fd = client ? net->client().fd() : net->server().fd();
        so.cpus = std::move(cpus);
        so.env = command_env();
        so.die_with_parent = true;  // spawned from the caller's thread, which outlives the scenario
        so.own_process_group = true;
        return ChildProcess::spawn(argv, so);
    }

    Result<pid_t> start_server(const std::vector<std::string>& argv, std::vector<int> cpus) {
        auto c = spawn_in(false, argv, std::move(cpus));
        if (!c) return c.error();
        scenario_server.emplace(std::move(*c));
        return scenario_server->pid();
    }

    // Starts argv (if any) in the client or server namespace on the scenario's CPUs.
    Status spawn_into(std::optional<ChildProcess>& slot, bool client, const std::vector<std::string>& argv) {
        if (argv.empty()) return ok_status();
        auto c = spawn_in(client, argv, opts.cpus);
        if (!c) return c.error();
        slot.emplace(std::move(*c));
        return ok_status();
    }

    // The network, the scenario's own set-up, then the user's commands.
    Status build() {
        NetworkOptions no;
        no.loopback = opts.loopback;
        no.paths = opts.paths;
        auto n = Network::create(no);
        if (!n) return n.error();
        net = std::move(*n);
        if (def->prepare) {
            detail::PrepareEnv pe{.opts = opts,
                                  .net = *net,
                                  .start_server = [this](const std::vector<std::string>& argv, std::vector<int> cpus) {
                                      return start_server(argv, std::move(cpus));
                                  }};
            if (auto st = def->prepare(pe); !st) return st;
        }
        if (auto st = spawn_into(server_command, false, opts.server_command); !st) return st;
        return spawn_into(command, true, opts.command);
    }

    void run() {
        detail::GenEnv env{.opts = opts,
                           .net = *net,
                           .stop = stop,
                           .progress = progress,
                           .sleep_for = [this](double s) { return sleep_for(s); },
                           .publish_ops = [this](std::function<std::uint64_t()> fn) { publish_ops(std::move(fn)); },
                           .server_pid = scenario_server ? scenario_server->pid() : -1,
                           .command = command ? &*command : nullptr,
                           .command_status = &command_status};
        Result<ScenarioResult> r = def->run(env);
        if (r && r->stop_reason.empty()) r->stop_reason = stop.load() ? "stopped" : "finished";
        {
            std::lock_guard<std::mutex> g(mu);
            outcome.emplace(std::move(r));
        }
        finished = true;
    }
};

Scenario::Scenario(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Scenario::~Scenario() {
    if (impl_ && !impl_->stopped) (void)stop();
}

Result<std::unique_ptr<Scenario>> Scenario::start(ScenarioOptions opts, ProgressFn progress) {
    auto sc = prepare(std::move(opts), std::move(progress));
    if (!sc) return sc;
    if (auto st = (*sc)->begin_run(); !st) return st.error();
    return sc;
}

Result<std::unique_ptr<Scenario>> Scenario::prepare(ScenarioOptions opts, ProgressFn progress) {
    if (auto st = resolve_scenario_options(opts, usable_cpus()); !st) return st.error();
    auto impl = std::make_unique<Impl>();
    impl->def = find_scenario(opts.name);
    impl->opts = std::move(opts);
    impl->progress = std::move(progress);
    if (auto st = impl->build(); !st) return st.error();
    impl->base_cpus = impl->opts.cpus;
    impl->base_duration_s = impl->opts.duration_s;
    return std::unique_ptr<Scenario>(new Scenario(std::move(impl)));
}

Status Scenario::begin_run(const std::vector<int>& cpus, bool per_cpu_routes, double duration_s) {
    auto& im = *impl_;
    if (duration_s < 0 || !std::isfinite(duration_s))
        return make_error(fmt::format("run duration {} s must be positive", duration_s), EINVAL);
    if (duration_s > 0 && !im.def->live_ops)
        return make_error(fmt::format("the {} scenario runs for its options' duration only", im.opts.name), EINVAL);
    if (per_cpu_routes && !im.def->per_cpu_routes)
        return make_error(fmt::format("the {} scenario has no per-CPU routes", im.opts.name), EINVAL,
                          "use a scenario that has them: tcp-crr");
    if (im.stopped) return make_error("scenario already stopped", EINVAL);
    if (im.coordinator.joinable()) return make_error("a run of the scenario is still going; end_run() it first", EBUSY);
    if (im.outcome && im.def->command_is_traffic)
        return make_error(fmt::format("the {} scenario runs its command once", im.opts.name), EINVAL);
    im.opts.cpus = cpus.empty() ? im.base_cpus : cpus;
    im.opts.duration_s = duration_s > 0 ? duration_s : im.base_duration_s;
    if (per_cpu_routes)
        if (auto st = im.net->add_cpu_routes(im.opts.cpus); !st) return st;
    im.opts.per_cpu_routes = per_cpu_routes;
    im.stop = false;
    im.finished = false;
    im.outcome.reset();
    {
        std::lock_guard<std::mutex> g(im.ops_mu);
        im.ops_fn = nullptr;
        im.ops_last = 0;
    }
    Impl* raw = impl_.get();
    im.coordinator = std::thread([raw] { raw->run(); });
    return ok_status();
}

Result<ScenarioResult> Scenario::end_run() {
    auto& im = *impl_;
    if (!im.coordinator.joinable()) return make_error("no run of the scenario is going", EINVAL);
    {
        std::lock_guard<std::mutex> g(im.mu);
        im.stop = true;
    }
    im.cv.notify_all();
    im.coordinator.join();
    if (!im.outcome) return make_error("scenario produced no result");
    Result<ScenarioResult> r = std::move(*im.outcome);
    im.outcome.reset();
    if (!r) return r;
    r->params = params();
    r->network = network_json(*im.net);
    return r;
}

bool Scenario::done() const { return impl_->finished.load(); }

std::optional<std::uint64_t> Scenario::ops_so_far() const {
    const auto& im = *impl_;
    if (!im.opts.command.empty() || !im.def->live_ops) return std::nullopt;
    std::lock_guard<std::mutex> g(im.ops_mu);
    return im.ops_fn ? im.ops_fn() : im.ops_last;
}
const ScenarioOptions& Scenario::options() const { return impl_->opts; }
const Network& Scenario::network() const { return *impl_->net; }

nlohmann::json Scenario::params() const {
    const auto& o = impl_->opts;
    nlohmann::json p = {{"name", o.name},
                        {"duration_s", o.duration_s},
                        {"cpus", o.cpus},
                        {"loopback", o.loopback}};
    if (o.per_cpu_routes) p["per_cpu_routes"] = true;
    const unsigned read = shape_options_read(o);
    if (read & kOptFlowsPerCpu) p["flows_per_cpu"] = o.flows_per_cpu;
    if (read & kOptMsgSize) p["msg_size"] = o.msg_size;
    if (read & kOptSockbuf) p["sockbuf"] = o.sockbuf;
    if (read & kOptMsgSizes) {
        p["msg_sizes"] = o.msg_sizes;
        p["client_cpu"] = o.cpus.front();
        p["server_cpu"] = o.cpus.back();
    }
    if (impl_->def->always_nodelay) p["nodelay"] = true;
    if (read & kOptNodelay) p["nodelay"] = o.nodelay;
    if (read & kOptQperfTest) p["qperf_test"] = o.qperf_test;
    if (read & kOptSharedListener) p["shared_listener"] = o.shared_listener;
    if (!o.command.empty()) p["command"] = o.command;
    if (!o.server_command.empty()) p["server_command"] = o.server_command;
    return p;
}

static nlohmann::json network_json(const Network& n) {
    nlohmann::json j = {{"mode", n.loopback() ? "loopback" : "veth"},
                        {"client_netns", n.client().name()},
                        {"server_netns", n.server().name()},
                        {"client_addr", n.client_addr()},
                        {"server_addr", n.server_addr()},
                        {"client_link", n.client_link()},
                        {"server_link", n.server_link()},
                        {"sysctls", n.sysctls()}};
    const auto& c = n.cleaned_at_start();
    if (!c.namespaces.empty() || !c.links.empty() || !c.killed.empty())
        j["cleaned_at_start"] = {{"namespaces", c.namespaces}, {"links", c.links}, {"processes_killed", c.killed.size()}};
    return j;
}

Result<ScenarioResult> Scenario::stop() {
    auto& im = *impl_;
    if (im.stopped) return make_error("scenario already stopped", EINVAL);
    im.stopped = true;
    {
        std::lock_guard<std::mutex> g(im.mu);
        im.stop = true;
    }
    im.cv.notify_all();
    if (im.coordinator.joinable()) im.coordinator.join();
    nlohmann::json net_json = network_json(*im.net);
    nlohmann::json params = this->params();

    std::optional<int> command_status;
    if (im.command_status >= 0) {
        command_status = im.command_status;  // the exec watcher reaped it
    } else if (im.command) {
        int st = 0;
        if (!im.command->poll(&st)) {
            im.command->signal(SIGTERM);
            st = im.command->wait();
        }
        command_status = st;
    }
    im.command.reset();
    for (auto* c : {&im.server_command, &im.scenario_server})
        if (*c) {
            (*c)->signal(SIGTERM);
            (void)(*c)->wait();
            c->reset();
        }
    Status torn = im.net->teardown();

    if (!im.outcome) return make_error("scenario produced no result");
    Result<ScenarioResult> r = std::move(*im.outcome);
    if (!r) return r;
    r->params = params;
    r->network = net_json;
    if (command_status) r->command_status = command_status;
    if (!torn) r->notes.push_back("teardown: " + torn.error().message());
    return r;
}

// --- run to completion --------------------------------------------------------------------------

Result<ScenarioResult> run_scenario(ScenarioOptions opts, ProgressFn progress, int* signalled) {
    if (signalled) *signalled = 0;
    // Blocked before any thread or child exists, so workers inherit the mask and
    // a signal waits for us here instead of killing the process mid-setup.
    ShutdownSignals signals;
    auto sc = Scenario::start(std::move(opts), std::move(progress));
    if (!sc) return sc.error();
    int sig = 0;
    while (!(*sc)->done() && !sig) sig = signals.wait(0.1);
    auto r = (*sc)->stop();
    sc->reset();
    if (signalled) *signalled = sig;
    if (r && sig) r->stop_reason = fmt::format("stopped by {}", signal_name(sig));
    return r;
}

// --- output ----------------------------------------------------------------------------------------

// Connections are shown, zero or not, for a scenario that counts them.
static bool reports_connections(const ScenarioResult& r) {
    const ScenarioDef* d = find_scenario(r.scenario);
    return r.connections || (d && d->ops == OpsUnit::kConnections);
}

nlohmann::json to_json(const ScenarioResult& r) {
    nlohmann::json j = {{"scenario", r.scenario},
                        {"generator", r.generator},
                        {"params", r.params},
                        {"network", r.network},
                        {"seconds", r.seconds},
                        {"stop_reason", r.stop_reason}};
    if (r.messages || r.bytes || r.mbit_per_s > 0)
        j["throughput"] = {{"messages", r.messages},
                           {"bytes", r.bytes},
                           {"messages_per_s", r.messages_per_s},
                           {"mbit_per_s", r.mbit_per_s}};
    if (reports_connections(r))
        j["connections"] = {{"count", r.connections}, {"per_s", r.connections_per_s},
                            {"resets", r.connection_resets}, {"refusals", r.connection_refusals},
                            {"timeouts", r.connection_timeouts}};
    if (!r.latency.empty()) {
        auto arr = nlohmann::json::array();
        for (auto& p : r.latency) {
            nlohmann::json pj = {{"msg_size", p.msg_size},
                                 {"exchanges", p.exchanges},
                                 {"seconds", p.seconds},
                                 {"rate_per_s", p.rate_per_s},
                                 {"one_way_ns", p.one_way_ns},
                                 {"rtt_mean_ns", p.rtt_mean_ns}};
            if (p.has_percentiles) {
                pj["rtt_min_ns"] = p.rtt_min_ns;
                pj["rtt_max_ns"] = p.rtt_max_ns;
                pj["p50_ns"] = p.p50_ns;
                pj["p90_ns"] = p.p90_ns;
                pj["p99_ns"] = p.p99_ns;
                pj["p999_ns"] = p.p999_ns;
            } else {
                for (const char* k : {"p50_ns", "p90_ns", "p99_ns", "p999_ns"}) pj[k] = nullptr;
            }
            arr.push_back(pj);
        }
        j["latency"] = arr;
    }
    j["cpu"] = {{"seconds", r.cpu.seconds},
                {"cpus", r.cpu.cpus},
                {"busy_pct", r.cpu.busy_pct},
                {"softirq_pct", r.cpu.softirq_pct}};
    if (r.cpu.threads_measured) {
        j["cpu"]["sender_pct"] = r.cpu.sender_pct;
        j["cpu"]["receiver_pct"] = r.cpu.receiver_pct;
    }
    if (r.command_status) j["command_status"] = *r.command_status;
    j["notes"] = r.notes;
    return j;
}

static std::string us(double ns) { return fmt::format("{:.1f}", ns / 1e3); }

void render_scenario_text(std::ostream& os, const ScenarioResult& r) {
    os << fmt::format("scenario {} ({}), {:.2f} s, {}\n", r.scenario, r.generator, r.seconds, r.stop_reason);
    if (r.network.is_object() && r.network.contains("mode"))
        os << fmt::format("  network: {} {} -> {} ({} / {})\n", r.network["mode"].get<std::string>(),
                          r.network["client_addr"].get<std::string>(), r.network["server_addr"].get<std::string>(),
                          r.network["client_netns"].get<std::string>(), r.network["server_netns"].get<std::string>());
    if (r.network.is_object() && r.network.contains("sysctls"))
        for (auto& [ns, kv] : r.network["sysctls"].items())
            for (auto& [k, v] : kv.items()) os << fmt::format("  sysctl in {}: {} = {}\n", ns, k, v.get<std::string>());
    if (r.messages || r.mbit_per_s > 0)
        os << fmt::format("  messages: {} ({:.0f}/s), {:.1f} Mbit/s\n", r.messages, r.messages_per_s, r.mbit_per_s);
    if (reports_connections(r))
        os << fmt::format("  connections: {} ({:.0f}/s); resets {}, refusals {}, timeouts {}\n", r.connections,
                          r.connections_per_s, r.connection_resets, r.connection_refusals, r.connection_timeouts);
    if (!r.latency.empty()) {
        os << fmt::format("  {:>6} {:>9} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9}   (us; pNN of the round trip)\n",
                          "size", "exchanges", "per s", "one-way", "p50", "p90", "p99", "p99.9");
        for (auto& p : r.latency) {
            auto pc = [&](double v) { return p.has_percentiles ? us(v) : std::string("-"); };
            os << fmt::format("  {:>6} {:>9} {:>10.0f} {:>9} {:>9} {:>9} {:>9} {:>9}\n", format_size(p.msg_size), p.exchanges,
                              p.rate_per_s, us(p.one_way_ns), pc(p.p50_ns), pc(p.p90_ns), pc(p.p99_ns), pc(p.p999_ns));
        }
    }
    os << fmt::format("  cpu {}: {:.1f}% busy ({:.1f}% softirq)", format_cpulist(r.cpu.cpus), r.cpu.busy_pct, r.cpu.softirq_pct);
    if (r.cpu.threads_measured)
        os << fmt::format(", sender {:.1f}%, receiver {:.1f}% (100% = one CPU)", r.cpu.sender_pct, r.cpu.receiver_pct);
    os << "\n";
    if (r.command_status) os << fmt::format("  command exit status: {}\n", *r.command_status);
    for (auto& n : r.notes) os << "  note: " << n << "\n";
}

}  // namespace hotline
