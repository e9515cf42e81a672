// SPDX-License-Identifier: Apache-2.0
// The HTML report (html_report.hpp): page kinds by schema, each a list of
// sections built from the saved JSON and drawn by the chart renderers.
#include "hotline/report/html_report.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <map>

#include "discover_html.hpp"
#include "html_parts.hpp"
#include "verdict_html.hpp"
#include "hotline/report/charts.hpp"
#include "hotline/report/document_bounds.hpp"
#include "hotline/report/finding_output.hpp"
#include "hotline/base/json_limits.hpp"
#include "hotline/report/output.hpp"
#include "hotline/model/verdict.hpp"

namespace hotline {
namespace {

using nlohmann::json;
namespace ch = charts;
using namespace html;

constexpr const char* kStyle = R"(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;color:#111;background:#fff;margin:0 auto;max-width:1100px;padding:16px 24px}
h1{font-size:22px;margin:8px 0}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ccc}h3{font-size:15px;margin:16px 0 4px}
table{border-collapse:collapse;margin:6px 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}th{background:#f2f2f2}
td.n{text-align:right;font-variant-numeric:tabular-nums}
code,pre{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,monospace;font-size:13px}pre{background:#f6f6f6;padding:8px;white-space:pre-wrap;border:1px solid #ddd}
figure.chart{margin:8px 0 16px;display:inline-block;vertical-align:top}figcaption{font-size:12px;color:#444}
.side{display:flex;flex-wrap:wrap;gap:16px}
svg text{font:11px system-ui,Helvetica,Arial,sans-serif;fill:#222}svg .axis-label{font-size:12px;fill:#444}
svg .grid{stroke:#e3e3e3}svg .axis{stroke:#888}svg .cell{font-size:12px}svg .cell.dark{fill:#fff}
svg .empty{fill:#777;font-style:italic}svg .line-outline{fill:none;stroke:#333;stroke-width:1.5}
svg .field.anchor{font-weight:bold}svg .median{stroke:#111;stroke-width:2}
svg .threshold{stroke:#111;stroke-dasharray:5 3;stroke-width:1.5}svg .unity{stroke:#999;stroke-dasharray:2 2}
svg .good-side{fill:#009E73;fill-opacity:.10}svg .ci{stroke-width:6;stroke-linecap:round}svg .verdict{font-size:18px;font-weight:bold}
.verdict{font-weight:bold;padding:1px 6px;border:2px solid}.PASS{color:#007a5a;border-color:#009E73}
.FAIL{color:#b34700;border-color:#D55E00}.INCONCLUSIVE{color:#8a5d00;border-color:#E69F00}
.NOT-APPLICABLE,.INFO,.ERROR{color:#444;border-color:#888}
@media print{body{max-width:none;padding:0}h2{break-after:avoid}figure.chart,table{break-inside:avoid}pre{white-space:pre-wrap}}
)";

std::string page(const std::string& title, const std::string& body) {
    return fmt::format("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                       "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                       "<title>{}</title>\n<style>{}</style>\n</head>\n<body>\n{}</body>\n</html>\n",
                       esc(title), kStyle, body);
}

// When the page was generated: SOURCE_DATE_EPOCH when set (reproducible-builds.org:
// the docs' screenshots and their check render the same bytes), else now.
std::string now_utc() {
    std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    if (const char* epoch = std::getenv("SOURCE_DATE_EPOCH")) {
        char* end = nullptr;
        long long v = std::strtoll(epoch, &end, 10);
        if (*epoch && !*end && v >= 0) t = std::time_t(v);
    }
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
    return buf;
}

// Rows of a two-column facts table; empty values are left out.
std::string facts_table(const std::vector<std::pair<std::string, std::string>>& rows) {
    std::string o = "<table class=\"facts\">\n";
    for (auto& [k, v] : rows)
        if (!v.empty()) o += fmt::format("<tr><th>{}</th><td>{}</td></tr>\n", esc(k), esc(v));
    return o + "</table>\n";
}

std::string kernel_line(const json& k) {
    if (!k.is_object()) return "";
    std::string s = str(k, "release");
    if (auto m = str(k, "machine"); !m.empty()) s += " " + m;
    if (auto l = str(k, "lockdown"); !l.empty()) s += ", lockdown " + l;
    if (k.contains("btf")) s += member(k, "btf") == true ? ", BTF" : ", no BTF";
    return s;
}

std::string topology_line(const json& t) {
    const json& nodes = member(t, "nodes");
    if (!nodes.is_array()) return "";
    std::string s = fmt::format("{} NUMA node{}, {} CPUs", nodes.size(), nodes.size() == 1 ? "" : "s",
                                member(t, "cpus").is_array() ? member(t, "cpus").size() : 0);
    for (auto& n : nodes) {
        std::string cpus;
        for (auto& c : member(n, "cpus")) cpus.append(cpus.empty() ? "" : ",").append(c.dump());
        s += fmt::format("; node {}: CPUs {}", str(n, "node"), cpus);
    }
    return s;
}

std::string tool_line(const json& doc) {
    const json& t = member(doc, "tool");
    std::string v = str(t, "version");
    if (v.empty()) return fmt::format("page rendered by hotline {}", HOTLINE_VERSION);
    return fmt::format("hotline {} (page rendered by hotline {})", v, HOTLINE_VERSION);
}

// The node of each CPU, from the recording's topology.
std::vector<int> node_of_cpu(const json& topo) {
    std::vector<int> node;
    for (auto& c : member(topo, "cpus")) {
        double cpu = num(c, "cpu"), n = num(c, "node");
        if (!std::isfinite(cpu) || cpu < 0 || cpu > 65535) continue;
        if (node.size() <= std::size_t(cpu)) node.resize(std::size_t(cpu) + 1, 0);
        node[std::size_t(cpu)] = std::isfinite(n) ? int(n) : 0;
    }
    return node;
}

int node_count(const std::vector<int>& node) {
    int n = 1;
    for (int x : node) n = std::max(n, x + 1);
    return n;
}

// ---- findings (diagnose) ---------------------------------------------------------
// A diagnosis (schema hotline.findings, docs/diagnose.md) is the document itself
// or, in a recording, analysis.diagnosis.
const json& diagnosis_of(const json& doc) {
    if (member(doc, "findings").is_array()) return doc;
    return member(member(doc, "analysis"), "diagnosis");
}

std::string evidence_text(const json& finding) {
    std::string o;
    for (auto& e : member(finding, "evidence"))
        if (e.is_object())
            o += fmt::format("{}{} = {} ({} {}; {}, {})", o.empty() ? "" : "; ", str(e, "metric"),
                             ch::human(num(e, "value")), str(e, "op"), ch::human(num(e, "threshold")),
                             str(e, "mechanism"), str(e, "fidelity"));
    return o;
}

// The fixes a finding prescribes, each with the command that would confirm it.
std::string prescription_text(const json& finding) {
    std::string o;
    for (auto& f : member(finding, "fixes"))
        if (bool_or(f, "prescribed", false))
            o += fmt::format("{}{}: {}", o.empty() ? "" : "; ", str(f, "fix"), str(f, "confirm"));
    return o;
}

std::string findings_section(const json& doc) {
    const json& f = member(diagnosis_of(doc), "findings");
    if (!f.is_array()) return "";
    std::string o = "<h2>Findings</h2>\n";
    if (f.empty()) return o + "<p>No finding.</p>\n";
    o += "<table class=\"findings\">\n<tr><th>finding</th><th>what was seen</th><th>prescription</th></tr>\n";
    for (auto& x : f)
        o += fmt::format("<tr class=\"finding\"><td>{} ({})</td><td>{}<br>{}</td><td>{}</td></tr>\n",
                         esc(str(x, "rule")), esc(str(x, "severity")), esc(str(x, "summary")),
                         esc(evidence_text(x)), esc(prescription_text(x)));
    return o + "</table>\n";
}

// ---- recording ---------------------------------------------------------------
std::string plan_table(const json& plan) {
    if (!plan.is_array() || plan.empty()) return "";
    std::string o = "<table class=\"plan\">\n<tr><th>target</th><th>mechanism</th><th>fidelity</th><th>attach</th></tr>\n";
    for (auto& p : plan)
        o += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td></tr>\n", esc(str(p, "target")),
                         esc(member(p, "observable") == false ? "not observable" : str(p, "mechanism")),
                         esc(str(p, "fidelity")), esc(str(p, "attach")));
    return o + "</table>\n";
}

// Handoffs were tracked on this percent of the time (record --handoff-share);
// recordings from before totals.tracking have only the option, older ones
// tracked throughout.
int tracking_percent(const json& d) {
    double p = num(member(member(d, "totals"), "tracking"), "percent");
    if (!std::isfinite(p)) p = num(member(d, "options"), "handoff_share");
    return std::isfinite(p) ? int(p) : 100;
}

std::string tracking_line(const json& d) {
    const int percent = tracking_percent(d);
    if (percent >= 100) return "throughout";
    const double secs = num(member(member(d, "totals"), "tracking"), "seconds");
    return fmt::format("{}% of the time{}: the handoff counts and rates below cover those windows, per call "
                       "figures are scaled to the whole time",
                       percent, std::isfinite(secs) ? " (" + ch::human(secs) + " s)" : "");
}

std::string recording_header(const HtmlInput& in) {
    const json& d = in.doc;
    std::string scen = str(member(d, "scenario"), "scenario");
    std::string argv;
    for (auto& a : member(member(d, "command"), "argv"))
        argv.append(argv.empty() ? "" : " ")
            .append(a.is_string() ? a.get<std::string>() : a.dump());
    double secs = num(member(d, "totals"), "seconds");
    std::string o = "<h1>hotline recording</h1>\n";
    o += facts_table({{"kernel", kernel_line(member(d, "kernel"))},
                      {"topology", topology_line(member(d, "topology"))},
                      {"recorded", std::isfinite(secs) ? ch::human(secs) + " s" : ""},
                      {"handoffs tracked", tracking_line(d)},
                      {"scenario", scen},
                      {"command", argv},
                      {"file", in.source},
                      {"tool", tool_line(d)},
                      {"page generated", now_utc()}});
    return o + "<h3>Mechanism and fidelity per target</h3>\n" + plan_table(member(d, "plan"));
}

// Calls per second of each target over the recording, one chart per node.
std::string calls_over_time(const json& d) {
    std::vector<int> node = node_of_cpu(member(d, "topology"));
    int nodes = node_count(node);
    const json& ivs = member(d, "intervals");
    if (!ivs.is_array() || ivs.empty()) return "<h2>Calls over time</h2>\n<p>No interval was recorded.</p>\n";
    double t0 = num(ivs[0], "t_start");
    std::vector<std::vector<ch::Series>> per_node(static_cast<std::size_t>(nodes));
    std::map<std::string, std::size_t> index;
    for (auto& iv : ivs) {
        double secs = num(iv, "seconds"), t = num(iv, "t_end") - t0;
        for (auto& tg : member(iv, "targets")) {
            std::string name = str(tg, "target");
            auto [it, fresh] = index.emplace(name, index.size());
            if (fresh)
                for (auto& s : per_node) s.push_back({name, {}, {}});
            std::vector<double> by_node(std::size_t(nodes), 0);
            auto calls = numbers(member(tg, "calls"));
            for (std::size_t c = 0; c < calls.size(); ++c) by_node[c < node.size() ? std::size_t(node[c]) : 0] += calls[c];
            for (int n = 0; n < nodes; ++n) {
                per_node[std::size_t(n)][it->second].x.push_back(t);
                per_node[std::size_t(n)][it->second].y.push_back(secs > 0 ? by_node[std::size_t(n)] / secs : NAN);
            }
        }
    }
    std::string o = "<h2>Calls over time</h2>\n<div class=\"side\">\n";
    for (int n = 0; n < nodes; ++n)
        o += ch::line_chart({fmt::format("Calls per second on node {}", n),
                             fmt::format("Calls per second of each target on the CPUs of NUMA node {}, per recorded interval.", n),
                             "seconds since start", "calls/s", per_node[std::size_t(n)]});
    return o + "</div>\n";
}

// Per CPU: one chart per target, one line per CPU (folded away: it is long).
std::string calls_per_cpu(const json& d) {
    const json& ivs = member(d, "intervals");
    if (!ivs.is_array() || ivs.empty()) return "";
    double t0 = num(ivs[0], "t_start");
    std::map<std::string, std::vector<ch::Series>> by_target;
    for (auto& iv : ivs) {
        double secs = num(iv, "seconds"), t = num(iv, "t_end") - t0;
        for (auto& tg : member(iv, "targets")) {
            auto& series = by_target[str(tg, "target")];
            auto calls = numbers(member(tg, "calls"));
            if (series.size() < calls.size())
                for (std::size_t c = series.size(); c < calls.size(); ++c) series.push_back({fmt::format("CPU {}", c), {}, {}});
            for (std::size_t c = 0; c < calls.size(); ++c) {
                series[c].x.push_back(t);
                series[c].y.push_back(secs > 0 ? calls[c] / secs : NAN);
            }
        }
    }
    std::string o = "<details><summary>Calls per CPU</summary>\n<div class=\"side\">\n";
    for (auto& [name, series] : by_target)
        o += ch::line_chart({"Calls per second per CPU: " + name, "Calls per second of " + name + " on each CPU.",
                             "seconds since start", "calls/s", series});
    return o + "</div>\n</details>\n";
}

// What a count of handoffs covers, for a chart's or a table's caption.
std::string windows_note(const json& d) {
    const int percent = tracking_percent(d);
    return percent >= 100 ? "" : fmt::format(", counted in the tracking windows ({}% of the time)", percent);
}

std::string handoff_heatmaps(const json& d) {
    std::string o;
    for (auto& tg : member(member(d, "totals"), "targets")) {
        const json& m = member(member(tg, "handoffs"), "node_matrix");
        if (!m.is_array() || m.empty()) continue;
        std::string what = object_label(str(tg, "object_type"), str(tg, "target"));
        ch::Heatmap h;
        h.title = "Handoffs between nodes: " + what;
        h.desc = fmt::format("Times an object of {} was touched on one node after another CPU had it, by node pair "
                             "(rows: the node it came from; columns: the node it went to){}.",
                             what, windows_note(d));
        h.row_label = "from";
        h.col_label = "to node";
        for (std::size_t i = 0; i < m.size(); ++i) {
            h.rows.push_back(fmt::format("node {}", i));
            h.cols.push_back(fmt::format("node {}", i));
            h.cells.push_back(numbers(m[i]));
        }
        o += ch::heatmap(h);
    }
    if (o.empty()) return "";
    return "<h2>Object handoffs</h2>\n<div class=\"side\">\n" + o + "</div>\n";
}

std::string layouts_section(const json& d) {
    const json& ls = member(member(d, "analysis"), "layouts");
    if (!ls.is_array() || ls.empty()) return "";
    std::string o = "<h2>Hot object layout</h2>\n";
    for (auto& l : ls) o += ch::cache_line(cache_line_of(l, str(member(d, "kernel"), "release")));
    return o;
}

std::string hot_objects_table(const json& d) {
    const json& hot = member(d, "hot_objects");
    if (!hot.is_array() || hot.empty()) return "";
    const char* per = tracking_percent(d) >= 100 ? "/s" : " per tracked s";
    std::string o = fmt::format("<h3>Hot objects</h3>\n<table class=\"hot\">\n<tr><th>target</th><th>type</th>"
                                "<th>handoffs{}</th><th>cross-node{}</th><th>last CPU</th></tr>\n",
                                per, per);
    for (auto& h : hot)
        o += fmt::format("<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>\n",
                         esc(str(h, "target")), esc(str(h, "type")), ch::human(num(h, "handoffs_per_s")),
                         ch::human(num(h, "cross_node_per_s")), esc(str(h, "last_cpu")));
    return o + "</table>\n";
}

std::string latency_section(const json& d) {
    const json& hs = member(d, "histograms");
    if (!hs.is_object() || hs.empty()) return "";
    std::string o = "<h2>Latency</h2>\n<div class=\"side\">\n";
    for (auto& [target, h] : hs.items()) {
        ch::Histogram g;
        g.unit = str(h, "unit");
        g.title = "Latency of " + target;
        g.desc = fmt::format("Calls of {} by duration ({}, log2 buckets, {}).", target, g.unit, str(h, "mechanism"));
        for (auto& b : member(h, "buckets")) g.buckets.push_back({num(b, "low_ns"), num(b, "high_ns"), num(b, "count")});
        o += ch::histogram(g);
    }
    return o + "</div>\n";
}

std::string workqueue_section(const json& d) {
    const json& w = member(member(d, "totals"), "workqueue");
    const json& fns = member(w, "work_functions");
    if (!fns.is_object() || fns.empty()) return "";
    double secs = num(member(d, "totals"), "seconds");
    ch::BarChart queued{"queue_work_on by work function", "Work items queued per second, by work function.",
                        "per s", {}};
    for (auto& [fn, n] : fns.items())
        queued.bars.push_back({fn, n.is_number() && secs > 0 ? n.get<double>() / secs : NAN});
    double irqs = 0;
    for (double v : numbers(member(w, "irqs"))) irqs += std::isfinite(v) ? v : 0;
    ch::BarChart per_irq{"Work queued per interrupt", "Work items queued per hardware interrupt, by work function.",
                         "per IRQ", {}};
    for (auto& [fn, n] : fns.items())
        per_irq.bars.push_back({fn, n.is_number() && irqs > 0 ? n.get<double>() / irqs : NAN});
    return "<h2>queue_work_on attribution</h2>\n<div class=\"side\">\n" + ch::bar_chart(queued) +
           ch::bar_chart(per_irq) + "</div>\n";
}

// Types of a discover recording drawn in detail.
constexpr std::size_t kHtmlDiscoverTypes = 8;

std::string recording_body(const HtmlInput& in) {
    const json& d = in.doc;
    return recording_header(in) + calls_over_time(d) + calls_per_cpu(d) + handoff_heatmaps(d) + layouts_section(d) +
           hot_objects_table(d) + latency_section(d) + workqueue_section(d) + discover_sections(d, kHtmlDiscoverTypes) +
           findings_section(d);
}

// ---- verdict -------------------------------------------------------------------
std::string badge(const std::string& verdict) {
    return fmt::format("<span class=\"verdict {0}\">{0}</span>", esc(verdict.empty() ? "ERROR" : verdict));
}

// The command that gives this verdict again: the one recorded, else one built
// from what the verdict says about itself.
std::string reproduce_command(const json& v) {
    const json& ctx = member(v, "context");
    if (auto c = str(ctx, "command"); !c.empty()) return c;
    std::string fix = str(v, "fix");
    if (str(v, "mode") == "diff")
        return fmt::format("hotline diff {} {} --expect {}", str(member(ctx, "baseline"), "file"),
                           str(member(ctx, "candidate"), "file"), fix);
    const json& o = member(v, "options");
    std::string cmd = "hotline validate --fix " + fix;
    if (auto s = str(v, "scenario"); !s.empty()) cmd += " --scenario " + s;
    if (std::isfinite(num(o, "min_each"))) cmd += " --trials " + str(o, "min_each");
    if (std::isfinite(num(o, "max_each"))) cmd += " --max-trials " + str(o, "max_each");
    if (double t = num(ctx, "trial_s"); std::isfinite(t)) cmd += fmt::format(" --duration {}s", t);
    return cmd;
}

std::string verdict_kernels(const json& ctx) {
    if (auto k = kernel_line(member(ctx, "kernel")); !k.empty()) return k;
    std::string b = kernel_line(member(member(ctx, "baseline"), "kernel"));
    std::string c = kernel_line(member(member(ctx, "candidate"), "kernel"));
    return b.empty() && c.empty() ? "" : "baseline " + b + "; candidate " + c;
}

std::string verdict_header(const HtmlInput& in) {
    const json& v = in.doc;
    const json& trials = member(v, "trials_count");
    std::string o = fmt::format("<h1>hotline verdict: {} {}</h1>\n", esc(str(v, "fix")), badge(str(v, "verdict")));
    o += fmt::format("<p class=\"reason\">{}</p>\n", esc(str(v, "reason")));
    o += facts_table({{"fix", str(v, "fix")},
                      {"scenario", str(v, "scenario")},
                      {"mode", str(v, "mode")},
                      {"kernel", verdict_kernels(member(v, "context"))},
                      {"trials", fmt::format("baseline {}, fix {}", str(trials, "baseline"), str(trials, "fix"))},
                      {"file", in.source},
                      {"tool", tool_line(v)},
                      {"page generated", now_utc()}});
    return o + fmt::format("<h3>Reproduce</h3>\n<pre class=\"reproduce\">{}</pre>\n", esc(reproduce_command(v)));
}

// The trial values of one metric in one arm ("baseline" or "fix").
std::vector<double> arm_values(const json& trials, const std::string& metric, const char* arm) {
    std::vector<double> v;
    for (auto& t : trials)
        if (str(t, "arm") == arm) {
            double x = num(member(t, "metrics"), metric.c_str());
            if (std::isfinite(x)) v.push_back(x);
        }
    return v;
}

std::string criterion_figure(const json& c, const json& trials) {
    ch::CriterionChart g;
    std::string metric = str(c, "metric");
    g.title = str(c, "description");
    g.verdict = str(c, "verdict");
    g.threshold = num(c, "threshold_ratio");
    g.lower_is_better = str(c, "better") != "higher";
    g.baseline = arm_values(trials, metric, "baseline");
    g.fix = arm_values(trials, metric, "fix");
    const json& r = member(c, "ratio");
    if (r.is_object()) g.ratio = ch::RatioInterval{num(r, "estimate"), num(r, "ci_low"), num(r, "ci_high")};
    g.desc = fmt::format("{} ({}): {} baseline and {} fix trials of {}; medians {} and {}; {}. Verdict {}.",
                         g.title, str(c, "kind"), g.baseline.size(), g.fix.size(), metric.empty() ? "no metric" : metric,
                         ch::human(num(c, "median_baseline")), ch::human(num(c, "median_fix")), str(c, "reason"),
                         g.verdict);
    std::string o = fmt::format("<h3>{} {} <small>({})</small></h3>\n", esc(g.title), badge(g.verdict), esc(str(c, "kind")));
    o += fmt::format("<p>{}{}</p>\n", esc(str(c, "reason")), str(c, "note").empty() ? "" : " &mdash; " + esc(str(c, "note")));
    return o + ch::criterion_chart(g);
}

std::string notes_list(const json& v) {
    const json& n = member(v, "notes");
    if (!n.is_array() || n.empty()) return "";
    std::string o = "<h2>Notes</h2>\n<ul>\n";
    for (auto& x : n) o += "<li>" + esc(x.is_string() ? x.get<std::string>() : x.dump()) + "</li>\n";
    return o + "</ul>\n";
}

// A diff's two kernels: each layout of the baseline beside the candidate's.
std::string layouts_side_by_side(const HtmlInput& in) {
    if (!in.baseline || !in.candidate) return "";
    const json& bl = member(member(*in.baseline, "analysis"), "layouts");
    const json& cl = member(member(*in.candidate, "analysis"), "layouts");
    if (!bl.is_array() || bl.empty()) return "";
    std::string bk = str(member(*in.baseline, "kernel"), "release"), ck = str(member(*in.candidate, "kernel"), "release");
    std::string o = "<h2>Layout on each kernel</h2>\n";
    for (auto& b : bl) {
        o += "<div class=\"side layout-pair\">\n" + ch::cache_line(cache_line_of(b, bk));
        for (auto& c : cl)
            if (str(c, "type") == str(b, "type")) o += ch::cache_line(cache_line_of(c, ck));
        o += "</div>\n";
    }
    return o;
}

std::string verdict_body(const HtmlInput& in) {
    const json& v = in.doc;
    std::string o = verdict_header(in) + "<h2>Criteria</h2>\n";
    const json& cs = member(v, "criteria");
    if (!cs.is_array() || cs.empty()) o += "<p>No criterion was judged.</p>\n";
    for (auto& c : cs) o += criterion_figure(c, member(v, "trials"));
    return o + contention_section(v) + layouts_side_by_side(in) + findings_section(v) + notes_list(v);
}

std::string diagnosis_body(const HtmlInput& in) {
    std::string o = findings_section(in.doc);
    const json& unjudged = member(in.doc, "unjudged");
    if (unjudged.is_array() && !unjudged.empty()) {
        o += "<h2>Rules not judged</h2>\n<ul>\n";
        for (auto& u : unjudged) o += fmt::format("<li>{}: {}</li>\n", esc(str(u, "rule")), esc(str(u, "why")));
        o += "</ul>\n";
    }
    return o;
}

struct PageKind {
    const char* schema;
    const char* title;
    std::string (*body)(const HtmlInput&);
};

// One entry per saved document kind.
constexpr PageKind kPages[] = {
    {kRecordingSchema, "hotline recording", recording_body},
    {kVerdictSchema, "hotline verdict", verdict_body},
    {kFindingsSchema, "hotline diagnosis", diagnosis_body},
};

}  // namespace

std::vector<std::string> html_schemas() {
    std::vector<std::string> s;
    for (auto& p : kPages) s.push_back(p.schema);
    return s;
}

std::size_t max_page_bytes(const HtmlInput& in) {
    std::size_t bytes = in.doc.dump().size();
    if (in.baseline) bytes += in.baseline->dump().size();
    if (in.candidate) bytes += in.candidate->dump().size();
    return kPageBaseBytes + kMaxPageGrowth * bytes;
}

// A recording read back from a file is drawn only within bounds (CPU and node
// ids, per-CPU arrays, matrices, buckets): anything else was not written by
// hotline.
Status recording_in_bounds(const json& doc, const std::string& name) {
    if (str(doc, "schema") != kRecordingSchema) return ok_status();
    auto problems = recording_bound_problems(doc);
    if (problems.empty()) return ok_status();
    return make_error(fmt::format("{}: {}", name.empty() ? "the recording" : name, fmt::join(problems, "; ")), EINVAL,
                      "this is not a recording hotline wrote (or it was edited): record it again with `hotline record -o FILE`");
}

Result<std::string> render_html(const HtmlInput& in) {
    std::string schema = str(in.doc, "schema");
    if (auto st = recording_in_bounds(in.doc, in.source); !st) return st.error();
    if (in.baseline)
        if (auto st = recording_in_bounds(*in.baseline, "the baseline recording"); !st) return st.error();
    if (in.candidate)
        if (auto st = recording_in_bounds(*in.candidate, "the candidate recording"); !st) return st.error();
    for (auto& p : kPages)
        if (schema == p.schema) {
            std::string title = p.title;
            if (auto fix = str(in.doc, "fix"); !fix.empty()) title += ": " + fix + " " + str(in.doc, "verdict");
            std::string html = page(title, p.body(in));
            if (html.size() > max_page_bytes(in))
                return make_error(fmt::format("the page would be {} bytes, more than {} times its document", html.size(),
                                              kMaxPageGrowth),
                                  EFBIG, "this is not a document hotline wrote (or it was edited)");
            return html;
        }
    std::string known;
    for (auto& s : html_schemas()) known += (known.empty() ? "" : ", ") + s;
    return make_error(fmt::format("cannot render a document of schema \"{}\" as HTML; known: {}",
                                  schema.empty() ? "(none)" : schema, known),
                      EINVAL);
}

}  // namespace hotline
