// SPDX-License-Identifier: Apache-2.0
// The field tables (metrics.hpp) and the /metrics family registry: complete
// entries, every field carried from its ABI slot through delta(), the daemon's
// merge of its sessions, the recording JSON, the per-CPU text tables and
// /metrics, and docs/metrics.md naming every family as the registry does.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "files.hpp"
#include "golden_util.hpp"
#include "hotline/report/output.hpp"
#include "hotline/report/prometheus.hpp"

using namespace hotline;

namespace {

std::string joined(const std::vector<std::string>& v) {
    std::string out;
    for (const auto& s : v) out += s + "\n";
    return out;
}

bool mentions(const std::vector<std::string>& problems, std::string_view what) {
    for (const auto& p : problems)
        if (p.find(what) != std::string::npos) return true;
    return false;
}

TEST(FieldTables, EveryEntryIsComplete) {
    EXPECT_EQ(joined(check_fields("target", kTargetFields)), "");
    EXPECT_EQ(joined(check_fields("handoff", kHandoffFields)), "");
    EXPECT_EQ(joined(check_fields("workq", kWorkqFields)), "");
    EXPECT_EQ(joined(check_fields("sample", kSampleFields)), "");
}

TEST(FieldTables, CheckRejectsIncompleteEntries) {
    const Field<HandoffCounters> bad[] = {
        {.name = "tracked", .abi = AbiSource::kHandoffCounts, .abi_offset = 0, .per_cpu = &HandoffCounters::tracked},
        {.name = "tracked", .abi = AbiSource::kHandoffCounts, .abi_offset = 8, .per_cpu = &HandoffCounters::same_cpu},
        {.name = "beyond",
         .abi = AbiSource::kHandoffCounts,
         .abi_offset = sizeof(hl_handoff_counts),
         .per_cpu = &HandoffCounters::remote},
        {.name = "silent", .abi = AbiSource::kHandoffCounts, .abi_offset = 16, .per_cpu = &HandoffCounters::cross_cpu,
         .prom = {.name = "hotline_silent"}},
        {.name = "nothing",
         .abi = AbiSource::kHandoffCounts,
         .abi_offset = 24,
         .prom = {.name = "hotline_x", .help = "x"}},
        {.name = "both",
         .abi = AbiSource::kHandoffCounts,
         .abi_offset = 32,
         .per_cpu = &HandoffCounters::new_objects,
         .value = &HandoffCounters::evictions},
        {.name = "unread", .value = &HandoffCounters::evictions},
        {.name = "column",
         .abi = AbiSource::kHandoffCounts,
         .abi_offset = 40,
         .value = &HandoffCounters::evictions,
         .text = "column"},
    };
    auto p = check_fields("handoff", bad);
    EXPECT_TRUE(mentions(p, "\"tracked\": duplicate name")) << joined(p);
    EXPECT_TRUE(mentions(p, "\"beyond\": ABI offset outside its source")) << joined(p);
    EXPECT_TRUE(mentions(p, "\"silent\": Prometheus family without help")) << joined(p);
    EXPECT_TRUE(mentions(p, "\"nothing\": needs exactly one of per_cpu, value, hist")) << joined(p);
    EXPECT_TRUE(mentions(p, "\"both\": needs exactly one of per_cpu, value, hist")) << joined(p);
    EXPECT_TRUE(mentions(p, "\"unread\": a counter must be read from BPF")) << joined(p);
    EXPECT_TRUE(mentions(p, "\"column\": a text column needs a per-CPU field")) << joined(p);

    const Field<TargetCounters> hist_past_end[] = {
        {.name = "log2_slots", .abi = AbiSource::kCounts, .abi_offset = 32, .hist = &TargetCounters::hist},
    };
    EXPECT_TRUE(mentions(check_fields("target", hist_past_end), "ABI offset outside its source"));
}

TEST(MetricRegistry, EveryFamilyIsComplete) { EXPECT_EQ(joined(check_metric_registry()), ""); }

// A snapshot whose every field holds `base` plus the field's position, so that
// a field read from or written to the wrong member shows.
template <class S>
void fill(S& s, Fields<S> fields, std::uint64_t base) {
    std::uint64_t n = base;
    for (const auto& f : fields) {
        ++n;
        if (f.per_cpu) s.*f.per_cpu = {n, 2 * n};
        else if (f.value) s.*f.value = n;
        else if (f.hist) (s.*f.hist).fill(n);
    }
}

Snapshot filled(std::uint64_t base) {
    Snapshot s;
    s.t = double(base);
    TargetCounters t;
    t.target = "dst_release";
    t.mechanism = Mechanism::kFentry;
    t.has_latency = true;
    t.has_handoffs = true;
    fill(t, kTargetFields, base);
    fill(t.handoffs, kHandoffFields, base);
    s.targets.push_back(t);
    s.has_workq = true;
    fill(s.workq, kWorkqFields, base);
    fill(s, kSampleFields, base);
    return s;
}

// Every field of the table in later - earlier: counters by difference, gauges as they stand.
template <class S>
void expect_delta(const S& d, Fields<S> fields, std::uint64_t later, std::uint64_t earlier) {
    std::uint64_t i = 0;
    for (const auto& f : fields) {
        ++i;
        std::uint64_t want = f.gauge ? later + i : later - earlier;
        if (f.per_cpu) {
            EXPECT_EQ(d.*f.per_cpu, (std::vector<std::uint64_t>{want, 2 * want})) << f.name;
        } else if (f.value) {
            EXPECT_EQ(d.*f.value, want) << f.name;
        } else if (f.hist) {
            EXPECT_EQ((d.*f.hist)[HL_HIST_SLOTS - 1], want) << f.name;
        }
    }
}

TEST(FieldTables, DeltaCarriesEveryField) {
    Interval iv = delta(filled(100), filled(1000));
    ASSERT_EQ(iv.d.targets.size(), 1u);
    expect_delta(iv.d.targets[0], kTargetFields, 1000, 100);
    expect_delta(iv.d.targets[0].handoffs, kHandoffFields, 1000, 100);
    expect_delta(iv.d.workq, kWorkqFields, 1000, 100);
    expect_delta(iv.d, kSampleFields, 1000, 100);
}

// A hot object's counts are running totals in a snapshot; an interval holds
// what it gained in that interval.  An object new in the later snapshot keeps
// its whole count; one the earlier snapshot lacked a match for is not mixed up
// with another target's object of the same id.
TEST(FieldTables, DeltaOfAHotObjectIsWhatItGained) {
    Snapshot earlier, later;
    earlier.objects = {{"dst_release", "dst_entry", 7, 40, 10, 1, ""}, {"queue_work_on", "work_struct", 9, 5, 0, 0, ""}};
    later.objects = {{"dst_release", "dst_entry", 7, 100, 25, 0, ""},
                     {"queue_work_on", "work_struct", 7, 3, 1, 1, ""},
                     {"queue_work_on", "work_struct", 9, 12, 2, 1, ""}};
    Interval iv = delta(earlier, later);
    ASSERT_EQ(iv.d.objects.size(), 3u);
    EXPECT_EQ(iv.d.objects[0].handoffs, 60u);
    EXPECT_EQ(iv.d.objects[0].cross_node, 15u);
    EXPECT_EQ(iv.d.objects[1].handoffs, 3u) << "same id, other target: a new object";
    EXPECT_EQ(iv.d.objects[1].cross_node, 1u);
    EXPECT_EQ(iv.d.objects[2].handoffs, 7u);
    EXPECT_EQ(iv.d.objects[2].cross_node, 2u);
}

template <class S>
void expect_json(const nlohmann::json& j, Fields<S> fields) {
    for (const auto& f : fields) {
        const nlohmann::json& in = f.json_group.empty() ? j : j.at(std::string(f.json_group));
        EXPECT_TRUE(in.contains(std::string(f.name))) << f.json_group << "." << f.name;
    }
}

TEST(FieldTables, RecordingCarriesEveryField) {
    Interval iv = delta(Snapshot{}, filled(1000));
    nlohmann::json j = to_json(iv);
    expect_json<TargetCounters>(j["targets"][0], kTargetFields);
    expect_json<HandoffCounters>(j["targets"][0]["handoffs"], kHandoffFields);
    expect_json<WorkqCounters>(j["workqueue"], kWorkqFields);
    expect_json<Snapshot>(j, kSampleFields);
}

template <class S>
void expect_families(const std::string& text, Fields<S> fields) {
    for (const auto& f : fields) {
        if (f.prom.name.empty()) continue;
        EXPECT_NE(text.find("# HELP " + std::string(f.prom.name)), std::string::npos) << f.name;
    }
}

TEST(FieldTables, PrometheusCarriesEveryExportedField) {
    ExporterInfo info;
    info.topo.cpus = {0, 1};
    info.topo.nodes = {0};
    std::ostringstream os;
    render_prometheus(os, filled(1000), info, ExporterCounters{}, PromOptions{});
    expect_families<TargetCounters>(os.str(), kTargetFields);
    expect_families<HandoffCounters>(os.str(), kHandoffFields);
    expect_families<WorkqCounters>(os.str(), kWorkqFields);
    expect_families<Snapshot>(os.str(), kSampleFields);
}

// Every field of the table in a snapshot equal to `want`'s.
template <class S>
void expect_same(const S& got, const S& want, Fields<S> fields) {
    for (const auto& f : fields) {
        if (f.per_cpu) {
            EXPECT_EQ(got.*f.per_cpu, want.*f.per_cpu) << f.name;
        } else if (f.value) {
            EXPECT_EQ(got.*f.value, want.*f.value) << f.name;
        } else if (f.hist) {
            EXPECT_EQ(got.*f.hist, want.*f.hist) << f.name;
        }
    }
}

// The daemon's merge of its sessions' snapshots keeps every field of every table.
TEST(FieldTables, MergingSessionsCarriesEveryField) {
    const Snapshot want = filled(1000);
    Snapshot empty_session, merged;
    merge_session(merged, std::move(empty_session));
    merge_session(merged, filled(1000));
    merge_session(merged, filled(5));  // a second sampling session: the first one's counts stay
    ASSERT_EQ(merged.targets.size(), 2u);
    expect_same(merged.targets[0], want.targets[0], kTargetFields);
    expect_same(merged.targets[0].handoffs, want.targets[0].handoffs, kHandoffFields);
    ASSERT_TRUE(merged.has_workq);
    expect_same(merged.workq, want.workq, kWorkqFields);
    expect_same(merged, want, kSampleFields);
}

std::vector<std::string> words(const std::string& line) {
    std::istringstream in(line);
    std::vector<std::string> out;
    for (std::string w; in >> w;) out.push_back(w);
    return out;
}

// The per-CPU text table shows every field with a text column, in table order,
// and CPU 1's row holds CPU 1's values.
template <class S>
void expect_text_columns(const std::string& text, const S& s, Fields<S> fields) {
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line) && !line.starts_with("  CPU")) {
    }
    ASSERT_TRUE(line.starts_with("  CPU")) << text;
    std::vector<std::string> head = words(line), row;
    while (std::getline(lines, line) && (row = words(line)).size() > 0 && row[0] != "1") {
    }
    ASSERT_FALSE(row.empty()) << text;
    std::size_t col = 1;
    for (const auto& f : fields) {
        if (f.text.empty()) continue;
        ASSERT_LT(col, head.size()) << f.name;
        EXPECT_EQ(head[col], f.text) << f.name;
        EXPECT_EQ(row.at(col), std::to_string((s.*f.per_cpu)[1])) << f.name;
        ++col;
    }
}

