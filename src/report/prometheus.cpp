// SPDX-License-Identifier: Apache-2.0
// Prometheus text 0.0.4 / OpenMetrics 1.0 rendering of a cumulative Snapshot:
// per-node (optionally per-CPU) call counters, handoff matrices, latency
// histograms, sampling shares, and the exporter's own health.
#include "hotline/report/prometheus.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <span>
#include <utility>
#include <vector>

namespace hotline {

// ------------------------------------------------------------ writer
namespace {

using Labels = std::vector<std::pair<std::string_view, std::string>>;

class Expo {
public:
    Expo(std::ostream& os, const PromOptions& o) : os_(os), om_(o.format == ExpositionFormat::kOpenMetrics100), max_(o.max_series) {}

    // The header is written with the family's first sample: a family without
    // series leaves no trace.
    void begin(const MetricFamily& f) {
        fam_ = f;
        header_done_ = false;
    }

    // For capped (contention) families: admits n series or counts them as dropped.
    bool admit(std::size_t n) {
        if (series_ + n > max_) {
            dropped_ += n;
            return false;
        }
        series_ += n;
        return true;
    }

    void sample(std::string_view suffix, const Labels& labels, std::string_view value) {
        if (!header_done_) header();
        line_.clear();
        line_ += fam_.name;
        if (fam_.type == MetricType::kCounter) line_ += "_total";
        else if (fam_.type == MetricType::kInfo) line_ += "_info";
        else line_ += suffix;
        append_labels(labels);
        line_ += ' ';
        line_ += value;
        line_ += '\n';
        os_ << line_;
    }
    void sample(const Labels& labels, std::uint64_t v) { sample({}, labels, std::to_string(v)); }
    void sample(const Labels& labels, double v) { sample({}, labels, format_sample_value(v)); }

    void finish() {
        if (om_) os_ << "# EOF\n";
    }
    std::size_t series() const { return series_; }
    std::uint64_t dropped() const { return dropped_; }

private:
    void append_labels(const Labels& labels) {
        if (labels.empty()) return;
        line_ += '{';
        bool first = true;
        for (const auto& [k, v] : labels) {
            if (!first) line_ += ',';
            first = false;
            line_ += k;
            line_ += "=\"";
            line_ += escape_label_value(v);
            line_ += '"';
        }
        line_ += '}';
    }

    void header() {
        header_done_ = true;
        std::string name(fam_.name);
        std::string_view type = to_string(fam_.type);
        if (fam_.type == MetricType::kCounter && !om_) name += "_total";
        if (fam_.type == MetricType::kInfo && !om_) {
            type = "gauge";
            name += "_info";
        }
        std::string help;
        for (char c : fam_.help) {
            if (c == '\\') help += "\\\\";
            else if (c == '\n') help += "\\n";
            else if (c == '"' && om_) help += "\\\"";
            else help += c;
        }
        os_ << "# HELP " << name << ' ' << help << '\n';
        os_ << "# TYPE " << name << ' ' << type << '\n';
        if (om_ && !fam_.unit.empty()) os_ << "# UNIT " << name << ' ' << fam_.unit << '\n';
    }

