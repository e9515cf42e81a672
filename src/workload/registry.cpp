// SPDX-License-Identifier: Apache-2.0
// The scenario registry: one entry per named scenario, and the questions other
// layers ask about scenarios (defaults, options read, what one operation is),
// answered from the entries.  A new scenario is an entry here, its generator
// file (gen_NAME.cpp) and a test; tests/unit/scenario_test.cpp checks every
// entry is complete and listed in docs/scenarios.md.
#include <fmt/format.h>

#include <functional>
#include <optional>
#include <set>

#include "generators.hpp"
#include "hotline/workload/scenario.hpp"

namespace hotline {

namespace detail {
// Each scenario's hooks, defined in its gen_*.cpp.
Status prepare_dst_refcount(PrepareEnv& env);
Result<ScenarioResult> run_dst_refcount(GenEnv& env);
Result<ScenarioResult> run_tcp_crr(GenEnv& env);
Result<ScenarioResult> run_irq_lat(GenEnv& env);
unsigned qperf_options_read(const ScenarioOptions& o);
Status check_qperf(const ScenarioOptions& o);
Status prepare_qperf(PrepareEnv& env);
Result<ScenarioResult> run_qperf(GenEnv& env);
Result<ScenarioResult> run_exec(GenEnv& env);
}  // namespace detail

const std::vector<ScenarioDef>& scenario_registry() {
    static const std::vector<ScenarioDef> k = {
        {.name = "dst-refcount",
         .summary = "first report: N TCP streams per CPU of 64-byte NODELAY writes, 64K buffers, autocorking off, "
                    "one receiver address; messages/s, Mbit/s, CPU",
         .options = kOptFlowsPerCpu | kOptMsgSize | kOptSockbuf,
         .flows_per_cpu = 3,
         .always_nodelay = true,
         .ops = OpsUnit::kMessages,
         .live_ops = true,
         .prepare = detail::prepare_dst_refcount,
         .run = detail::run_dst_refcount},
        {.name = "tcp-crr",
         .summary = "connect, request, response, close to one address (the 2023 dst false-sharing pattern); "
                    "connections/s, CPU",
         .options = kOptFlowsPerCpu | kOptMsgSize | kOptSharedListener,
         .always_nodelay = true,
         .ops = OpsUnit::kConnections,
         .live_ops = true,
         .per_cpu_routes = true,
         .run = detail::run_tcp_crr},
        {.name = "irq-lat",
         .summary = "second report: single-stream TCP request/response over a 4K..1M sweep; p50/p90/p99/p999 per size",
         .options = kOptMsgSizes | kOptNodelay,
         .ops = OpsUnit::kExchanges,
         .run = detail::run_irq_lat},
        {.name = "qperf",
         .summary = "real qperf (tcp_lat or tcp_bw) across the namespaces, parsed into the same result",
         .options = kOptQperfTest | kOptMsgSizes | kOptMsgSize,
         .options_read = detail::qperf_options_read,
         .msg_size = 64 * 1024,
         .ops = OpsUnit::kExchangesOrMessages,
         .check = detail::check_qperf,
         .prepare = detail::prepare_qperf,
         .run = detail::run_qperf},
        {.name = "exec",
         .summary = "the network only: runs the command after -- in the client namespace (and --server-command in "
                    "the server's)",
         .ops = OpsUnit::kNone,
         .command_is_traffic = true,
         .run = detail::run_exec},
    };
    return k;
}

const ScenarioDef* find_scenario(std::string_view name) {
    for (auto& d : scenario_registry())
        if (d.name == name) return &d;
    return nullptr;
}

std::string scenario_names() {
    std::string out;
    for (auto& d : scenario_registry()) out += fmt::format("{}{}", out.empty() ? "" : ", ", d.name);
    return out;
}

const std::vector<ShapeOptionRange>& shape_option_ranges() {
    static const std::vector<ShapeOptionRange> k = {
        {.option = kOptMsgSize, .flag = "--msg-size", .min = 1, .max = 1024 * 1024, .hint = "use 1 to 1M bytes"},
        {.option = kOptFlowsPerCpu, .flag = "--flows-per-cpu", .min = 1, .max = 64, .hint = "use 1 to 64"},
        {.option = kOptSockbuf, .flag = "--sockbuf", .min = 4096, .max = 64 * 1024 * 1024, .hint = "use 4K to 64M"},
    };
    return k;
}

namespace {

// An entry's default of a numeric shape option (nullopt: not set per scenario).
std::optional<long> entry_default(const ScenarioDef& d, ShapeOption option) {
    if (option == kOptFlowsPerCpu) return d.flows_per_cpu;
    if (option == kOptMsgSize) return d.msg_size;
    return std::nullopt;
}

void check_defaults(const ScenarioDef& d, const std::function<void(std::string)>& problem) {
    for (auto& r : shape_option_ranges()) {
        auto v = entry_default(d, r.option);
        if (v && (*v < r.min || *v > r.max))
            problem(fmt::format("default {} {} is out of range ({})", r.flag, *v, r.hint));
    }
}

// What the operation count and the hooks promise must fit together.
void check_consistency(const ScenarioDef& d, const std::function<void(std::string)>& problem) {
    if (d.options & ~kAllShapeOptions) problem("unknown shape option bits");
    if (d.live_ops && d.ops != OpsUnit::kMessages && d.ops != OpsUnit::kConnections)
        problem("a live operation count needs messages or connections as its unit");
    if (d.command_is_traffic && (d.ops != OpsUnit::kNone || d.live_ops))
        problem("its traffic is a command: hotline counts no operations");
    if (!d.command_is_traffic && d.ops == OpsUnit::kNone) problem("no operation unit");
    if (d.options_read) {
        ScenarioOptions o;
        o.name = d.name;
        if (d.options_read(o) & ~d.options) problem("options_read names options the entry does not list");
    }
}

}  // namespace

std::vector<std::string> scenario_registry_problems(const std::vector<ScenarioDef>& entries) {
    std::vector<std::string> out;
    std::set<std::string_view> seen;
    for (auto& d : entries) {
        auto problem = [&](std::string what) {
            out.push_back(fmt::format("{}: {}", d.name.empty() ? "an entry" : d.name, what));
        };
        if (d.name.empty()) problem("no name");
        else if (!seen.insert(d.name).second) problem("duplicate name");
        if (d.name.find_first_of(" ,\t") != std::string_view::npos) problem("the name is not one word");
        if (d.summary.empty()) problem("no summary");
        if (d.summary.find('\n') != std::string_view::npos) problem("the summary is not one line");
        if (!d.run) problem("no generator");
        check_defaults(d, problem);
        check_consistency(d, problem);
    }
    return out;
}

std::string registry_defaults(ShapeOption option) {
    std::string out;
    for (auto& d : scenario_registry())
        if (auto v = entry_default(d, option); v && (d.options & option))
            out += fmt::format("{}{} {}", out.empty() ? "" : ", ", d.name, *v);
    return out;
}

std::string scenarios_reading(ShapeOption option) {
    std::string out;
    for (auto& d : scenario_registry())
        if (d.options & option) out += fmt::format("{}{}", out.empty() ? "" : ", ", d.name);
    return out;
}

unsigned shape_options_read(const ScenarioOptions& o) {
    const ScenarioDef* d = find_scenario(o.name);
    if (!d) return 0;
    return d->options_read ? d->options_read(o) : d->options;
}

double scenario_ops(const ScenarioResult& r) {
    double exchanges = 0;
    for (auto& p : r.latency) exchanges += double(p.exchanges);
    const ScenarioDef* d = find_scenario(r.scenario);
    switch (d ? d->ops : OpsUnit::kExchangesOrMessages) {
    case OpsUnit::kNone: return 0;
    case OpsUnit::kMessages: return double(r.messages);
    case OpsUnit::kConnections: return double(r.connections);
    case OpsUnit::kExchanges: return exchanges;
    case OpsUnit::kExchangesOrMessages: return r.latency.empty() ? double(r.messages) : exchanges;
    }
    return 0;
}

}  // namespace hotline
