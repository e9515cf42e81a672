// SPDX-License-Identifier: Apache-2.0
// The recording page's discover sections: the struct types ranked by
// handoffs, the node x node matrix and the fields by cache line of the top ones.
#include <fmt/format.h>

#include "discover_html.hpp"
#include "hotline/report/charts.hpp"
#include "hotline/report/output.hpp"

namespace hotline {

namespace {

using nlohmann::json;
namespace ch = charts;

std::string ranking(const json& types, std::size_t top) {
    ch::BarChart same{"Same-CPU touches by type", "Touches per second of each struct type's objects on the CPU that "
                      "had them last.", "per s", {}};
    ch::BarChart cross{"Handoffs by type", "Touches per second of each struct type's objects on another CPU than "
                       "the last one (any node): the handoffs discover ranks by.", "per s", {}};
    for (std::size_t i = 0; i < types.size() && i < top; ++i) {
        cross.bars.push_back({types[i].value("type", ""), types[i].value("handoffs_per_s", 0.0)});
        same.bars.push_back({types[i].value("type", ""), types[i].value("same_cpu_per_s", 0.0)});
    }
    return "<div class=\"side\">\n" + ch::bar_chart(cross) + ch::bar_chart(same) + "</div>\n";
}

std::string node_matrix(const json& t) {
    const json& m = t.value("node_matrix", json::array());
    if (m.size() < 2) return "";
    ch::Heatmap h;
    h.title = "Handoffs between nodes: " + t.value("type", "");
    h.desc = fmt::format("Times an object of struct {} was touched on a CPU of one node after a CPU of another (or "
                         "the same) node had it (rows: the node it came from; columns: the node it went to).",
                         t.value("type", ""));
    h.row_label = "from";
    h.col_label = "to node";
    for (std::size_t i = 0; i < m.size(); ++i) {
        h.rows.push_back(fmt::format("node {}", i));
        h.cols.push_back(fmt::format("node {}", i));
        std::vector<double> row;
        for (const auto& v : m[i]) row.push_back(v.is_number() ? v.get<double>() : 0.0);
        h.cells.push_back(row);
    }
    return ch::heatmap(h);
}

std::string layout_table(const json& t) {
    if (!t.contains("layout")) return "";
    std::string o = fmt::format("<h3>struct {}: fields by cache line</h3>\n<table class=\"hot\">\n"
                                "<tr><th>line</th><th>fields</th><th>refcounts, atomics, locks</th></tr>\n",
                                xml_escape(t.value("type", "")));
    for (const auto& l : t["layout"].value("lines", json::array())) {
        std::string fields, shared;
        for (const auto& f : l.value("fields", json::array())) fields += (fields.empty() ? "" : ", ") + f.get<std::string>();
        for (const auto& f : l.value("written_by_every_user", json::array()))
            shared += (shared.empty() ? "" : ", ") + f.get<std::string>();
        o += fmt::format("<tr><td class=\"n\">{}</td><td>{}</td><td>{}</td></tr>\n", l.value("line", 0),
                         xml_escape(fields), xml_escape(shared));
    }
    return o + "</table>\n";
}

}  // namespace

std::string discover_sections(const json& doc, std::size_t top) {
    const json& d = doc.contains("discover") ? doc["discover"] : json();
    if (!d.is_object() || !d.contains("types") || !d["types"].is_array() || d["types"].empty()) return "";
    const json& types = d["types"];
    const json duty = d.contains("duty_cycle") && d["duty_cycle"].is_object() ? d["duty_cycle"] : json::object();
    const int percent = duty.value("percent", 100);
    const std::string watched =
        percent < 100 ? fmt::format(", attached {}% of the time (rates per attached second)", percent) : "";
    std::string o = fmt::format("<h2>Discovered types</h2>\n<p>{} attach points, 1 object in {} tracked{}. {}.</p>\n",
                                d.value("attach_points", 0), d.value("sample", 1), watched,
                                xml_escape(d.value("touch", "")));
    o += ranking(types, top);
    std::string matrices, layouts;
    for (std::size_t i = 0; i < types.size() && i < top; ++i) {
        if (types[i].value("handoffs_per_s", 0.0) <= 0) break;
        matrices += node_matrix(types[i]);
        layouts += layout_table(types[i]);
    }
    if (!matrices.empty()) o += "<div class=\"side\">\n" + matrices + "</div>\n";
    return o + layouts;
}

}  // namespace hotline
