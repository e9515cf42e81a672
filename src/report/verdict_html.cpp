// SPDX-License-Identifier: Apache-2.0
// A validate verdict's "contention": per tracked object type, where each arm's
// handoffs arrived (per CPU, per operation), between which nodes, and the
// layout of the type's hot line.  Baseline and fix share one heatmap, so one
// shading scale compares them.
#include "verdict_html.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "html_parts.hpp"

namespace hotline {
namespace {

using nlohmann::json;
using namespace html;
namespace ch = charts;

// Columns a readable heatmap holds; past it the CPUs with the most handoffs in
// either arm are drawn, in CPU order, and the page says how many were left out.
constexpr std::size_t kMaxCpuColumns = 32;
// A node matrix past this is not drawn (a machine has at most a few dozen nodes;
// a larger one in a document is hand-made).
constexpr std::size_t kMaxNodes = 16;

const char* const kArms[] = {"baseline", "fix"};

// Per operation when the arm counted operations, else per trial.
double per_unit(double v, const json& arm) {
    double ops = num(arm, "ops"), trials = num(arm, "trials");
    if (std::isfinite(ops) && ops > 0) return v / ops;
    return std::isfinite(trials) && trials > 0 ? v / trials : v;
}

std::string unit_of(const json& c) {
    double ops = std::min(num(member(c, "baseline"), "ops"), num(member(c, "fix"), "ops"));
    return std::isfinite(ops) && ops > 0 ? "per operation" : "per trial";
}

// The CPU columns drawn: every CPU, or the busiest kMaxCpuColumns.
std::vector<std::size_t> cpu_columns(const std::vector<double> (&by_cpu)[2]) {
    std::size_t n = std::max(by_cpu[0].size(), by_cpu[1].size());
    std::vector<std::pair<double, std::size_t>> load;
    for (std::size_t cpu = 0; cpu < n; ++cpu) {
        double v = 0;
        for (auto& arm : by_cpu)
            if (cpu < arm.size() && std::isfinite(arm[cpu])) v += arm[cpu];
        load.push_back({v, cpu});
    }
    if (load.size() > kMaxCpuColumns) {
        std::stable_sort(load.begin(), load.end(), [](auto& a, auto& b) { return a.first > b.first; });
        load.resize(kMaxCpuColumns);
    }
    std::vector<std::size_t> cols;
    for (auto& [v, cpu] : load) cols.push_back(cpu);
    std::sort(cols.begin(), cols.end());
    return cols;
}

std::string by_cpu_heatmap(const json& c, const std::string& what, std::size_t* left_out) {
    std::vector<double> by_cpu[2] = {numbers(member(member(c, "baseline"), "handoffs_by_cpu")),
                                     numbers(member(member(c, "fix"), "handoffs_by_cpu"))};
    auto cols = cpu_columns(by_cpu);
    *left_out = std::max(by_cpu[0].size(), by_cpu[1].size()) - cols.size();
    ch::Heatmap h;
    h.title = fmt::format("Handoffs {} by CPU: {}", unit_of(c), what);
    h.desc = fmt::format("Times an object of {} was touched on a CPU after another CPU had it, {}, by the CPU it "
                         "arrived on; one row per arm.", what, unit_of(c));
    h.row_label = "arm";
    h.col_label = "arrived on";
    for (std::size_t cpu : cols) h.cols.push_back(fmt::format("CPU {}", cpu));
    for (int a = 0; a < 2; ++a) {
        h.rows.push_back(kArms[a]);
        std::vector<double> row;
        for (std::size_t cpu : cols)
            row.push_back(cpu < by_cpu[a].size() ? per_unit(by_cpu[a][cpu], member(c, kArms[a])) : 0.0);
        h.cells.push_back(std::move(row));
    }
    return ch::heatmap(h);
}

// Rows "baseline node N" (the node the objects came from) then "fix node N"; "" on one node.
std::string by_node_heatmap(const json& c, const std::string& what) {
    const json& m0 = member(member(c, "baseline"), "node_matrix");
    std::size_t nodes = m0.is_array() ? m0.size() : 0;
    if (nodes < 2 || nodes > kMaxNodes) return "";
    ch::Heatmap h;
    h.title = fmt::format("Handoffs {} between nodes: {}", unit_of(c), what);
    h.desc = fmt::format("Handoffs of {} objects {} by node pair, each arm's rows the node the object came from and "
                         "the columns the node it went to.", what, unit_of(c));
    h.row_label = "from";
    h.col_label = "to node";
    for (std::size_t to = 0; to < nodes; ++to) h.cols.push_back(fmt::format("node {}", to));
    for (const char* arm : kArms) {
        const json& m = member(member(c, arm), "node_matrix");
        for (std::size_t from = 0; from < nodes; ++from) {
            h.rows.push_back(fmt::format("{} node {}", arm, from));
            std::vector<double> row = m.is_array() && from < m.size() ? numbers(m[from]) : std::vector<double>{};
            row.resize(nodes, 0.0);
            for (double& v : row) v = per_unit(v, member(c, arm));
            h.cells.push_back(std::move(row));
        }
    }
    return ch::heatmap(h);
}

std::string arm_summary(const json& c) {
    std::string o;
    for (const char* arm : kArms) {
        double total = num(member(c, arm), "handoffs");
        o += fmt::format("{}{}: {} handoffs {}", o.empty() ? "" : "; ", arm,
                         ch::human(std::isfinite(total) ? per_unit(total, member(c, arm)) : NAN), unit_of(c));
    }
    double sample = num(c, "sample");
    if (std::isfinite(sample) && sample > 1) o += fmt::format(" (1 object in {} tracked, scaled)", sample);
    return o;
}

std::string layout_of(const json& verdict, const std::string& type, const std::string& kernel) {
    for (auto& l : member(verdict, "layouts"))
        if (str(l, "type") == type) return ch::cache_line(cache_line_of(l, kernel));
    return "";
}

}  // namespace

std::string contention_section(const json& verdict) {
    const json& cs = member(verdict, "contention");
    if (!cs.is_array() || cs.empty()) return "";
    std::string kernel = str(member(member(verdict, "context"), "kernel"), "release");
    std::string o = "<h2>What was contended, and what the fix changed</h2>\n";
    for (auto& c : cs) {
        std::string what = object_label(str(c, "type"), str(c, "target"));
        std::size_t left_out = 0;
        std::string cpus = by_cpu_heatmap(c, what, &left_out);
        o += fmt::format("<h3>{}</h3>\n<p>{}{}</p>\n", esc(what), esc(arm_summary(c)),
                         left_out ? fmt::format(" The {} CPUs with the fewest handoffs are left out.", left_out) : "");
        o += "<div class=\"side\">\n" + cpus + by_node_heatmap(c, what) + "</div>\n";
        o += layout_of(verdict, str(c, "type"), kernel);
    }
    return o;
}

}  // namespace hotline
