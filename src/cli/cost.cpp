// `hotline cost`: per-hit cost of each program variant against an empty program.
#include <fmt/format.h>

#include <chrono>
#include <iostream>
#include <thread>

#include "commands.hpp"
#include "hotline/cost.hpp"
#include "hotline/output.hpp"
#include "hotline/util.hpp"
#include "hotline/workload.hpp"

namespace hotline::cli {

int run_cost(const CostArgs& a) {
    double duration = 5;
    if (auto d = parse_duration(a.duration); !d) {
        fmt::print(stderr, "hotline: {}\n", d.error().message());
        return kExitUsage;
    } else {
        duration = *d;
    }
    auto forced = parse_forced_mechanism(a.mechanism);
    if (!forced) {
        fmt::print(stderr, "hotline: {}\n", forced.error().message());
        return kExitUsage;
    }
    if (auto t = resolve_targets(a.targets, a.funcs); !t) {
        fmt::print(stderr, "hotline: {}\n", t.error().message());
        return kExitUsage;
    }
    const bool churn_on = a.workload == "churn+pty" || a.workload == "churn" || a.workload == "churn-split";
    const bool pty_on = a.workload == "churn+pty" || a.workload == "pty";
    if (!churn_on && !pty_on && a.workload != "none") {
        fmt::print(stderr, "hotline: unknown workload \"{}\"; use churn+pty, churn, churn-split, pty or none\n",
                   a.workload);
        return kExitUsage;
    }
    auto topo = read_topology();
    if (!topo) {
        fmt::print(stderr, "hotline: {}\n", topo.error().message());
        return kExitError;
    }
    KernelInfo k = probe_kernel();
    CostOptions co;
    co.targets = a.targets;
    co.funcs = a.funcs;
    co.forced = *forced;
    int child_status = 0;
    auto work = [&]() -> Status {
        if (!a.command.empty()) {
            auto c = ChildProcess::spawn(a.command);
            if (!c) return c.error();
            child_status = c->wait();
            return ok_status();
        }
        std::unique_ptr<ChurnWorkload> churn;
        std::unique_ptr<PtyWorkload> pty;
        if (churn_on) {
            ChurnOptions o;
            o.cpus = topo->cpus;
            o.split = a.workload == "churn-split";
            auto w = ChurnWorkload::start(o);
            if (!w) return w.error();
            churn = std::move(*w);
        }
        // The churn queues work only now and then: the pty writer gives
        // workqueue_queue_work enough hits to price.
        if (pty_on) {
            PtyOptions o;
            o.cpus = topo->cpus;
            auto w = PtyWorkload::start(o);
            if (!w) return w.error();
            pty = std::move(*w);
        }
        std::this_thread::sleep_for(std::chrono::duration<double>(duration));
        if (churn) churn->stop();
        if (pty) {
            pty->stop();
            if (!pty->error().empty()) return make_error(pty->error(), EIO);
        }
        return ok_status();
    };
    auto rep = measure_cost(co, k, *topo, work);
    if (!rep) {
        fmt::print(stderr, "hotline: {}\n", rep.error().message());
        return kExitError;
    }
    bool missed = false;
    nlohmann::json rows = nlohmann::json::array();
    if (!a.json) {
        std::cout << fmt::format("per-hit cost over {:.1f} s, every variant attached at once (ns per run; x = over "
                                 "the empty program)\n",
                                 rep->seconds);
        std::cout << fmt::format("  {:<16} {:<30} {:>8} {:>9} {:>16} {:>16} {:>16}\n", "TARGET", "ATTACH POINT",
                                 "HITS/S", "EMPTY", "COUNT", "LATENCY", "HANDOFF");
    }
    // What a miss costs in all: the extra time per hit times the hits per second.
    std::vector<std::string> misses;
    for (auto& r : rep->rows) {
        auto cell = [&](const std::string& v) -> std::string {
            const CostVariant* x = r.find(v);
            if (!x || !x->run_cnt) return "-";
            double ratio = r.ratio(v);
            bool over = ratio > 0 && ratio > cost_budget(v);
            missed |= over;
            if (over)
                misses.push_back(fmt::format(
                    "{} {} on {}: {:.0f} ns over the empty program per hit at {:.0f} hits/s = {:.1f} us of CPU per "
                    "second ({:.4f}% of one core)",
                    r.target, v, r.attach, x->ns_per_run() - r.find("empty")->ns_per_run(), r.hits_per_s(rep->seconds),
                    r.extra_ns_per_s(v, rep->seconds) / 1e3, r.extra_ns_per_s(v, rep->seconds) / 1e7));
            return ratio > 0 ? fmt::format("{:.0f} {:.2f}x{}", x->ns_per_run(), ratio, over ? "!" : "")
                             : fmt::format("{:.0f}", x->ns_per_run());
        };
        std::string e = r.find("empty") && r.find("empty")->run_cnt ? fmt::format("{:.0f}", r.find("empty")->ns_per_run())
                                                                    : "-";
        std::string cc = cell("count"), ll = cell("latency"), hh = cell("handoff");
        if (!a.json)
            std::cout << fmt::format("  {:<16} {:<30} {:>8.0f} {:>9} {:>16} {:>16} {:>16}\n", r.target, r.attach,
                                     r.hits_per_s(rep->seconds), e, cc, ll, hh);
        nlohmann::json vs = nlohmann::json::array();
        for (auto& v : r.variants)
            vs.push_back({{"variant", v.name},
                          {"program", v.program},
                          {"run_cnt", v.run_cnt},
                          {"run_time_ns", v.run_time_ns},
                          {"ns_per_run", v.ns_per_run()},
                          {"ratio_to_empty", v.name == "empty" ? 1.0 : r.ratio(v.name)},
                          {"extra_cpu_ns_per_s", v.name == "empty" ? 0.0 : r.extra_ns_per_s(v.name, rep->seconds)},
                          {"budget", cost_budget(v.name)}});
        rows.push_back({{"target", r.target}, {"attach", r.attach}, {"mechanism", to_string(r.mechanism)},
                        {"hits_per_s", r.hits_per_s(rep->seconds)}, {"variants", vs}});
    }
    if (a.json) {
        std::cout << nlohmann::json{{"seconds", rep->seconds}, {"rows", rows}, {"notes", rep->notes}, {"misses", misses},
                                    {"budgets", {{"count", kCountBudget}, {"latency", kLatencyBudget},
                                                 {"handoff", kHandoffBudget}}},
                                    {"within_budget", !missed}}
                         .dump(2)
                  << "\n";
    } else {
        std::cout << fmt::format("budgets: count <= {}x, latency (entry+exit) <= {}x, handoff <= {}x the empty "
                                 "program; ! marks a miss\n",
                                 kCountBudget, kLatencyBudget, kHandoffBudget);
        for (auto& m : misses) std::cout << "miss: " << m << "\n";
        for (auto& n : rep->notes) std::cout << "note: " << n << "\n";
    }
    if (!a.command.empty() && child_status) fmt::print(stderr, "hotline: the command exited with {}\n", child_status);
    return missed && a.strict ? kExitBudget : kExitOk;
}

}  // namespace hotline::cli
