// SPDX-License-Identifier: Apache-2.0
// The hard interrupts behind work.<func>.queued_per_irq (the workqueue
// attribution counts irq_handler_entry per CPU) against the kernel's own
// per-line counts in /proc/interrupts, read around the recording, and the
// tracepoint's own count, from perf inside it:
//
//   read A0; hotline record -- perf stat -a -A -e irq:irq_handler_entry -- direct disk reads; read A1
//
// An interrupt is counted in /proc/interrupts once, and the tracepoint fires
// once per handler (action) the line has.  So per CPU
//   perf's count inside  <=  hotline + its reported misses  <=  sum over lines of (A1 - A0) x actions,
// exactly: a lost interrupt breaks the left side, a double count the right.
// Only numbered lines count: the architecture's own vectors (LOC, RES, CAL, ...)
// do not pass through irq_handler_entry.  The left side is perf's tracepoint
// count, not /proc/interrupts read inside: a line's interrupt is counted there
// even when no handler runs (handle_fasteoi_irq on a disabled line), which
// put /proc/interrupts one above the handler entries in a fresh-clone run.
//
// Reads, not writes: a direct write's completion has the submitting task queue
// block-layer work, and an interrupt arriving while a BPF program (hotline's
// own, on workqueue_queue_work) runs on that CPU does not run the
// irq_handler_entry program, with no miss counted (6.18: 2-10 of ~780
// interrupts short of perf's irq:irq_handler_entry inside the window with
// writes, none in 8 runs with reads).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "host_util.hpp"

using namespace hosttest;

namespace {

// /proc/interrupts: numbered line -> count per CPU column.
using IrqCounts = std::map<int, std::vector<std::uint64_t>>;

IrqCounts parse_interrupts(const std::string& text) {
    IrqCounts out;
    std::istringstream in(text);
    std::string header, line;
    std::getline(in, header);
    std::size_t ncpu = 0;
    for (std::istringstream h(header); h >> line;) ncpu += line.rfind("CPU", 0) == 0;
    while (std::getline(in, line)) {
        std::istringstream ls(line);
        std::string label;
        ls >> label;
        if (label.empty() || label.back() != ':' || label.find_first_not_of("0123456789") != label.size() - 1) continue;
        auto& v = out[std::stoi(label)];
        for (std::size_t c = 0; c < ncpu; ++c) {
            std::uint64_t n = 0;
            ls >> n;
            v.push_back(n);
        }
    }
    return out;
}

// Handlers registered on an IRQ line (/sys/kernel/irq/N/actions, comma separated).
std::uint64_t actions_of(int irq) {
    std::string a = slurp("/sys/kernel/irq/" + std::to_string(irq) + "/actions");
    while (!a.empty() && (a.back() == '\n' || a.back() == ' ')) a.pop_back();
    if (a.empty()) return 0;
    std::uint64_t n = 1;
    for (char ch : a) n += ch == ',';
    return n;
}

// Per CPU: the interrupts counted between two reads, each line weighted.
std::vector<std::uint64_t> per_cpu(const IrqCounts& before, const IrqCounts& after, bool by_actions) {
    std::vector<std::uint64_t> out;
    for (auto& [irq, counts] : after) {
        auto b = before.find(irq);
        std::uint64_t weight = by_actions ? std::max<std::uint64_t>(1, actions_of(irq)) : 1;
        if (out.size() < counts.size()) out.resize(counts.size(), 0);
        for (std::size_t c = 0; c < counts.size(); ++c) {
            std::uint64_t was = b != before.end() && c < b->second.size() ? b->second[c] : 0;
            out[c] += (counts[c] - std::min(counts[c], was)) * weight;
        }
    }
    return out;
}

}  // namespace

TEST(IrqOracleHost, HandlerEntriesLieBetweenTheInterruptCountsAroundAndInsideTheRecording) {
    if (geteuid() != 0) GTEST_FAIL() << "host tests need root (run them as CI does: as root)";
    if (run("perf --version").rc != 0) GTEST_FAIL() << "perf is missing: scripts/setup installs linux-perf";
    std::string rec = temp_path("irq.json"), pi = temp_path("irq-perf.txt");
    // Direct reads of a file on a disk, written beforehand: each completes by interrupt.
    std::string data = "/var/tmp/hotline-irq-" + std::to_string(getpid());
    ASSERT_EQ(run("dd if=/dev/urandom of=" + data + " bs=4096 count=1024 conv=fsync status=none").rc, 0);
    IrqCounts a0 = parse_interrupts(slurp("/proc/interrupts"));
    CmdResult r = run(hosttest::hotline() + " record -q -t queue_work_on -m tracepoint --no-handoffs -o " + rec +
                      " -- " + perf_stat(pi, {"irq:irq_handler_entry"}) + "dd if=" + data +
                      " of=/dev/null bs=4096 iflag=direct status=none");
    IrqCounts a1 = parse_interrupts(slurp("/proc/interrupts"));
    ASSERT_EQ(r.rc, 0) << r.err;
    auto j = load_json(rec);
    PerfCounts inner = read_perf(pi);
    auto outer = per_cpu(a0, a1, true);
    for (auto& f : {rec, pi, data}) unlink(f.c_str());
    std::uint64_t missed = 0;
    for (const auto& cost : j["cost"]) missed += cost.value("recursion_misses", std::uint64_t(0));
    const auto& wq = j["totals"]["workqueue"];
    ASSERT_TRUE(wq.is_object()) << "no workqueue attribution in the recording";
    auto irqs = wq["irqs"].get<std::vector<std::uint64_t>>();
    std::uint64_t inside = 0, total = 0;
    for (std::size_t c = 0; c < outer.size(); ++c) {
        std::uint64_t h = c < irqs.size() ? irqs[c] : 0, in = inner.on("irq:irq_handler_entry", int(c));
        inside += in;
        total += h;
        std::printf("CPU %zu: %llu handler entries perf counted inside <= %llu hotline (+ %llu missed) <= %llu "
                    "interrupts around (x handlers)\n",
                    c, (unsigned long long)in, (unsigned long long)h, (unsigned long long)missed,
                    (unsigned long long)outer[c]);
        EXPECT_LE(in, h + missed) << "CPU " << c
                                  << ": fewer handler entries than perf counted inside the recording, and not "
                                     "reported as missed";
        EXPECT_LE(h, outer[c]) << "CPU " << c << ": more handler entries than interrupts (x handlers) around it";
    }
    EXPECT_GT(inside, 0u) << "the direct reads raised no interrupt";
    // queued_per_irq is the work functions' counts over those interrupts.
    const auto& metrics = j["analysis"]["diagnosis"]["metrics"];
    for (auto& [func, n] : wq["work_functions"].items()) {
        std::string m = "work." + func + ".queued_per_irq";
        ASSERT_TRUE(metrics.contains(m)) << m << " missing: " << metrics.dump();
        // Documents carry 12 significant digits (document_text).
        const double want = n.get<double>() / double(total);
        EXPECT_NEAR(metrics[m].get<double>(), want, 1e-11 * want) << m;
    }
}
