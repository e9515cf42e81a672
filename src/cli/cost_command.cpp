// SPDX-License-Identifier: Apache-2.0
// `hotline cost`: per-hit cost of each program variant against an empty program.
#include <fmt/format.h>

#include <chrono>
#include <iostream>
#include <thread>

#include "commands.hpp"
#include "hotline/probe/cost.hpp"
#include "hotline/session/tracing.hpp"
#include "hotline/report/output.hpp"
#include "hotline/base/util.hpp"
#include "hotline/workload/workload.hpp"

namespace hotline::cli {

namespace {

struct CostWorkload {
    bool churn = false;
    bool pty = false;
};

Result<CostWorkload> parse_workload(const std::string& w) {
    CostWorkload out;
    out.churn = w == "churn+pty" || w == "churn" || w == "churn-split";
    out.pty = w == "churn+pty" || w == "pty";
    if (!out.churn && !out.pty && w != "none")
        return make_error(fmt::format("unknown workload \"{}\"; use churn+pty, churn, churn-split, pty or none", w),
                          EINVAL);
    return out;
}

// The built-in workload for `seconds`.  The churn queues work only now and then:
// the pty writer gives workqueue_queue_work enough hits to price.
Status run_builtin_workload(const CostArgs& a, CostWorkload wl, const Topology& topo, double seconds) {
    std::unique_ptr<ChurnWorkload> churn;
    std::unique_ptr<PtyWorkload> pty;
    if (wl.churn) {
        ChurnOptions o;
        o.cpus = topo.cpus;
        o.split = a.workload == "churn-split";
        auto w = ChurnWorkload::start(o);
        if (!w) return w.error();
        churn = std::move(*w);
    }
    if (wl.pty) {
        PtyOptions o;
        o.cpus = topo.cpus;
        auto w = PtyWorkload::start(o);
        if (!w) return w.error();
        pty = std::move(*w);
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    if (churn) churn->stop();
    if (pty) {
        pty->stop();
        if (!pty->error().empty()) return make_error(pty->error(), EIO);
    }
    return ok_status();
}

// One variant's cell: "ns ratio x", with "!" and a line in `misses` when over budget.
std::string cost_cell(const CostRow& r, const std::string& v, double seconds, std::vector<std::string>& misses) {
    const CostVariant* x = r.find(v);
    if (!x || !x->run_cnt) return "-";
    double ratio = r.ratio(v);
    bool over = ratio > 0 && ratio > cost_budget(v);
    // What a miss costs in all: the extra time per hit times the hits per second.
    if (over)
        misses.push_back(fmt::format(
            "{} {} on {}: {:.0f} ns over the empty program per hit at {:.0f} hits/s = {:.1f} us of CPU per "
            "second ({:.4f}% of one core)",
            r.target, v, r.attach, x->ns_per_run() - r.find("empty")->ns_per_run(), r.hits_per_s(seconds),
            r.extra_ns_per_s(v, seconds) / 1e3, r.extra_ns_per_s(v, seconds) / 1e7));
    return ratio > 0 ? fmt::format("{:.0f} {:.2f}x{}", x->ns_per_run(), ratio, over ? "!" : "")
                     : fmt::format("{:.0f}", x->ns_per_run());
}

nlohmann::json row_json(const CostRow& r, double seconds) {
    nlohmann::json vs = nlohmann::json::array();
    for (auto& v : r.variants)
        vs.push_back({{"variant", v.name},
                      {"program", v.program},
                      {"run_cnt", v.run_cnt},
                      {"run_time_ns", v.run_time_ns},
                      {"ns_per_run", v.ns_per_run()},
                      {"ratio_to_empty", v.name == "empty" ? 1.0 : r.ratio(v.name)},
                      {"extra_cpu_ns_per_s", v.name == "empty" ? 0.0 : r.extra_ns_per_s(v.name, seconds)},
                      {"budget", cost_budget(v.name)}});
    return {{"target", r.target}, {"attach", r.attach}, {"mechanism", to_string(r.mechanism)},
            {"hits_per_s", r.hits_per_s(seconds)}, {"variants", vs}};
}

// Prints the table (or the JSON document); true when a variant is over its budget.
bool print_report(const CostReport& rep, bool json) {
    if (!json) {
        std::cout << fmt::format("per-hit cost over {:.1f} s, every variant attached at once (ns per run; x = over "
                                 "the empty program)\n",
                                 rep.seconds);
        std::cout << fmt::format("  {:<16} {:<30} {:>8} {:>9} {:>16} {:>16} {:>16}\n", "TARGET", "ATTACH POINT",
                                 "HITS/S", "EMPTY", "COUNT", "LATENCY", "HANDOFF");
    }
    std::vector<std::string> misses;
    nlohmann::json rows = nlohmann::json::array();
    for (auto& r : rep.rows) {
        const CostVariant* empty = r.find("empty");
        std::string e = empty && empty->run_cnt ? fmt::format("{:.0f}", empty->ns_per_run()) : "-";
        std::string cc = cost_cell(r, "count", rep.seconds, misses), ll = cost_cell(r, "latency", rep.seconds, misses),
                    hh = cost_cell(r, "handoff", rep.seconds, misses);
        if (!json)
            std::cout << fmt::format("  {:<16} {:<30} {:>8.0f} {:>9} {:>16} {:>16} {:>16}\n", r.target, r.attach,
                                     r.hits_per_s(rep.seconds), e, cc, ll, hh);
        rows.push_back(row_json(r, rep.seconds));
    }
    const bool missed = !misses.empty();
    if (json) {
        nlohmann::json j = json_document(kCostSchema);
        j.update({{"seconds", rep.seconds}, {"rows", rows}, {"notes", rep.notes}, {"misses", misses},
                  {"budgets", {{"count", kCountBudget}, {"latency", kLatencyBudget}, {"handoff", kHandoffBudget}}},
                  {"within_budget", !missed}});
        std::cout << document_text(j, 2);
        return missed;
    }
    std::cout << fmt::format("budgets: count <= {}x, latency (entry+exit) <= {}x, handoff <= {}x the empty "
                             "program; ! marks a miss\n",
                             kCountBudget, kLatencyBudget, kHandoffBudget);
    for (auto& m : misses) std::cout << "miss: " << m << "\n";
    for (auto& n : rep.notes) std::cout << "note: " << n << "\n";
    return missed;
}

}  // namespace

int run_cost(const CostArgs& a) {
    auto duration = parse_duration(a.duration);
    if (!duration) return fail(duration.error(), kExitUsage);
    if (*duration <= 0) return fail(make_error("--duration must be positive: nothing is measured over 0 s"), kExitUsage);
    auto setup = check_tracing_options(attach_options(a.targets, a.funcs, a.mechanism));
    if (!setup) return fail(setup.error(), kExitUsage);
    auto wl = parse_workload(a.workload);
    if (!wl) return fail(wl.error(), kExitUsage);
    auto topo = read_topology();
    if (!topo) return fail(topo.error(), kExitError);
    KernelInfo k = probe_kernel();
    int child_status = 0;
    auto work = [&]() -> Status {
        if (a.command.empty()) return run_builtin_workload(a, *wl, *topo, *duration);
        auto c = ChildProcess::spawn(a.command);
        if (!c) return c.error();
        child_status = c->wait();
        return ok_status();
    };
    auto rep = measure_cost(setup->session, k, *topo, work);
    if (!rep) return fail(rep.error(), kExitError);
    bool missed = print_report(*rep, a.json);
    if (!a.command.empty() && child_status) fmt::print(stderr, "hotline: the command exited with {}\n", child_status);
    return missed && a.strict ? kExitBudget : kExitOk;
}

}  // namespace hotline::cli