    std::ostream& os_;
    bool om_;
    std::size_t max_;
    MetricFamily fam_;
    bool header_done_ = false;
    std::size_t series_ = 0;
    std::uint64_t dropped_ = 0;
    std::string line_;
};

std::uint64_t at(const std::vector<std::uint64_t>& v, int i) {
    return i >= 0 && std::size_t(i) < v.size() ? v[std::size_t(i)] : 0;
}

// Per-node folds, or per-CPU series with their node when per_cpu is set.
template <class Emit>
void per_place(const std::vector<std::uint64_t>& per_cpu, const Topology& topo, bool cpus, Emit emit) {
    if (cpus) {
        for (int cpu : topo.cpus) emit(topo.node_of(cpu), cpu, at(per_cpu, cpu));
    } else {
        for (const auto& [node, v] : fold_by_node(per_cpu, topo)) emit(node, -1, v);
    }
}

// What one render reads.
struct Scrape {
    Expo& x;
    const Snapshot& s;
    const ExporterInfo& info;
    const ExporterCounters& counters;
    const PromOptions& opts;
};

// ------------------------------------------------------------ field families
// The labels of a field's family follow from its table and fold.

void render_field(Scrape& c, const Field<TargetCounters>& f) {
    for (const auto& t : c.s.targets) {
        std::string mech(to_string(t.mechanism));
        per_place(t.*f.per_cpu, c.info.topo, c.opts.per_cpu, [&](int node, int cpu, std::uint64_t v) {
            if (!c.x.admit(1)) return;
            Labels l{{"target", t.target}, {"node", std::to_string(node)}};
            if (cpu >= 0) l.emplace_back("cpu", std::to_string(cpu));
            l.emplace_back("mechanism", mech);
            c.x.sample(l, v);
        });
    }
}

void render_field(Scrape& c, const Field<HandoffCounters>& f) {
    for (const auto& t : c.s.targets) {
        if (!t.has_handoffs) continue;
        const HandoffCounters& h = t.handoffs;
        if (f.prom.capped && !c.x.admit(1)) continue;
        c.x.sample({{"target", t.target}}, f.per_cpu ? h.total(h.*f.per_cpu) : h.*f.value);
    }
}

void render_field(Scrape& c, const Field<Snapshot>& f) {
    if (c.s.samples_total.empty()) return;
    per_place(c.s.*f.per_cpu, c.info.topo, c.opts.per_cpu, [&](int node, int cpu, std::uint64_t n) {
        if (!c.x.admit(1)) return;
        Labels l{{"node", std::to_string(node)}};
        if (cpu >= 0) l.emplace_back("cpu", std::to_string(cpu));
        c.x.sample(l, n);
    });
}

// The workqueue attribution belongs to no target: one series, or one per node.
void render_field(Scrape& c, const Field<WorkqCounters>& f) {
    if (!c.s.has_workq) return;
    const WorkqCounters& w = c.s.workq;
    if (f.fold == Fold::kTotal) {
        if (f.prom.capped && !c.x.admit(1)) return;
        std::uint64_t v = 0;
        if (f.per_cpu)
            for (auto n : w.*f.per_cpu) v += n;
        else v = w.*f.value;
        c.x.sample({}, v);
        return;
    }
    per_place(w.*f.per_cpu, c.info.topo, c.opts.per_cpu, [&](int node, int cpu, std::uint64_t n) {
        if (f.prom.capped && !c.x.admit(1)) return;
        Labels l{{"node", std::to_string(node)}};
        if (cpu >= 0) l.emplace_back("cpu", std::to_string(cpu));
        c.x.sample(l, n);
    });
}

template <class S>
void render_fields(Scrape& c, std::span<const Field<S>> fields) {
    for (const auto& f : fields) {
        if (f.prom.name.empty()) continue;
        c.x.begin(f.prom);
        render_field(c, f);
    }
}

MetricFamily field_family(const MetricFamily& prom, std::string_view labels) {
    MetricFamily f = prom;
    f.labels = labels;
    return f;
}

// ------------------------------------------------------------ other families

void render_build(Scrape& c) { c.x.sample({{"version", c.info.version}}, std::uint64_t(1)); }

void render_kernel(Scrape& c) {
    const KernelInfo& k = c.info.kernel;
    c.x.sample({{"release", k.release},
                {"machine", k.machine},
                {"lockdown", k.lockdown},
                {"btf", k.btf ? "true" : "false"}},
               std::uint64_t(1));
}

void render_attached(Scrape& c) {
    for (const auto& tp : c.info.plan.targets)
        c.x.sample({{"target", tp.target}, {"mechanism", std::string(to_string(tp.mechanism))}},
                   std::uint64_t(tp.observable() ? 1 : 0));
}

void render_duty_cycle(Scrape& c) { c.x.sample({}, double(c.s.duty_percent) / 100); }

void render_duty_period(Scrape& c) { c.x.sample({}, c.s.duty_period_s); }

void render_attached_seconds(Scrape& c) { c.x.sample({}, c.s.attached_s); }

void render_present(Scrape& c) {
    for (const auto& tp : c.info.plan.targets) c.x.sample({{"target", tp.target}}, std::uint64_t(tp.absent ? 0 : 1));
}

// The matrix is indexed by node id; cells for every pair of the topology's
// nodes, zeros included, so the series set does not change as handoffs start.
void render_handoff_matrix(Scrape& c) {
    const auto& nodes = c.info.topo.nodes;
    for (const auto& t : c.s.targets) {
        if (!t.has_handoffs) continue;
        const auto& m = t.handoffs.matrix;
        for (int from : nodes)
            for (int to : nodes) {
                auto f = std::size_t(from), d = std::size_t(to);
                std::uint64_t v = f < m.size() && d < m[f].size() ? m[f][d] : 0;
                if (!c.x.admit(1)) continue;
                c.x.sample({{"target", t.target},
                            {"from_node", std::to_string(from)},
                            {"to_node", std::to_string(to)}},
                           v);
            }
    }
}

void render_latency(Scrape& c) {
    for (const auto& t : c.s.targets) {
        if (!t.has_latency) continue;
        if (!c.x.admit(std::size_t(HL_HIST_SLOTS) + 2)) continue;
        std::uint64_t cum = 0;
        for (int i = 0; i < HL_HIST_SLOTS; ++i) {
            cum += t.hist[std::size_t(i)];
            if (i == HL_HIST_SLOTS - 1) break;  // the open-ended slot only reaches +Inf
            c.x.sample("_bucket", {{"target", t.target}, {"le", format_sample_value(latency_le_seconds(i))}},
                       std::to_string(cum));
        }
        c.x.sample("_bucket", {{"target", t.target}, {"le", "+Inf"}}, std::to_string(cum));
        // _count equals the +Inf bucket by construction; lat_count can run one
        // increment ahead of the slots while a CPU is mid-update.
        c.x.sample("_sum", {{"target", t.target}}, format_sample_value(double(t.lat_sum_ns) / 1e9));
        c.x.sample("_count", {{"target", t.target}}, std::to_string(cum));
    }
}

void render_sampled_share(Scrape& c) {
    if (c.s.samples_total.empty()) return;
    for (const auto& t : c.s.targets)
        if (t.mechanism == Mechanism::kSampling && c.x.admit(1))
            c.x.sample({{"target", t.target}}, sampled_share(t, c.s.samples_total));
}

void render_run_stats(Scrape& c) { c.x.sample({}, std::uint64_t(c.info.run_stats ? 1 : 0)); }

void render_runs(Scrape& c) {
    for (const auto& p : c.s.cost) c.x.sample({{"target", p.target}, {"program", p.program}}, p.run_cnt);
}

void render_run_seconds(Scrape& c) {
    for (const auto& p : c.s.cost)
        c.x.sample({{"target", p.target}, {"program", p.program}}, double(p.run_time_ns) / 1e9);
}

void render_drops(Scrape& c) {
    std::vector<std::pair<std::string, std::uint64_t>> rec;
    for (const auto& p : c.s.cost) {
        auto it = std::find_if(rec.begin(), rec.end(), [&](auto& r) { return r.first == p.target; });
        if (it == rec.end()) it = rec.insert(rec.end(), {p.target, 0});
        it->second += p.recursion_misses;
    }
    for (const auto& [target, v] : rec) c.x.sample({{"target", target}, {"reason", "recursion"}}, v);
    for (const auto& t : c.s.targets)
        if (t.has_latency) c.x.sample({{"target", t.target}, {"reason", "latency_lost"}}, t.lat_lost);
    for (const auto& t : c.s.targets)
        if (t.has_handoffs) c.x.sample({{"target", t.target}, {"reason", "owner_evicted"}}, t.handoffs.evictions);
}

void render_read_errors(Scrape& c) { c.x.sample({}, c.counters.read_errors); }

void render_http_rejected(Scrape& c) {
    for (const auto& [reason, v] : c.counters.http_rejected) c.x.sample({{"reason", reason}}, v);
}

// Written after every capped family, so it includes this render's drops.
// One series per finding and prescribed fix (fix="" when none applies here).
void render_findings(Scrape& c) {
    for (const auto& f : c.counters.findings) {
        bool any = false;
        for (const auto& a : f.fixes)
            if (a.prescribed()) {
                c.x.sample({{"rule", f.rule}, {"fix", a.fix}, {"severity", std::string(to_string(f.severity))}},
                           std::uint64_t(1));
                any = true;
            }
        if (!any) c.x.sample({{"rule", f.rule}, {"fix", ""}, {"severity", std::string(to_string(f.severity))}}, std::uint64_t(1));
    }
}

void render_series_dropped(Scrape& c) { c.x.sample({}, c.counters.series_dropped + c.x.dropped()); }

template <auto Member>
void render_process(Scrape& c) {
    if (const auto& p = c.counters.process) c.x.sample({}, (*p).*Member);
}

// ------------------------------------------------------------ field tables
// The labels a table's field families get, by fold; nullopt: that fold is not
// rendered for the table.
struct FoldLabels {
    std::optional<std::string_view> by_node = {};
    std::optional<std::string_view> total = {};
    std::optional<std::string_view> of(Fold f) const { return f == Fold::kByNode ? by_node : total; }
};

// One field table's exported fields: their families, rendering and checks.
struct TableExport {
    CounterTable table;
    void (*families)(std::vector<MetricFamily>& out);
    void (*render)(Scrape& c);
    void (*check)(std::vector<std::string>& problems);
};

template <class S, const auto& kFields, const FoldLabels& kLabels>
constexpr TableExport table_export(CounterTable table) {
    return {
        .table = table,
        .families =
            [](std::vector<MetricFamily>& out) {
                for (const Field<S>& f : kFields)
                    if (!f.prom.name.empty()) out.push_back(field_family(f.prom, kLabels.of(f.fold).value_or("")));
            },
        .render = [](Scrape& c) { render_fields<S>(c, kFields); },
        .check =
            [](std::vector<std::string>& problems) {
                for (const Field<S>& f : kFields)
                    if (!f.prom.name.empty() && !kLabels.of(f.fold))
                        problems.push_back("family \"" + std::string(f.prom.name) +
                                           "\": its fold is not rendered for its table");
            },
    };
}

constexpr FoldLabels kTargetLabels{.by_node = "target, node, (cpu), mechanism"};
constexpr FoldLabels kHandoffLabels{.total = "target"};
constexpr FoldLabels kWorkqLabels{.by_node = "node, (cpu)", .total = ""};
constexpr FoldLabels kSampleLabels{.by_node = "node, (cpu)"};
constexpr TableExport kTargetExport =
    table_export<TargetCounters, kTargetFields, kTargetLabels>(CounterTable::kTarget);
constexpr TableExport kHandoffExport =
    table_export<HandoffCounters, kHandoffFields, kHandoffLabels>(CounterTable::kHandoff);
constexpr TableExport kWorkqExport = table_export<WorkqCounters, kWorkqFields, kWorkqLabels>(CounterTable::kWorkq);
constexpr TableExport kSampleExport = table_export<Snapshot, kSampleFields, kSampleLabels>(CounterTable::kSample);

// ------------------------------------------------------------ the registry
// Every family of /metrics in exposition order: either one rendered by a
// function, or the exported fields of one field table (metrics.hpp), in that
// table's order.  Every table of kCounterTables has its entry.
struct FamilyEntry {
    MetricFamily family = {};  // unused for a field table
    void (*render)(Scrape&) = nullptr;
    const TableExport* fields = nullptr;
};

constexpr auto kCounter = MetricType::kCounter;
constexpr auto kGauge = MetricType::kGauge;

constexpr FamilyEntry kFamilies[] = {
    {.family = {.name = "hotline_build", .type = MetricType::kInfo, .help = "hotline version running this exporter.",
                .labels = "version"},
     .render = render_build},
    {.family = {.name = "hotline_kernel", .type = MetricType::kInfo,
                .help = "The kernel hotline observes and what it allows.",
                .labels = "release, machine, lockdown, btf"},
     .render = render_kernel},
    {.family = {.name = "hotline_probe_attached", .type = kGauge,
                .help = "1 when the target is watched, by the mechanism named; 0 when no mechanism could attach.",
                .labels = "target, mechanism"},
     .render = render_attached},
    {.family = {.name = "hotline_probe_target_present", .type = kGauge,
                .help = "1 when the kernel has the target's function; 0 when it does not (e.g. tcp_prequeue on >= "
                        "4.14), so there is nothing to watch and nothing to alert on.",
                .labels = "target"},
     .render = render_present},
    {.family = {.name = "hotline_probe_duty_cycle_ratio", .type = kGauge,
                .help = "Share (0..1) of the time the programs are attached (probe.duty_cycle; 1: throughout); "
                        "the other counters cover that time only.",
                .unit = "ratio"},
     .render = render_duty_cycle},
    {.family = {.name = "hotline_probe_duty_period_seconds", .type = kGauge,
                .help = "Period of the attach windows (probe.duty_period): the programs are attached for the duty "
                        "cycle's share of each; 0 when attached throughout. A rate over a few periods or more "
                        "does not depend on where the windows fall.",
                .unit = "seconds"},
     .render = render_duty_period},
    {.family = {.name = "hotline_probe_attached_seconds", .type = kCounter,
                .help = "Seconds the programs were attached since the exporter started; a counter's rate "
                        "divided by this one's is its rate per attached second.",
                .unit = "seconds"},
     .render = render_attached_seconds},
    {.fields = &kTargetExport},
    {.family = {.name = "hotline_handoffs", .type = kCounter,
                .help = "Hits on an object last touched from another CPU: one of node from_node, this one of to_node "
                        "(the node x node handoff matrix; the diagonal is same-node handoffs).",
                .labels = "target, from_node, to_node", .capped = true},
     .render = render_handoff_matrix},
    {.fields = &kHandoffExport},
    {.family = {.name = "hotline_latency_seconds", .type = MetricType::kHistogram,
                .help = "Time spent in the target function, entry to return.", .unit = "seconds",
                .labels = "target", .capped = true},
     .render = render_latency},
    {.fields = &kSampleExport},
    {.fields = &kWorkqExport},
    {.family = {.name = "hotline_sampled_share", .type = kGauge,
                .help = "Share (0..1) of all samples since start whose IP was in the target function.",
                .labels = "target", .capped = true},
     .render = render_sampled_share},
    {.family = {.name = "hotline_probe_run_stats_enabled", .type = kGauge,
                .help = "1 when the kernel keeps BPF run statistics; 0 leaves the run counters at 0 "
                        "(grant CAP_SYS_ADMIN or set kernel.bpf_stats_enabled=1)."},
     .render = render_run_stats},
    {.family = {.name = "hotline_probe_runs", .type = kCounter,
                .help = "Times the kernel ran the program (BPF run statistics).", .labels = "target, program"},
     .render = render_runs},
    {.family = {.name = "hotline_probe_run_seconds", .type = kCounter,
                .help = "Time the kernel spent in the program (BPF run statistics; 0 when run statistics are off).",
                .unit = "seconds", .labels = "target, program"},
     .render = render_run_seconds},
    {.family = {.name = "hotline_drops", .type = kCounter,
                .help = "Events lost: recursion = runs the kernel skipped; latency_lost = returns without a recorded "
                        "entry; owner_evicted = objects pushed out of the full owner map (their next touch counts "
                        "as new).",
                .labels = "target, reason"},
     .render = render_drops},
    {.family = {.name = "hotline_finding", .type = kGauge,
                .help = "1 while a diagnosis rule holds over the window since the previous scrape, per fix it "
                        "prescribes here (`hotline diagnose` explains it; fix is empty when none applies).",
                .labels = "rule, fix, severity"},
     .render = render_findings},
    {.family = {.name = "hotline_read_errors", .type = kCounter,
                .help = "Scrapes where reading a session's counters failed."},
     .render = render_read_errors},
    {.family = {.name = "hotline_http_rejected", .type = kCounter, .help = "HTTP requests refused, by reason.",
                .labels = "reason"},
     .render = render_http_rejected},
    {.family = {.name = "hotline_series_dropped", .type = kCounter,
                .help = "Contention series left out because the series cap (metrics.max_series) was reached."},
     .render = render_series_dropped},
    {.family = {.name = "process_cpu_seconds", .type = kCounter,
                .help = "Total user and system CPU time spent in seconds.", .unit = "seconds"},
     .render = render_process<&ProcessStats::cpu_seconds>},
    {.family = {.name = "process_resident_memory_bytes", .type = kGauge, .help = "Resident memory size in bytes.",
                .unit = "bytes"},
     .render = render_process<&ProcessStats::resident_bytes>},
    {.family = {.name = "process_virtual_memory_bytes", .type = kGauge, .help = "Virtual memory size in bytes.",
                .unit = "bytes"},
     .render = render_process<&ProcessStats::virtual_bytes>},
    {.family = {.name = "process_open_fds", .type = kGauge, .help = "Number of open file descriptors."},
     .render = render_process<&ProcessStats::open_fds>},
    {.family = {.name = "process_max_fds", .type = kGauge, .help = "Maximum number of open file descriptors."},
     .render = render_process<&ProcessStats::max_fds>},
    {.family = {.name = "process_start_time_seconds", .type = kGauge,
                .help = "Start time of the process since unix epoch in seconds.", .unit = "seconds"},
     .render = render_process<&ProcessStats::start_time_seconds>},
};

}  // namespace

std::vector<MetricFamily> metric_families() {
    std::vector<MetricFamily> out;
    for (const auto& e : kFamilies) {
        if (e.fields) e.fields->families(out);
        else out.push_back(e.family);
    }
    return out;
}

namespace {

void check_entries(std::vector<std::string>& problems) {
    for (const auto& e : kFamilies) {
        bool by_field = e.fields != nullptr;
        if (by_field == (e.render != nullptr))
            problems.push_back("a registry entry needs exactly one of render, fields: \"" +
                               std::string(e.family.name) + "\"");
        if (by_field && !e.family.name.empty())
            problems.push_back("a field-table entry names a family of its own: \"" + std::string(e.family.name) + "\"");
        if (by_field) e.fields->check(problems);
    }
    for (CounterTable t : kCounterTables) {
        auto n = std::count_if(std::begin(kFamilies), std::end(kFamilies),
                               [&](const FamilyEntry& e) { return e.fields && e.fields->table == t; });
        if (n != 1)
            problems.push_back("field table \"" + std::string(to_string(t)) + "\" has " + std::to_string(n) +
                               " registry entries, not 1");
    }
}

}  // namespace

std::vector<std::string> check_metric_registry() {
    std::vector<std::string> problems;
    check_entries(problems);
    std::set<std::string_view> names;
    for (const auto& f : metric_families()) {
        std::string id = "family \"" + std::string(f.name) + "\"";
        if (f.name.empty()) problems.push_back("a family without a name");
        if (!names.insert(f.name).second) problems.push_back(id + ": duplicate name");
        if (f.help.empty()) problems.push_back(id + ": no help text");
        if (!f.unit.empty() && !f.name.ends_with(f.unit)) problems.push_back(id + ": name does not end with its unit");
        if (f.labels.find("(cpu)") != std::string_view::npos && f.type != MetricType::kCounter)
            problems.push_back(id + ": per-CPU series of a gauge");
    }
    return problems;
}

PromStats render_prometheus(std::ostream& os, const Snapshot& s, const ExporterInfo& info,
                            const ExporterCounters& counters, const PromOptions& opts) {
    Expo x(os, opts);
    Scrape c{x, s, info, counters, opts};
    for (const auto& e : kFamilies) {
        if (e.fields) {
            e.fields->render(c);
            continue;
        }
        x.begin(e.family);
        e.render(c);
    }
    x.finish();
    return {x.series(), x.dropped()};
}

}  // namespace hotline
