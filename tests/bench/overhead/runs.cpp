// SPDX-License-Identifier: Apache-2.0
// What every section of bench_overhead measures with: the goal bookkeeping,
// BPF programs' statistics, one workload run, and the floor's empty programs.
#include "overhead.hpp"

namespace overhead {

std::vector<std::string> g_missed, g_failures;
void failed(std::string what) {
    fmt::print("FAILED {}\n", what);
    g_failures.push_back(std::move(what));
}
void check(const std::string& what, double value, double budget, bool le) {
    if (!(value > 0)) return failed(fmt::format("{}: measured {}", what, value));
    bool ok = le ? value <= budget : value >= budget;
    if (!ok) g_missed.push_back(fmt::format("{}: {:.3g} (target {} {:.3g})", what, value, le ? "<=" : ">=", budget));
}

// --- BPF program statistics by id (for bpftrace's programs) -------------------------------


std::map<std::uint32_t, ProgStat> all_progs() {
    std::map<std::uint32_t, ProgStat> out;
    std::uint32_t id = 0;
    while (bpf_prog_get_next_id(id, &id) == 0) {
        int fd = bpf_prog_get_fd_by_id(id);
        if (fd < 0) continue;
        bpf_prog_info info{};  // the name as well as the run statistics
        std::uint32_t len = sizeof info;
        if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0)
            out[id] = {info.name, info.run_cnt, info.run_time_ns};
        close(fd);
    }
    return out;
}

// --- workload runs --------------------------------------------------------------------------


Result<RunResult> run_scenario_once(const std::string& name, double secs) {
    ScenarioOptions o;
    o.name = name;
    o.duration_s = secs;
    auto r = run_scenario(o, {});
    if (!r) return r.error();
    if (r->stop_reason.rfind("stopped by", 0) == 0) return make_error("interrupted", EINTR);
    RunResult rr;
    double n = name == "tcp-crr" ? double(r->connections) : double(r->messages);
    rr.rate = r->seconds > 0 ? n / r->seconds : 0;
    double cpu_s = r->cpu.busy_pct / 100.0 * double(r->cpu.cpus.size()) * r->seconds;
    rr.cpu_us_per_msg = n > 0 ? cpu_s / n * 1e6 : 0;
    return rr;
}

// A hit is a run of a proxy (`hl_tp_*`: the tracepoints bpftrace's script counts,
// and tcp_destroy_sock); the price of the hits is the run time of every program
// the events run, the workqueue attribution's included (hl_wq_queue on the same
// tracepoint, hl_wq_execute when the item runs, hl_wq_irq).  Only the sampling
// handler is left out: it runs at a fixed rate, not per event, and is priced in
// the loss section.
bool is_proxy_hit(const std::string& program) { return program.rfind("hl_tp_", 0) == 0; }
bool priced_per_hit(const std::string& program) { return program != "hl_sample"; }

// Hit rate over every program; ns/hit: the run time of the programs the events
// run, over the proxies' hits.
void sum_cost(const Interval& iv, double secs, RunResult& rr) {
    std::uint64_t all = 0, hits = 0, ns = 0;
    for (auto& c : iv.d.cost) {
        auto& p = rr.programs[c.program];
        p.run_cnt += c.run_cnt;
        p.run_time_ns += c.run_time_ns;
        all += c.run_cnt;
        if (is_proxy_hit(c.program)) hits += c.run_cnt;
        if (priced_per_hit(c.program)) ns += c.run_time_ns;
    }
    rr.hits_per_s = secs > 0 ? double(all) / secs : 0;
    rr.ns_per_hit = hits ? double(ns) / double(hits) : 0;
}

// The floor: empty programs on every tracepoint the session's events run
// (bpf/floor.bpf.c), priced as the session is (every program over the hits of
// the proxies' tracepoints) and over bpftrace's three tracepoints alone, its like
// for like.  What any session with that coverage costs before doing anything.
const std::set<std::string> kFloorProxyHits = {"hl_fl_consume_skb", "hl_fl_kfree_skb", "hl_fl_queue_work",
                                               "hl_fl_tcp_destroy_sock"};
const std::set<std::string> kFloorBpftraceHits = {"hl_fl_consume_skb", "hl_fl_kfree_skb", "hl_fl_queue_work"};


// The floor's empty programs, attached until the result is dropped.
Result<FloorPrograms> attach_floor() {
    hotline::LibbpfCapture cap;
    FloorPrograms s(hl_floor_bpf::open_and_load());
    if (!s) return make_error("load the floor's empty programs: " + cap.tail(4), errno);
    if (hl_floor_bpf::attach(s.get()) != 0) return make_error("attach the floor's empty programs: " + cap.tail(4), errno);
    return s;
}

// The default session doing only what bpftrace's script does: counting.
SessionOptions counting_only(SessionOptions so) {
    so.latency = false;
    so.handoffs = false;
    so.workq = false;
    return so;
}

Result<RunResult> run_floor_once(const std::string& scen, double secs) {
    auto s = attach_floor();
    if (!s) return s.error();
    bpf_object* obj = (*s)->obj;
    auto stats_of = [&](const char* n) { return prog_run_stats(obj, n).value_or(ProgRunStats{}); };
    std::map<std::string, ProgRunStats> s0;
    for (bpf_program* p = bpf_object__next_program(obj, nullptr); p; p = bpf_object__next_program(obj, p))
        s0[bpf_program__name(p)] = stats_of(bpf_program__name(p));
    double t0 = monotonic_seconds();
    auto rr = run_scenario_once(scen, secs);
    double el = monotonic_seconds() - t0;
    if (!rr) return rr;
    std::uint64_t all = 0, hits = 0, ns = 0, peer_hits = 0, peer_ns = 0;
    for (auto& [name, a] : s0) {
        ProgRunStats b = stats_of(name.c_str());
        std::uint64_t cnt = b.run_cnt - a.run_cnt, t = b.run_time_ns - a.run_time_ns;
        all += cnt;
        ns += t;
        if (kFloorProxyHits.count(name)) hits += cnt;
        if (kFloorBpftraceHits.count(name)) {
            peer_hits += cnt;
            peer_ns += t;
        }
    }
    rr->hits_per_s = el > 0 ? double(all) / el : 0;
    rr->ns_per_hit = hits ? double(ns) / double(hits) : 0;
    rr->ns_per_hit_peer = peer_hits ? double(peer_ns) / double(peer_hits) : 0;
    return rr;
}

RunStatsSwitch g_run_stats;

}  // namespace overhead
