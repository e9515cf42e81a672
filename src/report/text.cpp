// SPDX-License-Identifier: Apache-2.0
// Text renderers: the probe report, interval tables per node or CPU, bcc-style
// log2 histograms and the programs' own cost.
#include <fmt/format.h>

#include <algorithm>
#include <ostream>

#include "hotline/report/output.hpp"

namespace hotline {

void render_probe_text(std::ostream& os, const KernelInfo& k, const Topology& topo, const Plan& plan) {
    os << fmt::format("kernel      {} ({})\n", k.release, k.machine);
    os << fmt::format("BTF         {}\n", k.btf ? "yes (/sys/kernel/btf/vmlinux)" : "no");
    os << fmt::format("lockdown    {}\n", k.lockdown);
    std::string held, missing;
    for (auto& c : k.caps.held) held += (held.empty() ? "" : " ") + c;
    for (auto& c : k.caps.missing) missing += (missing.empty() ? "" : " ") + c;
    os << fmt::format("caps        {}held: {}{}\n", k.caps.root ? "root, " : "", held.empty() ? "none" : held,
                      missing.empty() ? "" : "; missing: " + missing);
    os << fmt::format("tracefs     {}\n", k.tracefs_mounted ? "mounted" : "not mounted");
    os << fmt::format("kprobes     {}\n", k.kprobes ? "yes" : "no (kernel built without kprobes)");
    os << fmt::format("PMU         {}\n", k.pmu ? "hardware events available" : "none (software cpu-clock only)");
    os << fmt::format("topology    {} CPUs, {} NUMA node{}\n", topo.cpus.size(), topo.nodes.size(),
                      topo.nodes.size() == 1 ? "" : "s");
    for (int n : topo.nodes) os << fmt::format("  node {}: cpus {}\n", n, format_cpulist(topo.cpus_of(n)));
    os << "\nplan\n";
    for (auto& t : plan.targets) {
        if (t.observable())
            os << fmt::format("  {:<16} {:<11} {:<8} {}\n", t.target, to_string(t.mechanism),
                              to_string(t.fidelity), t.attach);
        else
            os << fmt::format("  {:<16} {:<11} {:<8} {}\n", t.target, "unavailable", "-",
                              t.unavailable_reason);
        for (auto& r : t.rejected) {
            std::string reason = r.reason;
            std::replace(reason.begin(), reason.end(), '\n', ' ');
            os << fmt::format("  {:<16}   {}: {}\n", "", to_string(r.mechanism), reason);
        }
    }
}

namespace {

struct Row {
    const TargetCounters* t;
    std::uint64_t calls;
    std::uint64_t samples;  // sampling total on the same CPUs
};

void render_rows(std::ostream& os, const std::vector<Row>& rows, double secs) {
    os << fmt::format("  {:<16} {:<11} {:<8} {:>14}  {}\n", "TARGET", "MECHANISM", "FIDELITY", "CALLS/S", "");
    for (auto& r : rows) {
        double rate = secs > 0 ? double(r.calls) / secs : 0;
        std::string note;
        if (r.t->mechanism == Mechanism::kSampling) {
            double share = r.samples ? 100.0 * double(r.calls) / double(r.samples) : 0;
            os << fmt::format("  {:<16} {:<11} {:<8} {:>14}  {} samples, {:.3f}% of CPU time\n",
                              r.t->target, "sampling", "sampled", "-", r.calls, share);
            continue;
        }
        os << fmt::format("  {:<16} {:<11} {:<8} {:>14.1f}\n", r.t->target, to_string(r.t->mechanism),
                          to_string(r.t->fidelity), rate);
    }
}

std::uint64_t sum_cpus(const std::vector<std::uint64_t>& v, const std::vector<int>& cpus) {
    std::uint64_t s = 0;
    for (int c : cpus)
        if (c >= 0 && std::size_t(c) < v.size()) s += v[c];
    return s;
}

}  // namespace

void render_interval_text(std::ostream& os, const Interval& iv, const Topology& topo, bool per_cpu,
                          const std::string& title) {
    double secs = iv.seconds();
    os << fmt::format("{} ({:.2f} s)\n", title, secs);
    std::vector<std::pair<std::string, std::vector<int>>> groups;
    if (per_cpu) {
        for (int c : topo.cpus) groups.push_back({fmt::format("CPU {} (node {})", c, topo.node_of(c)), {c}});
    } else {
        for (int n : topo.nodes)
            groups.push_back({fmt::format("node {} (cpus {})", n, format_cpulist(topo.cpus_of(n))), topo.cpus_of(n)});
    }
    for (auto& [label, cpus] : groups) {
        os << label << "\n";
        std::vector<Row> rows;
        for (auto& t : iv.d.targets) rows.push_back({&t, sum_cpus(t.calls, cpus), sum_cpus(iv.d.samples_total, cpus)});
        render_rows(os, rows, secs);
    }
    os << "\n";
}

void render_log2_hist(std::ostream& os, const Log2Hist& h, const std::string& unit) {
    int first = -1, last = -1;
    std::uint64_t max = 0;
    for (int i = 0; i < HL_HIST_SLOTS; ++i) {
        if (!h[i]) continue;
        if (first < 0) first = i;
        last = i;
        max = std::max(max, h[i]);
    }
    if (first < 0) {
        os << "  (no samples)\n";
        return;
    }
    constexpr int kWidth = 40;
    os << fmt::format("{:>20}{:<10} : {:<9} {}\n", unit, "", "count", "distribution");
    for (int i = first; i <= last; ++i) {
        std::uint64_t lo = hist_slot_low(i);
        std::uint64_t hi = (std::uint64_t(1) << (i + 1)) - 1;
        int stars = max ? int((h[i] * kWidth + max - 1) / max) : 0;
        if (!h[i]) stars = 0;
        std::string bar(std::size_t(stars), '*');
        if (i == HL_HIST_SLOTS - 1)
            os << fmt::format("{:>20} -> {:<10} : {:<9} |{:<40}|\n", lo, "inf", h[i], bar);
        else
            os << fmt::format("{:>20} -> {:<10} : {:<9} |{:<40}|\n", lo, hi, h[i], bar);
    }
}

void render_cost_text(std::ostream& os, const std::vector<ProgCost>& cost, double seconds) {
    os << "probe cost (BPF run statistics of hotline's own programs)\n";
    std::size_t target_w = 16, program_w = 20;
    for (auto& c : cost) {
        target_w = std::max(target_w, c.target.size());
        program_w = std::max(program_w, c.program.size());
    }
    os << fmt::format("  {:<{}} {:<{}} {:>12} {:>10} {:>10} {:>8}\n", "TARGET", target_w, "PROGRAM", program_w, "RUNS",
                      "NS/RUN", "CPU %", "DROPS");
    for (auto& c : cost) {
        double cpu = seconds > 0 ? 100.0 * double(c.run_time_ns) / (seconds * 1e9) : 0;
        os << fmt::format("  {:<{}} {:<{}} {:>12} {:>10.1f} {:>10.4f} {:>8}\n", c.target, target_w, c.program,
                          program_w, c.run_cnt, c.ns_per_run(), cpu, c.recursion_misses);
    }
    std::uint64_t runs = 0, timed = 0;
    for (auto& c : cost) {
        runs += c.run_cnt;
        timed += c.timed_runs;
    }
    if (runs > 0 && timed < runs)
        os << fmt::format("  runs and CPU % scaled from the {:.1f}% of runs the kernel timed (its run statistics are on "
                          "for 100 ms at a random point of each second)\n",
                          100.0 * double(timed) / double(runs));
    // Any stretch of a second holds part of a window; a shorter one may hold none.
    if (!cost.empty() && runs == 0 && seconds < 1.0)
        os << "  no run timed: the run statistics are on for 100 ms at a random point of each second, which a "
              "session under a second can miss (`hotline cost` times every run)\n";
}

}  // namespace hotline

