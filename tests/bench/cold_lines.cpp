// SPDX-License-Identifier: Apache-2.0
// Where a counting program's time goes on a live tracepoint: programs that differ
// by one cache line touched (tests/bench/bpf/lines.bpf.c), attached behind a lead program in
// forward and reverse order on workqueue_queue_work, then programs that differ by the
// pages they touch and how recently each was touched, driven by vm.stat_refresh
// writes back to back (each write waits for the work on every CPU)
// and one write every 20 ms, where more of each line has gone cold between hits.
// Prints ns per run, never asserts on speed; fails when a program never ran.
//
//   bench_cold_lines [--smoke] [--rounds N] [--duration S] [--json FILE]
#include <bpf/bpf.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
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
#include "lines.skel.h"
#include "hotline/probe/bpf_skeleton.hpp"

using namespace hotline::bench;
using nlohmann::json;

namespace {

// Each write queues the vmstat refresh work on every CPU from the writer's CPU.
void drive(std::atomic<bool>& stop, bool sparse, std::uint64_t& writes) {
    int fd = open("/proc/sys/vm/stat_refresh", O_WRONLY | O_CLOEXEC);
    if (fd < 0) return;
    while (!stop.load(std::memory_order_relaxed)) {
        if (pwrite(fd, "1\n", 2, 0) > 0) ++writes;
        if (sparse) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    close(fd);
}

// In forward order each program adds one thing to its predecessor.
const std::vector<Prog> kForward = {
    {"hl_ln_empty", "empty program"},
    {"hl_ln_line", "+ one RMW of this CPU's line (cold)"},
    {"hl_ln_line_again", "+ the same line again (warm)"},
    {"hl_ln_rodata", "+ one .rodata value"},
    {"hl_ln_count", "the proxies' counting body (own `hits`)"},
};

// Pages: attached after the lines' programs, each on maps of its own.
const std::vector<Prog> kPages = {
    {"hl_ln_pg_vm_1page", "6 lines of 1 vmalloc'd page"},
    {"hl_ln_pg_vm_6pages", "1 line on each of 6 vmalloc'd pages"},
    {"hl_ln_pg_km_1page", "6 lines of 1 direct-mapped page"},
    {"hl_ln_pg_km_6pages", "1 line on each of 6 direct-mapped pages"},
    {"hl_ln_pg_pc_3maps", "1 line in each of 3 per-CPU maps"},
    {"hl_ln_pg_pc_1map", "the same 3 lines in 1 per-CPU map"},
    {"hl_ln_pg_random", "a random number, no line"},
    {"hl_ln_pg_km_28k", "1 line, random page of 28 KiB direct-mapped"},
    {"hl_ln_pg_vm_32k", "1 line, random page of 32 KiB vmalloc'd"},
    {"hl_ln_pg_vm_64k", "1 line, random page of 64 KiB vmalloc'd"},
    {"hl_ln_pg_km_4x28k", "1 line, random page of 4 x 28 KiB direct-mapped"},
    {"hl_ln_pg_vm_128k", "1 line, random page of 128 KiB vmalloc'd"},
    {"hl_ln_pg_km_16x28k", "1 line, random page of 16 x 28 KiB direct-mapped"},
    {"hl_ln_pg_vm_512k", "1 line, random page of 512 KiB vmalloc'd"},
    {"hl_ln_pg_vm_1m", "1 line, random page of 1 MiB vmalloc'd"},
    {"hl_ln_pg_vm_16m", "1 line, random page of 16 MiB vmalloc'd"},
};

}  // namespace

int main(int argc, char** argv) {
    RoundsOptions opt;
    if (int rc = parse_rounds("bench_cold_lines", "BPF, vm.stat_refresh", argc, argv, opt); rc >= 0) return rc;
    const int rounds = opt.rounds;
    std::vector<std::string> failures;  // parts that measured nothing
    const double secs = opt.secs;
    hotline::install_libbpf_logger();
    int stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
    if (stats_fd < 0) {
        fmt::print(stderr, "bench_cold_lines: cannot enable BPF run statistics: {}\n", std::strerror(errno));
        return 1;
    }

    // [mode][order][program] -> ns/run of each round
    std::map<std::string, std::map<std::string, std::map<std::string, std::vector<double>>>> ns;
    std::map<std::string, std::vector<double>> rate;
    for (int r = 0; r < rounds; ++r) {
        for (const char* mode : {"back-to-back", "sparse"}) {
            for (const char* order : {"forward", "reverse"}) {
                hotline::LibbpfCapture cap;
                hotline::SkelGuard<hl_lines_bpf> s(hl_lines_bpf::open_and_load());
                if (!s) {
                    fmt::print(stderr, "bench_cold_lines: load: {}\n{}\n", std::strerror(errno), cap.tail(8));
                    return 1;
                }
                auto seq = lead_then("hl_ln_lead", kForward, std::string(order) == "reverse");
                for (auto& p : kPages) seq.push_back(p.name);
                auto attached = attach_in_order(s->obj, seq, "bench_cold_lines");
                if (!attached) return 1;
                std::vector<bpf_link*>& links = *attached;
                std::atomic<bool> stop{false};
                std::uint64_t writes = 0;
                auto t0 = std::chrono::steady_clock::now();
                std::thread drv(drive, std::ref(stop), std::string(mode) == "sparse", std::ref(writes));
                std::this_thread::sleep_for(std::chrono::duration<double>(secs));
                stop = true;
                drv.join();
                double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                std::uint64_t runs = 0;
                for (auto* n : seq) {
                    double per = 0;
                    if (std::uint64_t c = run_stats(s->obj, n, &per)) {
                        ns[mode][order][n].push_back(per);
                        runs = c;
                    } else {
                        failures.push_back(fmt::format("{} {} round {}: {} never ran", mode, order, r, n));
                    }
                }
                rate[mode].push_back(el > 0 ? double(runs) / el : 0);
                for (auto* l : links) bpf_link__destroy(l);
            }
        }
    }
    close(stats_fd);

    json out = {{"rounds", rounds}, {"duration_s", secs}, {"attach", "tp_btf/workqueue_queue_work"}};
    fmt::print("Cold lines on tp_btf/workqueue_queue_work: ns per run, median [min-max] of {} rounds x {:.1f} s\n",
               rounds, secs);
    fmt::print("(each column: the programs attached in that order behind a lead program; the lead's own\n"
               " cost is the price of running first)\n");
    for (const char* mode : {"back-to-back", "sparse"}) {
        Spread hz = spread(rate[mode]);
        fmt::print("\n{} driver: {:.0f} hits/s per program\n", mode, hz.median);
        auto cell = [&](const char* order, const char* n) { return fmt_spread(spread(ns[mode][order][n]), 0); };
        auto row = [&](const char* name, const char* what) {
            fmt::print("  {:<18} {:<44} {:>22} {:>22}\n", name, what, cell("forward", name), cell("reverse", name));
        };
        fmt::print("  {:<18} {:<44} {:>22} {:>22}\n", "PROGRAM", "WHAT", "FORWARD", "REVERSE");
        row("hl_ln_lead", "empty, attached first");
        for (auto& p : kForward) row(p.name, p.what);
        fmt::print("  pages (after the programs above, in this order either way):\n");
        for (auto& p : kPages) row(p.name, p.what);
        json m = {{"hits_per_s", hz.median}};
        for (const char* order : {"forward", "reverse"})
            for (auto& [n, v] : ns[mode][order]) m[order][n] = to_json(spread(v));
        out[mode] = m;
    }
    fmt::print("\nIn reverse order the counting body runs first after the lead and pays for its cold lines;\n"
               "programs that follow on lines already touched cost about as much as the empty one.\n"
               "A page costs more the longer since it was last touched: a random page of a larger region.\n");
    return finish("bench_cold_lines", out, opt.json_path, {"back-to-back", "sparse"}, failures);
}
