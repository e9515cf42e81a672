// Named scenarios: option checking, the lifecycle of one run (network, helper
// processes, coordinator thread, teardown), and the result's text and JSON.
#include "hotline/scenario.hpp"

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
#include "hotline/kernel.hpp"
#include "hotline/signals.hpp"
#include "hotline/workload.hpp"

namespace hotline {

const std::vector<ScenarioInfo>& scenario_catalog() {
    static const std::vector<ScenarioInfo> k = {
        {"dst-refcount",
         "first report: N TCP streams per CPU of 64-byte NODELAY writes, 64K buffers, autocorking off, one "
         "receiver address; messages/s, Mbit/s, CPU"},
        {"tcp-crr", "connect, request, response, close to one address (the 2023 dst false-sharing pattern); connections/s, CPU"},
        {"irq-lat", "second report: single-stream TCP request/response over a 4K..1M sweep; p50/p90/p99/p999 per size"},
        {"qperf", "real qperf (tcp_lat or tcp_bw) across the namespaces, parsed into the same result"},
        {"exec", "the network only: runs the command after -- in the client namespace (and --server-command in the server's)"},
    };
    return k;
}

std::vector<int> usable_cpus() {
    cpu_set_t set;
    CPU_ZERO(&set);
    std::vector<int> out;
    if (sched_getaffinity(0, sizeof set, &set)) return out;
    for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &set)) out.push_back(c);
    return out;
}

Status resolve_scenario_options(ScenarioOptions& o, const std::vector<int>& usable) {
    const auto& cat = scenario_catalog();
    if (std::none_of(cat.begin(), cat.end(), [&](auto& s) { return s.name == o.name; })) {
        std::string names;
        for (auto& s : cat) names += (names.empty() ? "" : ", ") + s.name;
        return make_error(fmt::format("unknown scenario \"{}\"", o.name), EINVAL, "choose one of " + names);
    }
    if (o.cpus.empty()) o.cpus = usable;
    if (o.cpus.empty()) return make_error("no CPU is usable by this process", EINVAL);
    for (int c : o.cpus)
        if (std::find(usable.begin(), usable.end(), c) == usable.end())
            return make_error(fmt::format("--cpus: CPU {} is not usable here", c), EINVAL,
                              "this process may use CPUs " + format_cpulist(usable));
    if (o.duration_s < 0 || !std::isfinite(o.duration_s)) return make_error("--duration must be positive", EINVAL);
    if (o.msg_sizes.empty()) {
        auto s = parse_size_list("4K:1M:*2");
        o.msg_sizes = *s;
    }
    if (o.msg_size == 0) o.msg_size = (o.name == "qperf" && o.qperf_test == "tcp_bw") ? 64 * 1024 : 64;
    if (o.msg_size < 1 || o.msg_size > 1024 * 1024)
        return make_error(fmt::format("--msg-size {} is out of range", o.msg_size), EINVAL, "use 1 to 1M bytes");
    if (o.flows_per_cpu == 0) o.flows_per_cpu = o.name == "dst-refcount" ? 3 : 1;
    if (o.flows_per_cpu < 1 || o.flows_per_cpu > 64)
        return make_error(fmt::format("--flows-per-cpu {} is out of range", o.flows_per_cpu), EINVAL, "use 1 to 64");
    if (o.sockbuf < 4096 || o.sockbuf > 64 * 1024 * 1024)
        return make_error(fmt::format("--sockbuf {} is out of range", o.sockbuf), EINVAL, "use 4K to 64M");
    if (o.name == "qperf" && o.qperf_test != "tcp_lat" && o.qperf_test != "tcp_bw")
        return make_error(fmt::format("unknown qperf test \"{}\"", o.qperf_test), EINVAL, "use tcp_lat or tcp_bw");
    bool sweep = o.name == "irq-lat" || (o.name == "qperf" && o.qperf_test == "tcp_lat");
    if (o.duration_s == 0) {
        if (sweep) o.duration_s = double(o.msg_sizes.size());  // 1 s per size, as qperf --time 1
        else if (o.name != "exec") o.duration_s = 10;
    }
    if (o.name == "qperf" && o.duration_s < double(sweep ? o.msg_sizes.size() : 1))
        return make_error(fmt::format("qperf needs at least 1 s per test: --duration {} s is too short for {} sizes",
                                      o.duration_s, sweep ? o.msg_sizes.size() : 1),
                          EINVAL);
    if (o.name == "exec" && o.command.empty())
        return make_error("the exec scenario needs a command after --", EINVAL,
                          "e.g. hotline scenario run exec --server-command 'iperf3 -s' -- sh -c 'iperf3 -c $HOTLINE_SERVER_ADDR'");
    return ok_status();
}

