// SPDX-License-Identifier: Apache-2.0
// Can any counter layout count a live skb tracepoint within 1.2x an empty
// program?  The dst_release proxy's body on its per-CPU map and the
// alternatives (a CPU-indexed array, global data by CPU, and the instructions
// with no memory at all) on tp_btf/consume_skb (tests/bench/bpf/layouts.bpf.c), attached
// behind a lead in forward and reverse order, driven by the loopback connection
// churn.  Prints ns per run and the ratio to the empty program; never asserts on
// speed, fails when a program never ran.
//
//   bench_counter_layouts [--smoke] [--rounds N] [--duration S] [--json FILE]
#include <bpf/bpf.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.hpp"
#include "lead_bench.hpp"
#include "hotline/kernel/kernel.hpp"
#include "hotline/workload/workload.hpp"
#include "layouts.skel.h"
#include "hotline/probe/bpf_skeleton.hpp"

using namespace hotline::bench;
using nlohmann::json;

namespace {

const std::vector<Prog> kPrograms = {
    {"hl_lay_empty", "empty program"},
    {"hl_lay_insns", "the refcounted-dst test, no memory"},
    {"hl_lay_percpu", "per-CPU array slot (what ships)"},
    {"hl_lay_percpu_again", "the same per-CPU line again (warm)"},
    {"hl_lay_cpu_array", "array slot by CPU (lookup)"},
    {"hl_lay_global", "global data slot by CPU (no lookup)"},
};

}  // namespace

int main(int argc, char** argv) {
    RoundsOptions opt;
    if (int rc = parse_rounds("bench_counter_layouts", "BPF", argc, argv, opt); rc >= 0) return rc;
    const int rounds = opt.rounds;
    std::vector<std::string> failures;  // parts that measured nothing
    const double secs = opt.secs;
    auto topo = hotline::read_topology();
    if (!topo) {
        fmt::print(stderr, "bench_counter_layouts: {}\n", topo.error().message());
        return 1;
    }
    hotline::install_libbpf_logger();
    int stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
    if (stats_fd < 0) {
        fmt::print(stderr, "bench_counter_layouts: cannot enable BPF run statistics: {}\n", std::strerror(errno));
        return 1;
    }

    // [order][program] -> ns/run and ratio to the empty program, per round
    std::map<std::string, std::map<std::string, std::vector<double>>> ns, ratio;
    std::vector<double> rate;
    for (int r = 0; r < rounds; ++r) {
        for (const char* order : {"forward", "reverse"}) {
            hotline::LibbpfCapture cap;
            hotline::SkelGuard<hl_layouts_bpf> s(hl_layouts_bpf::open_and_load());
            if (!s) {
                fmt::print(stderr, "bench_counter_layouts: load: {}\n{}\n", std::strerror(errno), cap.tail(8));
                return 1;
            }
            auto seq = lead_then("hl_lay_lead", kPrograms, std::string(order) == "reverse");
            auto attached = attach_in_order(s->obj, seq, "bench_counter_layouts");
            if (!attached) return 1;
            std::vector<bpf_link*>& links = *attached;
            hotline::ChurnOptions co;
            co.cpus = topo->cpus;
            auto t0 = std::chrono::steady_clock::now();
            auto churn = hotline::ChurnWorkload::start(co);
            if (!churn) {
                fmt::print(stderr, "bench_counter_layouts: {}\n", churn.error().message());
                return 1;
            }
            std::this_thread::sleep_for(std::chrono::duration<double>(secs));
            (*churn)->stop();
            double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            std::map<std::string, double> per;
            std::uint64_t runs = 0;
            for (auto* n : seq) {
                double x = 0;
                if (std::uint64_t c = run_stats(s->obj, n, &x)) {
                    per[n] = x;
                    ns[order][n].push_back(x);
                    runs = c;
                } else {
                    failures.push_back(fmt::format("{} round {}: {} never ran", order, r, n));
                }
            }
            if (per.count("hl_lay_empty") && per["hl_lay_empty"] > 0)
                for (auto& [n, v] : per) ratio[order][n].push_back(v / per["hl_lay_empty"]);
            rate.push_back(el > 0 ? double(runs) / el : 0);
            for (auto* l : links) bpf_link__destroy(l);
        }
    }
    close(stats_fd);

    Spread hz = spread(rate);
    json out = {{"rounds", rounds}, {"duration_s", secs}, {"attach", "tp_btf/consume_skb"}, {"hits_per_s", hz.median}};
    fmt::print("Counter layouts on tp_btf/consume_skb at {:.0f} hits/s (loopback churn): ns per run and ratio to\n"
               "the empty program, median [min-max] of {} rounds x {:.1f} s, behind a lead program\n\n",
               hz.median, rounds, secs);
    fmt::print("  {:<20} {:<36} {:>16} {:>18} {:>16} {:>18}\n", "PROGRAM", "WHAT", "FORWARD", "x EMPTY", "REVERSE",
               "x EMPTY");
    for (auto& p : kPrograms) {
        fmt::print("  {:<20} {:<36} {:>16} {:>18} {:>16} {:>18}\n", p.name, p.what,
                   fmt_spread(spread(ns["forward"][p.name]), 0), fmt_spread(spread(ratio["forward"][p.name]), 2),
                   fmt_spread(spread(ns["reverse"][p.name]), 0), fmt_spread(spread(ratio["reverse"][p.name]), 2));
        for (const char* order : {"forward", "reverse"})
            out[order][p.name] = {{"ns", to_json(spread(ns[order][p.name]))},
                                  {"ratio_to_empty", to_json(spread(ratio[order][p.name]))}};
    }
    fmt::print("\nThe counting budget is 1.2x the empty program. The first counter after the lead pays for\n"
               "its cold line; a line just touched by the program before costs least.\n");
    return finish("bench_counter_layouts", out, opt.json_path, {"forward", "reverse", "hits_per_s"}, failures);
}
