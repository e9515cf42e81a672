// SPDX-License-Identifier: Apache-2.0
// The analysis of a recording: what `hotline diff` compares and what
// `hotline diagnose` judges, taken from this kernel at the end of the run.
#include "recording_analysis.hpp"

#include "hotline/diagnose/diagnose.hpp"
#include "hotline/kernel/btf_layout.hpp"
#include "hotline/kernel/kernel.hpp"
#include "hotline/report/fix_output.hpp"
#include "hotline/session/recording.hpp"

namespace hotline {

ScenarioNumbers scenario_numbers(const ScenarioResult& r) {
    ScenarioNumbers n;
    n.seconds = r.seconds;
    n.ops = scenario_ops(r);
    // Thread CPU time where the generator measured it, else the busy share of its CPUs.
    if (r.cpu.threads_measured) n.cpu_seconds = (r.cpu.sender_pct + r.cpu.receiver_pct) / 100.0 * r.seconds;
    else n.cpu_seconds = r.cpu.busy_pct / 100.0 * double(r.cpu.cpus.size()) * r.seconds;
    if (r.mbit_per_s > 0) n.extra["mbit_per_s"] = r.mbit_per_s;
    if (r.connections > 0) {
        n.extra["connection_resets"] = double(r.connection_resets);
        n.extra["connection_refusals"] = double(r.connection_refusals);
        n.extra["connection_timeouts"] = double(r.connection_timeouts);
    }
    if (!r.latency.empty() && r.latency.front().has_percentiles) {
        n.extra["latency_p50_us"] = r.latency.front().p50_ns / 1e3;
        n.extra["latency_p99_us"] = r.latency.front().p99_ns / 1e3;
    }
    return n;
}

nlohmann::json diff_facts(const FixCatalog& cat, const KernelFacts& facts, const std::vector<LineLayout>& layouts) {
    nlohmann::json fixes = nlohmann::json::object();
    for (auto& f : cat.fixes())
        if (f.mode == FixMode::kKernelPair) fixes[f.name] = to_json(check_applicability(f, facts));
    TrialMetrics lm;
    for (auto& l : layouts) add_layout_metrics(lm, l);
    return {{"fixes", fixes}, {"layout_metrics", lm}};
}

namespace {

// One metric map per interval.  Each interval's operations are the scenario's
// live count at its ends when the scenario has one; otherwise, and for CPU
// time always, the scenario's totals are spread over the intervals by their
// length.
nlohmann::json interval_metrics(const RecordedRun& run, bool live, int& partial) {
    const std::vector<Interval>& ivs = run.intervals;
    double total_s = 0;
    for (auto& iv : ivs) total_s += iv.seconds();
    nlohmann::json per = nlohmann::json::array();
    for (std::size_t i = 0; i < ivs.size(); ++i) {
        const Interval& iv = ivs[i];
        // A short interval (the traffic's wind-down before the final snapshot)
        // would be an outlier of every rate: left out when the operations are
        // counted live.
        if (live && ivs.size() > 1 && iv.seconds() < run.nominal_interval_s / 2) {
            ++partial;
            continue;
        }
        ScenarioNumbers n;
        if (run.numbers.seconds > 0 && total_s > 0) {
            double share = iv.seconds() / total_s;
            n.ops = live ? double(run.interval_ops[i]) : run.numbers.ops * share;
            n.cpu_seconds = run.numbers.cpu_seconds * share;
            n.seconds = iv.seconds();
        }
        per.push_back(trial_metrics(iv, n));
    }
    return per;
}

}  // namespace

void add_recording_analysis(RecordingWriter& rec, const Session& session, const RecordedRun& run) {
    const SessionInfo& info = session.info();
    nlohmann::json an = rec.doc().contains("analysis") ? rec.doc()["analysis"] : nlohmann::json::object();
    std::optional<KernelBtf> btf;
    if (auto b = KernelBtf::load(); b) btf.emplace(std::move(*b));
    // The session's symbol table: reading /proc/kallsyms again would double its memory.
    std::optional<Kallsyms> own_ks;
    const Kallsyms* ks = session.kallsyms();
    if (!ks)
        if (auto k = Kallsyms::load(); k) ks = &own_ks.emplace(std::move(*k));
    int nodes = 1;
    if (auto t = read_topology(); t) nodes = int(t->nodes.size());
    LiveKernelFacts facts(KnobRoots{}, btf ? &*btf : nullptr, ks, nodes);
    if (auto cat = FixCatalog::builtin(); cat) an["diff"] = diff_facts(*cat, facts, info.layouts);
    an["diagnosis"] = live_diagnosis_analysis(facts, run.whole, run.whole_ops, info.layouts);
    const bool live = !run.interval_ops.empty() && run.interval_ops.size() == run.intervals.size();
    int partial = 0;
    an["interval_metrics"] = interval_metrics(run, live, partial);
    an["interval_ops"] = live ? "live" : "spread";
    an["partial_intervals_left_out"] = partial;
    rec.set("analysis", an);
}

bool tail_joins_last_interval(double tail_s, double interval_s, std::optional<std::uint64_t> tail_ops) {
    return tail_s < 0.5 * interval_s || (tail_ops && *tail_ops == 0);
}

}  // namespace hotline