// --- Scenario -------------------------------------------------------------------------------

static nlohmann::json network_json(const Network& n);

struct Scenario::Impl {
    ScenarioOptions opts;
    ProgressFn progress;
    std::unique_ptr<Network> net;
    std::optional<ChildProcess> command, server_command, qperf_server;
    std::thread coordinator;
    std::atomic<bool> stop{false}, finished{false};
    std::mutex mu;
    std::condition_variable cv;
    std::optional<Result<ScenarioResult>> outcome;
    int command_status = -1;
    bool stopped = false;
    std::vector<int> base_cpus;  // the resolved CPUs; a run may use others
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

    void run() {
        detail::GenEnv env{opts, *net, stop, progress, [this](double s) { return sleep_for(s); },
                           [this](std::function<std::uint64_t()> fn) { publish_ops(std::move(fn)); }};
        Result<ScenarioResult> r = make_error("no generator");
        if (opts.name == "dst-refcount") r = detail::run_dst_refcount(env);
        else if (opts.name == "tcp-crr") r = detail::run_tcp_crr(env);
        else if (opts.name == "irq-lat") r = detail::run_irq_lat(env);
        else if (opts.name == "qperf") r = detail::run_qperf_client(env, qperf_server->pid());
        else if (opts.name == "exec") r = detail::run_command_watch(env, *command, &command_status);
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
    impl->opts = std::move(opts);
    impl->progress = std::move(progress);
    auto& o = impl->opts;
    NetworkOptions no;
    no.loopback = o.loopback;
    no.paths = o.paths;
    auto net = Network::create(no);
    if (!net) return net.error();
    impl->net = std::move(*net);
    auto& n = *impl->net;

    // Sysctls the shape needs, set inside the namespaces only.
    if (o.name == "dst-refcount")
        if (auto st = n.set_sysctl(true, "net.ipv4.tcp_autocorking", "0", true); !st) return st.error();

    if (!o.server_command.empty()) {
        auto c = impl->spawn_in(false, o.server_command, o.cpus);
        if (!c) return c.error();
        impl->server_command.emplace(std::move(*c));
    }
    if (o.name == "qperf") {
        auto c = impl->spawn_in(false, {"qperf", "--listen_port", std::to_string(detail::kQperfPort)}, {o.cpus.back()});
        if (!c) {
            Error e = c.error();
            if (e.err == ENOENT) e.hint = "install qperf (Debian package qperf)";
            return e;
        }
        impl->qperf_server.emplace(std::move(*c));
    }
    if (!o.command.empty()) {
        auto c = impl->spawn_in(true, o.command, o.cpus);
        if (!c) return c.error();
        impl->command.emplace(std::move(*c));
    }
    impl->base_cpus = o.cpus;
    return std::unique_ptr<Scenario>(new Scenario(std::move(impl)));
}

Status Scenario::begin_run(const std::vector<int>& cpus) {
    auto& im = *impl_;
    if (im.stopped) return make_error("scenario already stopped", EINVAL);
    if (im.coordinator.joinable()) return make_error("a run of the scenario is still going; end_run() it first", EBUSY);
    if (im.outcome && im.opts.name == "exec")
        return make_error("the exec scenario runs its command once", EINVAL);
    im.opts.cpus = cpus.empty() ? im.base_cpus : cpus;
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
    if (!im.opts.command.empty() || (im.opts.name != "dst-refcount" && im.opts.name != "tcp-crr")) return std::nullopt;
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
    if (o.name == "dst-refcount" || o.name == "tcp-crr") {
        p["flows_per_cpu"] = o.flows_per_cpu;
        p["msg_size"] = o.msg_size;
        p["nodelay"] = true;
    }
    if (o.name == "dst-refcount") p["sockbuf"] = o.sockbuf;
    if (o.name == "irq-lat" || (o.name == "qperf" && o.qperf_test == "tcp_lat")) {
        p["msg_sizes"] = o.msg_sizes;
        p["client_cpu"] = o.cpus.front();
        p["server_cpu"] = o.cpus.back();
    }
    if (o.name == "irq-lat") p["nodelay"] = o.nodelay;
    if (o.name == "qperf") {
        p["qperf_test"] = o.qperf_test;
        if (o.qperf_test == "tcp_bw") p["msg_size"] = o.msg_size;
    }
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
    for (auto* c : {&im.server_command, &im.qperf_server})
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
    if (r.scenario == "tcp-crr" || r.connections)
        j["connections"] = {{"count", r.connections}, {"per_s", r.connections_per_s}};
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
    if (r.scenario == "tcp-crr" || r.connections)
        os << fmt::format("  connections: {} ({:.0f}/s)\n", r.connections, r.connections_per_s);
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