TEST(FieldTables, TextTablesCarryEveryColumn) {
    Interval iv;
    iv.t_end = 1;
    iv.d = filled(1000);
    Topology topo;
    topo.cpus = {0, 1};
    topo.nodes = {0};
    std::ostringstream handoffs, workq;
    render_handoffs_text(handoffs, iv, topo, true);
    render_workq_text(workq, iv.d.workq, topo, 1.0, "", 10);
    expect_text_columns(handoffs.str(), iv.d.targets[0].handoffs, kHandoffFields);
    expect_text_columns(workq.str(), iv.d.workq, kWorkqFields);
}

// A session reader's view: one CPU's ABI value with each field's slot holding a
// distinct number lands in that field's member.
TEST(FieldTables, AbiSlotsLandInTheirMembers) {
    hl_handoff_counts v{};
    auto* words = reinterpret_cast<std::uint64_t*>(&v);
    for (std::size_t i = 0; i < sizeof v / 8; ++i) words[i] = 1000 + i;
    HandoffCounters h;
    size_per_cpu(h, kHandoffFields, 2);
    add_cpu_value(h, kHandoffFields, AbiSource::kHandoffCounts, &v, 1);
    EXPECT_EQ(h.tracked[1], v.tracked);
    EXPECT_EQ(h.same_cpu[1], v.same_cpu);
    EXPECT_EQ(h.cross_cpu[1], v.cross_cpu);
    EXPECT_EQ(h.cross_node[1], v.cross_node);
    EXPECT_EQ(h.new_objects[1], v.new_objects);
    EXPECT_EQ(h.remote[1], v.remote);
    EXPECT_EQ(h.evictions, v.evicted);
    EXPECT_EQ(h.tracked[0], 0u);

    hl_counts c{};
    c.lat_count = 3;
    c.lat_sum_ns = 4;
    c.lat_lost = 5;
    c.hist[HL_HIST_SLOTS - 1] = 6;
    hl_hits hits{};
    hits.t[2].calls = 7;
    hits.t[2].events = 8;
    TargetCounters t;
    size_per_cpu(t, kTargetFields, 1);
    for (int twice = 0; twice < 2; ++twice) add_cpu_value(t, kTargetFields, AbiSource::kCounts, &c, 0);
    add_cpu_value(t, kTargetFields, AbiSource::kHitsSlot, &hits.t[2], 0);
    EXPECT_EQ(t.lat_count, 6u);
    EXPECT_EQ(t.lat_sum_ns, 8u);
    EXPECT_EQ(t.lat_lost, 10u);
    EXPECT_EQ(t.hist[HL_HIST_SLOTS - 1], 12u);
    EXPECT_EQ(t.calls, std::vector<std::uint64_t>{7});
    EXPECT_EQ(t.events, std::vector<std::uint64_t>{8});
}

