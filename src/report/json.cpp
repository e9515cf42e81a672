// SPDX-License-Identifier: Apache-2.0
// JSON renderers and the versioned recording format.
#include <nlohmann/json.hpp>

#include "hotline/report/output.hpp"

namespace hotline {

using nlohmann::json;

json to_json(const KernelInfo& k) {
    return json{{"release", k.release},
                {"machine", k.machine},
                {"btf", k.btf},
                {"lockdown", k.lockdown},
                {"tracefs_mounted", k.tracefs_mounted},
                {"kprobes", k.kprobes},
                {"hardware_pmu", k.pmu},
                {"capabilities", {{"root", k.caps.root}, {"held", k.caps.held}, {"missing", k.caps.missing}}}};
}

json to_json(const Topology& t) {
    json nodes = json::array();
    for (int n : t.nodes) nodes.push_back({{"node", n}, {"cpus", t.cpus_of(n)}});
    json cpus = json::array();
    for (int c : t.cpus) cpus.push_back({{"cpu", c}, {"node", t.node_of(c)}});
    return json{{"nodes", nodes}, {"cpus", cpus}, {"numa_from_sysfs", t.from_sysfs_nodes}};
}

json to_json(const Plan& p) {
    json arr = json::array();
    for (auto& t : p.targets) {
        json rej = json::array();
        for (auto& r : t.rejected) rej.push_back({{"mechanism", to_string(r.mechanism)}, {"reason", r.reason}});
        json j{{"target", t.target},
               {"mechanism", to_string(t.mechanism)},
               {"fidelity", to_string(t.fidelity)},
               {"observable", t.observable()},
               {"latency", t.latency},
               {"attach", t.attach},
               {"rejected", rej}};
        if (!t.observable()) j["reason"] = t.unavailable_reason;
        arr.push_back(std::move(j));
    }
    return arr;
}

namespace {

// Writes every field of the table into j (grouped fields into j[group]);
// with_groups false leaves the grouped ones out.
template <class S>
void put_fields(json& j, const S& s, Fields<S> fields, bool with_groups = true) {
    for (const auto& f : fields) {
        if (!f.json_group.empty() && !with_groups) continue;
        json& into = f.json_group.empty() ? j : j[std::string(f.json_group)];
        std::string key(f.name);
        if (f.per_cpu) into[key] = s.*f.per_cpu;
        else if (f.value) into[key] = s.*f.value;
        else if (f.hist) into[key] = std::vector<std::uint64_t>((s.*f.hist).begin(), (s.*f.hist).end());
    }
}

}  // namespace

json to_json(const TargetCounters& c) {
    json j{{"target", c.target},
           {"mechanism", to_string(c.mechanism)},
           {"fidelity", to_string(c.fidelity)},
           {"calls_total", c.total_calls()}};
    put_fields(j, c, kTargetFields, c.has_latency);
    if (c.has_latency) j["latency"]["unit"] = "ns";
    if (c.has_handoffs) {
        j["object_type"] = c.object_type;
        j["handoffs"] = to_json(c.handoffs);
    }
    return j;
}

json cost_to_json(const std::vector<ProgCost>& cost) {
    json arr = json::array();
    for (auto& c : cost)
        arr.push_back({{"target", c.target},
                       {"program", c.program},
                       {"run_cnt", c.run_cnt},
                       {"run_time_ns", c.run_time_ns},
                       {"timed_runs", c.timed_runs},
                       {"ns_per_run", c.ns_per_run()},
                       {"recursion_misses", c.recursion_misses}});
    return arr;
}

json to_json(const Interval& iv) {
    json targets = json::array();
    for (auto& t : iv.d.targets) targets.push_back(to_json(t));
    json j{{"t_start", iv.t_start}, {"t_end", iv.t_end}, {"seconds", iv.seconds()}, {"targets", targets}};
    // Handoff counts cover the tracking windows only (record's --handoff-share).
    j["tracking"] = {{"percent", iv.d.track_percent}, {"seconds", iv.tracking_seconds()}};
    if (!iv.d.samples_total.empty()) put_fields(j, iv.d, kSampleFields);
    j["cost"] = cost_to_json(iv.d.cost);
    if (iv.d.has_workq) j["workqueue"] = to_json(iv.d.workq);
    return j;
}

json json_document(const char* schema, int version) {
    return json{{"schema", schema}, {"version", version}, {"tool", {{"name", "hotline"}, {"version", HOTLINE_VERSION}}}};
}

RecordingWriter::RecordingWriter(const KernelInfo& k, const Topology& t, const Plan& p) {
    doc_ = json_document(kRecordingSchema, kRecordingVersion);
    doc_["kernel"] = to_json(k);
    doc_["topology"] = to_json(t);
    doc_["plan"] = to_json(p);
    doc_["intervals"] = json::array();
}

void RecordingWriter::add_interval(const Interval& iv) { doc_["intervals"].push_back(to_json(iv)); }

void RecordingWriter::replace_last_interval(const Interval& iv) { doc_["intervals"].back() = to_json(iv); }

void RecordingWriter::finish(const Interval& whole, int exit_status, const std::vector<std::string>& argv) {
    doc_["totals"] = to_json(whole);
    json hist = json::object();
    std::uint64_t lost = 0, misses = 0;
    for (auto& t : whole.d.targets) {
        lost += t.lat_lost;
        if (!t.has_latency) continue;
        json slots = json::array();
        for (int i = 0; i < HL_HIST_SLOTS; ++i)
            if (t.hist[i])
                slots.push_back({{"low_ns", hist_slot_low(i)}, {"high_ns", (std::uint64_t(1) << (i + 1)) - 1},
                                 {"count", t.hist[i]}});
        hist[t.target] = {{"unit", "ns"}, {"mechanism", to_string(t.mechanism)}, {"buckets", slots}};
    }
    for (auto& c : whole.d.cost) misses += c.recursion_misses;
    doc_["histograms"] = hist;
    json hot = json::array();
    for (auto& o : top_objects(whole.d.objects, 20)) hot.push_back(to_json(o, whole.tracking_seconds()));
    doc_["hot_objects"] = hot;
    doc_["cost"] = cost_to_json(whole.d.cost);
    doc_["drops"] = {{"recursion_misses", misses}, {"latency_unpaired", lost}};
    if (!argv.empty()) doc_["command"] = {{"argv", argv}, {"exit_status", exit_status}};
}

std::vector<std::string> check_recording(const json& doc) {
    std::vector<std::string> problems;
    auto need = [&](const char* key, json::value_t type) {
        if (!doc.contains(key)) problems.push_back(std::string("missing \"") + key + "\"");
        else if (doc[key].type() != type &&
                 !(type == json::value_t::number_integer && doc[key].is_number_integer()))
            problems.push_back(std::string("\"") + key + "\" has the wrong type");
    };
    if (!doc.is_object()) return {"not a JSON object"};
    need("schema", json::value_t::string);
    need("version", json::value_t::number_integer);
    need("tool", json::value_t::object);
    need("kernel", json::value_t::object);
    need("topology", json::value_t::object);
    need("plan", json::value_t::array);
    need("intervals", json::value_t::array);
    need("totals", json::value_t::object);
    if (!problems.empty()) return problems;
    if (doc["schema"] != kRecordingSchema) problems.push_back("schema is not " + std::string(kRecordingSchema));
    if (doc["version"].get<int>() > kRecordingVersion)
        problems.push_back("recording version is newer than this hotline understands");
    for (auto& iv : doc["intervals"]) {
        if (!iv.contains("targets") || !iv["targets"].is_array()) {
            problems.push_back("an interval has no targets array");
            break;
        }
        for (auto& t : iv["targets"])
            if (!t.contains("target") || !t.contains("calls") || !t.contains("mechanism") || !t.contains("fidelity"))
                problems.push_back("an interval target lacks target/calls/mechanism/fidelity");
    }
    return problems;
}

}  // namespace hotline

