// SPDX-License-Identifier: Apache-2.0
// Renderers: text tables, bcc-style histograms and JSON, all to injected streams.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "hotline/kernel/kernel.hpp"
#include "hotline/model/layout.hpp"
#include "hotline/model/metrics.hpp"
#include "hotline/model/plan.hpp"

namespace hotline {

// Text.
void render_probe_text(std::ostream& os, const KernelInfo& k, const Topology& topo,
                       const Plan& plan);
void render_interval_text(std::ostream& os, const Interval& iv, const Topology& topo,
                          bool per_cpu, const std::string& title);
void render_log2_hist(std::ostream& os, const Log2Hist& h, const std::string& unit);
void render_cost_text(std::ostream& os, const std::vector<ProgCost>& cost, double seconds);
// Node x node handoff matrix per target with same/cross-CPU/cross-node totals.
void render_handoffs_text(std::ostream& os, const Interval& iv, const Topology& topo, bool per_cpu);
void render_hot_objects_text(std::ostream& os, const std::vector<HotObject>& top, double seconds);
void render_layouts_text(std::ostream& os, const std::vector<LineLayout>& layouts);
// A recording's "discover" section: the types ranked by cross-CPU handoffs,
// the `top` of them in detail.
void render_discover_text(std::ostream& os, const nlohmann::json& discover, std::size_t top);
void render_workq_text(std::ostream& os, const WorkqCounters& w, const Topology& topo, double seconds,
                       const std::string& finding, std::size_t top_funcs);

// JSON.
nlohmann::json to_json(const KernelInfo& k);
nlohmann::json to_json(const Topology& t);
nlohmann::json to_json(const Plan& p);
nlohmann::json to_json(const TargetCounters& c);
nlohmann::json to_json(const Interval& iv);
nlohmann::json cost_to_json(const std::vector<ProgCost>& cost);
nlohmann::json to_json(const HandoffCounters& h);
nlohmann::json to_json(const HotObject& o, double seconds);
nlohmann::json to_json(const LineLayout& l);
nlohmann::json to_json(const WorkqCounters& w);

// Every JSON document hotline prints or writes is an object that starts with
// {"schema": NAME, "version": N, "tool": {...}}; docs/schemas/NAME.schema.json
// describes each kind (N is its version: raised when a field changes meaning or
// goes away, not when one is added).  The verdict's constants are in verdict.hpp.
inline constexpr int kRecordingVersion = 1;
inline constexpr const char* kRecordingSchema = "hotline.recording";
// The most intervals a recording may hold: `record` refuses a duration and
// interval that would give more, `diff` and `report` refuse a file that has more.
inline constexpr std::size_t kMaxRecordingIntervals = 10000;
inline constexpr const char* kProbeSchema = "hotline.probe";
inline constexpr const char* kCostSchema = "hotline.cost";
inline constexpr const char* kScenarioListSchema = "hotline.scenario-list";
inline constexpr const char* kScenarioResultSchema = "hotline.scenario-result";
inline constexpr const char* kFixListSchema = "hotline.fix-list";
inline constexpr const char* kFixSchema = "hotline.fix";

// The head of a JSON document: schema, version and the tool that wrote it.
nlohmann::json json_document(const char* schema, int version = 1);
// A document's text, newline-terminated: `schema`, `version` and `tool` first,
// then the other keys in name order; numbers at most 12 significant digits.
// Every document hotline prints or writes goes through it.
std::string document_text(const nlohmann::json& doc, int indent = 1);

// Builds the versioned recording file incrementally.
class RecordingWriter {
public:
    RecordingWriter(const KernelInfo& k, const Topology& t, const Plan& p);
    void set_options(nlohmann::json opts) { doc_["options"] = std::move(opts); }
    void add_interval(const Interval& iv);
    void replace_last_interval(const Interval& iv);  // after at least one add_interval
    void finish(const Interval& whole, int exit_status_or_minus1,
                const std::vector<std::string>& argv);
    void set(const std::string& key, nlohmann::json v) { doc_[key] = std::move(v); }
    const nlohmann::json& doc() const { return doc_; }

private:
    nlohmann::json doc_;
};

// Escapes text for XML attributes and character data (the JUnit writer's rules):
// the five markup characters become entities; control characters other than
// tab, newline and carriage return become '?', since XML 1.0 forbids them even
// as character references.
std::string xml_escape(std::string_view s);

// Validates a recording's structure; returns a list of problems (empty when valid).
std::vector<std::string> check_recording(const nlohmann::json& doc);

}  // namespace hotline
