// SPDX-License-Identifier: Apache-2.0
// Per-hit cost against an empty program, and workload throughput with and
// without hotline, its floor and bpftrace, interleaved.
#include "overhead.hpp"
#include "peers.hpp"

namespace overhead {

// --- against bpftrace: its script, attached for one run ----------------------------------

const char* kBpftraceScript =
    "tracepoint:skb:consume_skb, tracepoint:skb:kfree_skb, tracepoint:workqueue:workqueue_queue_work "
    "{ @[cpu] = count(); }";

// The same work as hotline's dst_release proxies tracking handoffs (record -t
// dst_release --no-workq on a kernel without fentry): on the same three
// tracepoints, a route is counted when its reference is one (not a noref
// pointer), its owner (the last CPU that dropped a reference) kept per route
// and rewritten only when it changes, and each change counted per CPU.
const char* kBpftraceTrackScript =
    "tracepoint:skb:consume_skb, tracepoint:skb:kfree_skb {"
    "  $d = ((struct sk_buff *)args->skbaddr)->_skb_refdst;"
    "  if ($d != 0 && ($d & 1) == 0) {"
    "    $o = @owner[$d];"
    "    if ($o != cpu + 1) { if ($o != 0) { @handoffs[cpu] = count(); } @owner[$d] = cpu + 1; }"
    "  }"
    "}"
    "tracepoint:tcp:tcp_destroy_sock {"
    "  $sk = (struct sock *)args->skaddr;"
    "  $r = (uint64)$sk->sk_rx_dst;"
    "  if ($r != 0) {"
    "    $o = @owner[$r];"
    "    if ($o != cpu + 1) { if ($o != 0) { @handoffs[cpu] = count(); } @owner[$r] = cpu + 1; }"
    "  }"
    "  $c = (uint64)$sk->sk_dst_cache;"
    "  if ($c != 0) {"
    "    $o = @owner[$c];"
    "    if ($o != cpu + 1) { if ($o != 0) { @handoffs[cpu] = count(); } @owner[$c] = cpu + 1; }"
    "  }"
    "}";

// The session doing what kBpftraceTrackScript does: dst_release's proxies with
// handoff tracking, nothing else.
SessionOptions dst_tracking_only() {
    SessionOptions so = counting_only({});
    so.targets = {"dst_release"};
    so.handoffs = true;
    return so;
}

// The floor against bpftrace per hit, both as the session is priced and over
// bpftrace's three tracepoints alone (ratios of the medians): a per-hit goal
// below these is below the price of running any program there.
json floor_ratios(const std::string& scen, const std::map<std::string, std::vector<RunResult>>& res) {
    auto median = [&](const char* mode, double RunResult::*f) {
        std::vector<double> v;
        if (auto it = res.find(mode); it != res.end())
            for (auto& x : it->second) v.push_back(x.*f);
        return spread(v).median;
    };
    double bt = median("bpftrace", &RunResult::ns_per_hit);
    if (bt <= 0) return json::object();
    double as_session = median("floor", &RunResult::ns_per_hit) / bt;
    double like_for_like = median("floor", &RunResult::ns_per_hit_peer) / bt;
    fmt::print("  {} floor/bpftrace: ns per hit, empty programs where the session's run {:.3f}; "
               "on bpftrace's three tracepoints {:.3f}\n",
               scen, as_session, like_for_like);
    return {{"ns_per_hit", as_session}, {"ns_per_hit_bpftrace_tracepoints", like_for_like}};
}

// --- 1. per-hit cost against an empty program ----------------------------------------------

using CostSeries = std::map<std::string, std::map<std::string, std::vector<double>>>;  // attach -> variant

json cost_table(CostSeries ns, CostSeries ratio, const std::vector<std::string>& order, int pairs) {
    fmt::print("\n== per-hit cost, ns per run (median [min-max] over {} runs), all variants attached at once\n",
               pairs);
    fmt::print("{:<30} {:<8} {:>24} {:>22} {:>8}\n", "attach point", "variant", "ns/hit", "x empty", "target");
    json jc = json::array();
    for (auto& ap : order) {
        for (const char* v : {"empty", "count", "latency", "handoff"}) {
            if (!ns[ap].count(v)) continue;
            Spread s = spread(ns[ap][v]);
            Spread q = spread(ratio[ap][v]);
            double budget = cost_budget(v);
            std::string tgt = budget > 0 ? fmt::format("<={:.1f}", budget) : "";
            if (budget > 0) check(fmt::format("cost {} {} x empty", ap, v), q.median, budget);
            fmt::print("{:<30} {:<8} {:>24} {:>22} {:>8}{}\n", ap, v, fmt_spread(s), v == std::string("empty") ? "" : fmt_spread(q, 2),
                       tgt, budget > 0 && q.median > budget ? "  MISSED" : "");
            json row = {{"attach", ap}, {"variant", v}, {"ns_per_hit", to_json(s)}};
            if (v != std::string("empty")) row["ratio_to_empty"] = to_json(q);
            if (budget > 0) row["target"] = budget;
            jc.push_back(row);
        }
    }
    return jc;
}

json cost_section(const Options& o, const KernelInfo& k, const Topology& topo) {
    CostSeries ns, ratio;
    std::vector<std::string> order;
    std::vector<std::string> notes;
    for (int r = 0; r < o.pairs; ++r) {
        auto rep = measure_cost({}, k, topo, [&]() -> Status {
            for (const char* s : {"dst-refcount", "tcp-crr"})
                if (auto rr = run_scenario_once(s, o.secs / 2); !rr) return rr.error();
            return ok_status();
        });
        if (!rep) {
            failed("cost: " + rep.error().message());
            break;
        }
        notes = rep->notes;
        for (auto& row : rep->rows) {
            if (!ns.count(row.attach)) order.push_back(row.attach);
            for (auto& v : row.variants) {
                if (!v.run_cnt) continue;
                ns[row.attach][v.name].push_back(v.ns_per_run());
                if (v.name != "empty") ratio[row.attach][v.name].push_back(row.ratio(v.name));
            }
        }
    }
    json jc = cost_table(ns, ratio, order, o.pairs);
    for (auto& n : notes) fmt::print("  note: {}\n", n);
    return {{"rows", jc}, {"notes", notes}};
}

// --- 2/3. workload overhead, interleaved ------------------------------------------------------

// One run of SCEN under hotline's session SO, its programs' cost summed over the run.
Result<RunResult> run_under_session(const std::string& scen, double secs, const SessionOptions& so,
                                    const KernelInfo& k, const Topology& topo) {
    auto s = Session::open(so, k, topo);
    if (!s) return s.error();
    auto a = (*s)->read();
    auto rr = run_scenario_once(scen, secs);
    auto b = (*s)->read();
    if (rr && a && b) {
        auto iv = delta(*a, *b);
        sum_cost(iv, iv.seconds(), *rr);
    }
    return rr;
}

// One run of SCEN under bpftrace's script, its programs' hits and run time from
// the kernel's run statistics.
Result<RunResult> run_under_bpftrace(const std::string& scen, double secs, const char* script = kBpftraceScript) {
    auto b = Bpftrace::start(script);
    if (!b) return b.error();
    auto s0 = b->stats();
    double t0 = monotonic_seconds();
    auto rr = run_scenario_once(scen, secs);
    auto s1 = b->stats();
    double el = monotonic_seconds() - t0;
    if (rr) {
        std::uint64_t cnt = 0, ns = 0;
        for (auto& [id, p] : s1)
            if (auto it = s0.find(id); it != s0.end()) {
                cnt += p.run_cnt - it->second.run_cnt;
                ns += p.run_time_ns - it->second.run_time_ns;
            }
        rr->hits_per_s = double(cnt) / el;
        rr->ns_per_hit = cnt ? double(ns) / double(cnt) : 0;
    }
    return rr;
}

// The floor of route tracking (bpf/track_floor.bpf.c) around one run: the
// least any tracker of kBpftraceTrackScript's work costs a hit.
Result<RunResult> run_floor_track_once(const std::string& scen, double secs) {
    std::optional<RunResult> rr;
    double el = 0;
    std::uint64_t runs = 0, ns = 0;
    auto counts = with_track_floor({"hl_tf_consume_skb", "hl_tf_kfree_skb", "hl_tf_tcp_destroy_sock"},
                                   [&](const RunReader& read) -> Result<std::uint64_t> {
                                       auto a = read();
                                       if (!a) return a.error();
                                       double t0 = monotonic_seconds();
                                       auto r = run_scenario_once(scen, secs);
                                       el = monotonic_seconds() - t0;
                                       auto b = read();
                                       if (!r) return r.error();
                                       if (!b) return b.error();
                                       rr = *r;
                                       runs = b->first - a->first;
                                       ns = b->second - a->second;
                                       return runs;
                                   });
    if (!counts) return counts.error();
    rr->hits_per_s = el > 0 ? double(runs) / el : 0;
    rr->ns_per_hit = runs ? double(ns) / double(runs) : 0;
    return *rr;
}

Result<RunResult> run_mode(const std::string& mode, const std::string& scen, double secs, const KernelInfo& k,
                           const Topology& topo) {
    if (mode == "none") return run_scenario_once(scen, secs);
    if (mode == "floor") return run_floor_once(scen, secs);
    if (mode == "floor-track") return run_floor_track_once(scen, secs);
    if (mode == "hotline") return run_under_session(scen, secs, SessionOptions{}, k, topo);
    if (mode == "hotline-count") return run_under_session(scen, secs, counting_only({}), k, topo);
    if (mode == "hotline-track") return run_under_session(scen, secs, dst_tracking_only(), k, topo);
    if (mode == "bpftrace-track") return run_under_bpftrace(scen, secs, kBpftraceTrackScript);
    return run_under_bpftrace(scen, secs);
}

using ModeRuns = std::map<std::string, std::vector<RunResult>>;

Spread column(const ModeRuns& res, const std::string& mode, double RunResult::*f) {
    std::vector<double> v;
    if (auto it = res.find(mode); it != res.end())
        for (auto& x : it->second) v.push_back(x.*f);
    return spread(v);
}

// A over B round by round (paired_ratios).
std::vector<double> round_ratios(const ModeRuns& res, const std::string& a, const std::string& b,
                                 double RunResult::*f) {
    RoundFigures rounds;
    for (const auto& [mode, runs] : res)
        for (const RunResult& x : runs) {
            if (x.round < 0) continue;
            if (rounds.size() <= std::size_t(x.round)) rounds.resize(std::size_t(x.round) + 1);
            rounds[std::size_t(x.round)][mode] = x.*f;
        }
    return paired_ratios(rounds, a, b);
}

// Ratio of the medians of A and B, and its spread over the rounds.
std::pair<double, Spread> mode_ratio(const ModeRuns& res, const std::string& a, const std::string& b,
                                     double RunResult::*f) {
    Spread s = spread(round_ratios(res, a, b, f));
    Spread ma = column(res, a, f), mb = column(res, b, f);
    double rm = mb.median > 0 ? ma.median / mb.median : 0;
    return std::make_pair(rm, s);
}

void workload_rows(const std::string& scen, const std::vector<std::string>& modes, const ModeRuns& res, json& js) {
    for (auto& mode : modes) {
        Spread rate = column(res, mode, &RunResult::rate), cpu = column(res, mode, &RunResult::cpu_us_per_msg),
               hits = column(res, mode, &RunResult::hits_per_s), nsh = column(res, mode, &RunResult::ns_per_hit);
        fmt::print("{:<13} {:<13} {:>26} {:>22} {:>22} {:>18}\n", scen, mode, fmt_spread(rate, 0),
                   fmt_spread(cpu, 2), mode == "none" ? "-" : fmt_spread(hits, 0),
                   mode == "none" ? "-" : fmt_spread(nsh, 1));
        js[mode] = {{"rate_per_s", to_json(rate)}, {"cpu_us_per_msg", to_json(cpu)}};
        if (mode != "none") js[mode].update({{"hits_per_s", to_json(hits)}, {"ns_per_hit", to_json(nsh)}});
        if (mode == "floor") {
            Spread peer = column(res, mode, &RunResult::ns_per_hit_peer);
            fmt::print("{:<13} {:<13} {:>26} {:>22} {:>22} {:>18}\n", scen, "floor, 3 tps", "", "", "",
                       fmt_spread(peer, 1));
            js[mode]["ns_per_hit_bpftrace_tracepoints"] = to_json(peer);
        }
    }
}

void workload_ratios(const std::string& scen, const std::vector<std::string>& modes, const ModeRuns& res,
                     bool bpftrace, json& js) {
    for (auto& mode : modes) {
        if (mode == "none") continue;
        bool peer = mode == "bpftrace" || mode == "bpftrace-track" || mode.rfind("floor", 0) == 0;  // no goal of hotline's
        auto [tr, ts] = mode_ratio(res, mode, "none", &RunResult::rate);
        auto [cr, cs] = mode_ratio(res, mode, "none", &RunResult::cpu_us_per_msg);
        fmt::print("  {} {}/none: throughput {:.3f} (per round {}), CPU per message {:.3f} (per round {}){}\n",
                   scen, mode, tr, fmt_spread(ts, 3), cr, fmt_spread(cs, 3),
                   !peer && tr > 0 && tr < 0.97 ? "  MISSED (target >= 0.970)" : "");
        if (!peer) check(fmt::format("{} throughput with {} / without", scen, mode), tr, 0.97, false);
        js["ratio_" + mode + "_none"] = {{"throughput", tr}, {"throughput_rounds", to_json(ts)},
                                         {"cpu_per_msg", cr}, {"cpu_per_msg_rounds", to_json(cs)}};
    }
    if (bpftrace) js["ratio_floor_bpftrace"] = floor_ratios(scen, res);
    if (bpftrace) {
        // The same work per hit (issue 43's goal: hotline at most a quarter of bpftrace's).
        RatioCi r = ratio_ci95(round_ratios(res, "hotline-track", "bpftrace-track", &RunResult::ns_per_hit));
        fmt::print("  {} hotline-track/bpftrace-track: ns per hit, the same tracking on the same tracepoints "
                   "{}: {}\n",
                   scen, fmt_ratio_ci(r), ceiling_verdict(r, kSameWorkOverBpftrace));
        check(fmt::format("{} per-hit cost of dst tracking, hotline / bpftrace (upper end of the 95% interval)",
                          scen),
              r.high, kSameWorkOverBpftrace);
        js["ratio_hotline-track_bpftrace-track"] = {{"ns_per_hit", to_json(r, kSameWorkOverBpftrace)}};
        // The floor against the same goal, reported, not judged: where it misses,
        // no layout of the tracker meets the goal on this machine.
        RatioCi f = ratio_ci95(round_ratios(res, "floor-track", "bpftrace-track", &RunResult::ns_per_hit));
        fmt::print("  {} floor-track/bpftrace-track: ns per hit {}: {}\n", scen, fmt_ratio_ci(f),
                   ceiling_verdict(f, kSameWorkOverBpftrace));
        js["ratio_floor-track_bpftrace-track"] = {{"ns_per_hit", to_json(f, kSameWorkOverBpftrace)}};
    }
    RatioCi over = ratio_ci95(round_ratios(res, "hotline-track", "floor-track", &RunResult::ns_per_hit));
    fmt::print("  {} hotline-track/floor-track: ns per hit {}\n", scen, fmt_ratio_ci(over));
    js["ratio_hotline-track_floor-track"] = {{"ns_per_hit", to_json(over)}};
    for (const char* hm : {"hotline", "hotline-count"}) {
        if (!bpftrace) break;
        auto [hr, hs] = mode_ratio(res, hm, "bpftrace", &RunResult::ns_per_hit);
        auto [tr, ts] = mode_ratio(res, hm, "bpftrace", &RunResult::rate);
        // The goal is the full session's; counting only is reported beside it.
        bool goal = std::string(hm) == "hotline";
        fmt::print("  {} {}/bpftrace: ns per hit, every event-driven program {:.3f} (per round {}), "
                   "throughput {:.3f}{}\n",
                   scen, hm, hr, fmt_spread(hs, 3), tr, goal && hr > 0.3 ? "  MISSED (target <= 0.3)" : "");
        if (goal) check(fmt::format("{} per-hit cost {} / bpftrace", scen, hm), hr, 0.3);
        js[std::string("ratio_") + hm + "_bpftrace"] = {
            {"ns_per_hit", hr}, {"ns_per_hit_rounds", to_json(hs)}, {"throughput", tr}};
    }
}

json workload_scenario(const char* scen, const std::vector<std::string>& modes, const Options& o,
                       const KernelInfo& k, const Topology& topo) {
    ModeRuns res;
    for (int r = 0; r < o.pairs; ++r) {
        // Rotate the order each round so no mode always runs first.
        for (std::size_t m = 0; m < modes.size(); ++m) {
            const std::string& mode = modes[(m + std::size_t(r)) % modes.size()];
            Result<RunResult> rr = run_mode(mode, scen, o.secs, k, topo);
            if (!rr) {
                failed(fmt::format("workload {} {}: {}", scen, mode, rr.error().message()));
                continue;
            }
            rr->round = r;
            res[mode].push_back(*rr);
        }
    }
    json js = {{"scenario", scen}};
    workload_rows(scen, modes, res, js);
    js["hotline_programs"] = print_session_programs(scen, res["hotline"], o.secs);
    workload_ratios(scen, modes, res, o.bpftrace, js);
    return js;
}

json workload_section(const Options& o, const KernelInfo& k, const Topology& topo) {
    json jw = json::array();
    std::optional<TracefsMount> tracefs;
    if (o.bpftrace) tracefs.emplace();
    // hotline: the default session (counting, latency, handoffs, sampling, workqueue
    // attribution); hotline-count: counting only, what bpftrace's script does;
    // floor: empty programs where the session's run (run_floor_once).
    // hotline-track and bpftrace-track: the same handoff tracking of routes on dst_release's proxies;
    // floor-track: the least any tracker of that work costs (run_floor_track_once).
    std::vector<std::string> modes = {"none", "hotline", "hotline-count", "hotline-track", "floor", "floor-track"};
    if (o.bpftrace) modes.insert(modes.end(), {"bpftrace", "bpftrace-track"});
    fmt::print("\n== workload overhead: {} rounds of {} interleaved, {:.0f} s each\n", o.pairs,
               fmt::join(modes, "/"), o.secs);
    fmt::print("{:<13} {:<13} {:>26} {:>22} {:>22} {:>18}\n", "scenario", "mode", "rate/s", "CPU us/msg",
               "probe hits/s", "ns/hit");
    for (const char* scen : {"dst-refcount", "tcp-crr"}) jw.push_back(workload_scenario(scen, modes, o, k, topo));
    return jw;
}

}  // namespace overhead