// ------------------------------------------------------------ docs/metrics.md

std::string doc_name(const MetricFamily& f) {
    std::string name(f.name);
    if (f.type == MetricType::kCounter) name += "_total";
    if (f.type == MetricType::kInfo) name += "_info";
    return name;
}

// The first three cells of the family's row in docs/metrics.md.
std::string doc_row(const MetricFamily& f) {
    std::string type = f.type == MetricType::kInfo ? "gauge (OpenMetrics: info)" : std::string(to_string(f.type));
    std::string labels;
    std::string_view rest = f.labels;
    while (!rest.empty()) {
        auto comma = rest.find(", ");
        std::string_view l = rest.substr(0, comma);
        rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 2);
        if (!labels.empty()) labels += ", ";
        bool per_cpu_only = l.starts_with("(");
        if (per_cpu_only) l = l.substr(1, l.size() - 2);
        labels += (per_cpu_only ? "(`" : "`") + std::string(l) + (per_cpu_only ? "`)" : "`");
    }
    return "| `" + doc_name(f) + "` | " + type + " | " + (labels.empty() ? "" : labels + " ") + "|";
}

std::string metrics_doc_path() { return std::string(HOTLINE_FIXTURES) + "/../../docs/metrics.md"; }

// docs/metrics.md with a row for each family it lacks, at the end of its table
// (contention series, or the probes and the exporter), its meaning the family's
// help text for a person to extend.
std::string with_missing_rows(const std::string& doc, const std::vector<MetricFamily>& missing) {
    std::vector<std::string> lines;
    std::istringstream in(doc);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    for (const MetricFamily& f : missing) {
        // The last row of the family's table: the contention table comes first.
        std::size_t tables = 0, last_row = 0;
        for (std::size_t i = 0; i < lines.size(); ++i) {
            if (lines[i].starts_with("| metric |")) ++tables;
            if (tables == (f.capped ? 1u : 2u) && lines[i].starts_with("| `")) last_row = i;
        }
        if (!last_row) continue;
        lines.insert(lines.begin() + std::ptrdiff_t(last_row) + 1, doc_row(f) + " " + std::string(f.help) + " |");
    }
    std::string out;
    for (const auto& l : lines) out += l + "\n";
    return out;
}