namespace hotline {

namespace {

// The per-CPU text table of a field table: a CPU column, then one per field
// with a text column, in table order.
template <class S>
std::string text_columns_head(Fields<S> fields, int width) {
    std::string line = fmt::format("  {:<6}", "CPU");
    for (const auto& f : fields)
        if (!f.text.empty()) line += fmt::format(" {:>{}}", f.text, width);
    return line;
}

template <class S>
std::string text_columns_row(const S& s, Fields<S> fields, int cpu, int width) {
    std::string line = fmt::format("  {:<6}", cpu);
    for (const auto& f : fields) {
        if (f.text.empty()) continue;
        const auto& v = s.*f.per_cpu;
        line += fmt::format(" {:>{}}", std::size_t(cpu) < v.size() ? v[std::size_t(cpu)] : 0, width);
    }
    return line;
}

}  // namespace

// Handoff counts cover the tracking windows: rates are per tracked second, and
// per call over the calls of the windows (Interval::windows_scale; the object
// sample is named in the header, not scaled).
void render_handoffs_text(std::ostream& os, const Interval& iv, const Topology& topo, bool per_cpu) {
    const double secs = iv.tracking_seconds();
    for (auto& t : iv.d.targets) {
        if (!t.has_handoffs) continue;
        const auto& h = t.handoffs;
        std::uint64_t tracked = h.total(h.tracked), same = h.total(h.same_cpu), xcpu = h.total(h.cross_cpu),
                      xnode = h.total(h.cross_node), fresh = h.total(h.new_objects);
        os << fmt::format("handoffs of {} objects seen by {} ({}{}{})\n", t.object_type, t.target,
                          to_string(t.mechanism), h.sample > 1 ? fmt::format(", 1 object in {} tracked", h.sample) : "",
                          iv.d.track_percent < 100
                              ? fmt::format(", tracked {}% of the time: {:.1f} s", iv.d.track_percent, secs)
                              : "");
        if (!iv.handoffs_tracked(t)) {
            os << "  not tracked in this interval (it fell between two tracking windows)\n";
            continue;
        }
        os << fmt::format("  touches {}  same CPU {}  cross-CPU same node {}  cross-node {}  first touch {}\n", tracked,
                          same, xcpu, xnode, fresh);
        if (tracked)
            os << fmt::format("  handoffs/s {:.1f}  cross-node/s {:.1f}  handoffs per call {:.3f}\n",
                              secs > 0 ? double(xcpu + xnode) / secs : 0, secs > 0 ? double(xnode) / secs : 0,
                              double(xcpu + xnode) * iv.windows_scale(t) / std::max<double>(1, double(t.total_calls())));
        if (h.total(h.remote)) os << fmt::format("  remote (requested CPU != queueing CPU) {}\n", h.total(h.remote));
        os << fmt::format("  owner table: {} live objects in {} slots, {} evicted\n", h.live_objects, h.capacity, h.evictions);
        std::size_t nn = h.matrix.size();
        if (nn > 1 || topo.nodes.size() > 1) {
            os << "  from\\to";
            for (std::size_t to = 0; to < nn; ++to) os << fmt::format(" {:>12}", fmt::format("node {}", to));
            os << "\n";
            for (std::size_t f = 0; f < nn; ++f) {
                os << fmt::format("  node {:<2}", f);
                for (std::size_t to = 0; to < nn; ++to) os << fmt::format(" {:>12}", h.matrix[f][to]);
                os << "\n";
            }
        }
        if (per_cpu) {
            os << text_columns_head<HandoffCounters>(kHandoffFields, 12) << "\n";
            for (int c : topo.cpus) os << text_columns_row(h, kHandoffFields, c, 12) << "\n";
        }
    }
}

void render_hot_objects_text(std::ostream& os, const std::vector<HotObject>& top, double seconds) {
    if (top.empty()) {
        os << "hot objects: none handed between CPUs\n";
        return;
    }
    os << "hot objects (by cross-node handoffs, then all handoffs)\n";
    os << fmt::format("  {:<16} {:<20} {:>12} {:>12} {:>12} {:>8}  {}\n", "TARGET", "OBJECT", "HANDOFFS/S",
                      "X-NODE/S", "HANDOFFS", "LASTCPU", "DETAIL");
    for (auto& o : top) {
        double s = seconds > 0 ? seconds : 1;
        os << fmt::format("  {:<16} {:<20} {:>12.1f} {:>12.1f} {:>12} {:>8}  {}\n", o.target,
                          fmt::format("{}#{}", o.type, o.id), double(o.handoffs) / s, double(o.cross_node) / s,
                          o.handoffs, o.last_cpu, o.detail);
    }
}

void render_layouts_text(std::ostream& os, const std::vector<LineLayout>& layouts) {
    for (auto& l : layouts) os << "layout " << describe(l) << "\n";
}

void render_workq_text(std::ostream& os, const WorkqCounters& w, const Topology& topo, double seconds,
                       const std::string& finding, std::size_t top_funcs) {
    auto total = [](const std::vector<std::uint64_t>& v) {
        std::uint64_t s = 0;
        for (auto x : v) s += x;
        return s;
    };
    os << "queue_work_on attribution (workqueue tracepoints)\n";
    os << text_columns_head<WorkqCounters>(kWorkqFields, 10) << fmt::format(" {:>12}\n", "work/irq");
    for (int c : topo.cpus) {
        auto at = [&](const std::vector<std::uint64_t>& v) { return std::size_t(c) < v.size() ? v[c] : 0; };
        double per = at(w.irqs) ? double(at(w.queued)) / double(at(w.irqs)) : 0.0;
        os << text_columns_row(w, kWorkqFields, c, 10) << fmt::format(" {:>12.3f}\n", per);
    }
    os << fmt::format("  total: {} work items in {:.2f} s, {} for another CPU; {} executed\n", total(w.queued), seconds,
                      total(w.remote), total(w.executed));
    std::vector<std::pair<std::string, std::uint64_t>> funcs(w.funcs.begin(), w.funcs.end());
    std::sort(funcs.begin(), funcs.end(), [](auto& a, auto& b) { return a.second > b.second; });
    if (funcs.size() > top_funcs) funcs.resize(top_funcs);
    os << "  work functions queued:\n";
    for (auto& [f, n] : funcs)
        if (n) os << fmt::format("    {:>10}  {}\n", n, f);
    os << fmt::format("  queue -> execute latency ({} timed, {} without a queue record)\n", w.lat_count, w.lat_lost);
    Log2Hist h{};
    for (int i = 0; i < HL_HIST_SLOTS; ++i) h[i] = w.hist[i];
    render_log2_hist(os, h, "nsecs");
    if (!finding.empty()) os << "  " << finding << "\n";
}

}  // namespace hotline
