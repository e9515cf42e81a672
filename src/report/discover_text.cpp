// SPDX-License-Identifier: Apache-2.0
// `hotline discover`'s text: the ranking of struct types by cross-CPU
// handoffs, then per top type its attach points, pairs, objects and lines.
#include <fmt/format.h>

#include <ostream>

#include "hotline/report/output.hpp"

namespace hotline {

namespace {

void render_setup(std::ostream& os, const nlohmann::json& d) {
    os << fmt::format("discover: {} attach points in {:.2f} s, 1 object in {} tracked (rates scaled to all); "
                      "the programs ran {:.0f} times/s, {:.0f} ns per run, {:.2f}% of one CPU\n",
                      d.value("attach_points", 0), d.value("attach_seconds", 0.0), d.value("sample", 1),
                      d.value("program_runs_per_s", 0.0), d.value("program_ns_per_run", 0.0),
                      d.value("program_cpu_percent", 0.0));
    const auto duty = d.value("duty_cycle", nlohmann::json::object());
    if (duty.value("percent", 100) < 100)
        os << fmt::format("  attached {}% of the time ({:.1f} s of every {:.1f} s; {:.1f} s in all): rates are per "
                          "attached second (--duty-cycle 100 watches throughout)\n",
                          duty.value("percent", 100), duty.value("period_s", 0.0) * duty.value("percent", 100) / 100,
                          duty.value("period_s", 0.0), duty.value("watched_s", 0.0));
    for (const auto& r : d.value("refused", nlohmann::json::array()))
        os << fmt::format("  refused: {}: {}\n", r.value("attach", ""), r.value("reason", ""));
    if (std::size_t over = d.value("over_capacity", std::size_t(0)))
        os << fmt::format("  {} more matching attach points not watched (64 per session): narrow --tracepoints, "
                          "--functions or --types\n", over);
    os << "  " << d.value("touch", "") << "\n\n";
}

void render_ranking(std::ostream& os, const nlohmann::json& types, std::size_t top) {
    os << fmt::format("{:<24} {:>12} {:>12} {:>12} {:>12} {:>10}\n", "type", "touches/s", "same-CPU/s", "cross-CPU/s",
                      "cross-node/s", "objects");
    std::size_t n = 0;
    for (const auto& t : types) {
        if (n++ >= top) break;
        os << fmt::format("{:<24} {:>12.0f} {:>12.0f} {:>12.0f} {:>12.0f} {:>10}{}\n", t.value("type", ""),
                          t.value("touches_per_s", 0.0), t.value("same_cpu_per_s", 0.0), t.value("cross_cpu_per_s", 0.0),
                          t.value("cross_node_per_s", 0.0), t.value("objects", 0),
                          t.value("single_attach_point", false) ? "  (one attach point)" : "");
    }
}

void render_lines(std::ostream& os, const nlohmann::json& layout, std::size_t max_lines) {
    std::size_t n = 0;
    const auto& lines = layout["lines"];
    for (const auto& l : lines) {
        if (n++ >= max_lines) {
            os << fmt::format("    ... {} more lines\n", lines.size() - max_lines);
            break;
        }
        std::string fields;
        for (const auto& f : l["fields"]) fields += (fields.empty() ? "" : ", ") + f.get<std::string>();
        os << fmt::format("    line {:>3}: {}\n", l.value("line", 0), fields);
    }
}

void render_type(std::ostream& os, const nlohmann::json& t) {
    os << fmt::format("\n{}: {:.0f} handoffs/s\n", t.value("type", ""), t.value("handoffs_per_s", 0.0));
    for (const auto& a : t["attach_points"])
        os << fmt::format("  seen by {:<44} {:>10.0f} touches/s, {:>10.0f} handoffs in/s\n", a.value("attach", ""),
                          a.value("touches_per_s", 0.0), a.value("handoffs_in_per_s", 0.0));
    for (const auto& p : t["handed_over"])
        os << fmt::format("  handed over {} -> {}: {}\n", p.value("from", ""), p.value("to", ""), p.value("handoffs", 0));
    for (const auto& o : t["hottest"])
        os << fmt::format("  {:<24} {:>8} handoffs ({} across nodes), last by {}\n", o.value("object", ""),
                          o.value("handoffs", 0), o.value("cross_node", 0), o.value("last_touched_by", ""));
    const auto& m = t.value("node_matrix", nlohmann::json::array());
    if (m.size() > 1) {
        os << "  handoffs by node (row: from, column: to):\n";
        for (std::size_t i = 0; i < m.size(); ++i) {
            os << fmt::format("    node {}", i);
            for (const auto& v : m[i]) os << fmt::format(" {:>10}", v.get<std::uint64_t>());
            os << "\n";
        }
    }
    if (t.contains("layout")) {
        os << "  fields by cache line:\n";
        render_lines(os, t["layout"], 8);
    }
}

}  // namespace

void render_discover_text(std::ostream& os, const nlohmann::json& d, std::size_t top) {
    render_setup(os, d);
    const auto& types = d["types"];
    if (types.empty()) {
        os << "no object of the watched types was seen: drive the kernel path (a workload or -- COMMAND)\n";
        return;
    }
    render_ranking(os, types, top);
    std::size_t n = 0;
    for (const auto& t : types) {
        if (n++ >= top || t.value("handoffs_per_s", 0.0) <= 0) break;
        render_type(os, t);
    }
}

}  // namespace hotline