TEST(MetricRegistry, DocsListEveryFamily) {
    auto text = testlib::read_file(metrics_doc_path());
    ASSERT_TRUE(text) << metrics_doc_path();
    std::set<std::string> names;
    // Copies: metric_families() returns its list by value.
    std::vector<MetricFamily> missing;
    for (const auto& f : metric_families()) {
        names.insert(doc_name(f));
        if (f.name.starts_with("process_")) continue;  // one row names them all
        if (text->find(doc_row(f)) == std::string::npos) missing.push_back(f);
    }
    if (!missing.empty() && golden::update_requested()) {
        std::ofstream(metrics_doc_path(), std::ios::binary | std::ios::trunc) << with_missing_rows(*text, missing);
        ADD_FAILURE() << "HOTLINE_UPDATE_GOLDEN=1: added " << missing.size()
                      << " rows to docs/metrics.md; say what each means and run again without it";
        return;
    }
    for (const MetricFamily& f : missing)
        ADD_FAILURE() << "docs/metrics.md has no row starting " << doc_row(f)
                      << " (HOTLINE_UPDATE_GOLDEN=1 adds it)";
    std::istringstream lines(*text);
    for (std::string line; std::getline(lines, line);) {
        if (!line.starts_with("| `hotline_")) continue;
        std::string name = line.substr(3, line.find('`', 3) - 3);
        EXPECT_TRUE(names.count(name)) << "docs/metrics.md lists " << name << ", which /metrics does not have";
    }
}

}  // namespace