namespace hotline {

nlohmann::json to_json(const HandoffCounters& h) {
    nlohmann::json j{{"node_matrix", h.matrix},
                     {"sample", h.sample},
                     {"handoffs_total", h.handoffs()},
                     {"cross_node_total", h.total(h.cross_node)}};
    put_fields(j, h, kHandoffFields);
    return j;
}

nlohmann::json to_json(const HotObject& o, double seconds) {
    double s = seconds > 0 ? seconds : 1;
    return nlohmann::json{{"target", o.target},     {"type", o.type},
                          {"id", o.id},             {"handoffs", o.handoffs},
                          {"cross_node", o.cross_node}, {"handoffs_per_s", double(o.handoffs) / s},
                          {"cross_node_per_s", double(o.cross_node) / s}, {"last_cpu", o.last_cpu},
                          {"detail", o.detail}};
}

nlohmann::json to_json(const LineLayout& l) {
    nlohmann::json fields = nlohmann::json::array();
    for (auto& f : l.on_line) fields.push_back({{"field", f.path}, {"offset", f.offset}, {"size", f.size}});
    return nlohmann::json{{"type", l.type},       {"container", l.container}, {"size", l.type_size},
                          {"anchor", l.anchor},   {"anchor_offset", l.anchor_offset},
                          {"line_start", l.line_start}, {"line_end", l.line_start + kCacheLine - 1},
                          {"fields_on_line", fields}, {"shares_line", l.flagged}, {"other_lines", l.clear}};
}

nlohmann::json to_json(const WorkqCounters& w) {
    nlohmann::json funcs = nlohmann::json::object();
    for (auto& [f, n] : w.funcs) funcs[f] = n;
    nlohmann::json j{{"work_functions", funcs}, {"queue_to_execute", {{"unit", "ns"}}}};
    put_fields(j, w, kWorkqFields);
    return j;
}

}  // namespace hotline
