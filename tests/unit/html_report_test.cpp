// SPDX-License-Identifier: Apache-2.0
// The HTML page of each saved document kind, from the golden fixtures: the
// charts it holds, their marks, and that it fetches nothing.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <regex>
#include <sstream>

#include "hotline/report/html_report.hpp"
#include "hotline/base/util.hpp"
#include "files.hpp"

using hotline::HtmlInput;
using hotline::render_html;
using testlib::count;

namespace {

nlohmann::json golden_document(const std::string& name) {
    auto text = hotline::read_file(std::string(HOTLINE_FIXTURES) + "/golden/" + name);
    EXPECT_TRUE(text) << name;
    return nlohmann::json::parse(text ? *text : "{}");
}


// Marks inside the figures of one chart kind.
std::size_t marks_in(const std::string& page, const std::string& kind) {
    std::size_t n = 0, at = 0;
    std::string open = "data-chart=\"" + kind + "\"";
    while ((at = page.find(open, at)) != std::string::npos) {
        std::size_t end = page.find("</figure>", at);
        n += count(page.substr(at, end - at), "class=\"mark");
        at = end;
    }
    return n;
}

// Self-contained: no script, no external reference of any kind.
void expect_self_contained(const std::string& page) {
    EXPECT_EQ(page.find("<script"), std::string::npos);
    EXPECT_EQ(page.find("<link"), std::string::npos);
    EXPECT_EQ(page.find("@import"), std::string::npos);
    EXPECT_EQ(page.find("url("), std::string::npos);
    std::regex external(R"((src|href)\s*=)");
    EXPECT_FALSE(std::regex_search(page, external));
    EXPECT_EQ(page.find("NaN"), std::string::npos);
    EXPECT_EQ(page.find(">nan<"), std::string::npos);
    EXPECT_EQ(page.find(">inf<"), std::string::npos);
}

// A saved document is a file anyone can hand over, and its strings come from
// the kernel (release, symbol and type names), the command line and the fix
// catalog: each must reach the page as text, never as markup.  The quotes
// would end an attribute, the angle brackets open an element.
constexpr const char* kHostile = "\"'><script>alert(1)</script>";
constexpr const char* kHostileText = "&quot;&apos;&gt;&lt;script&gt;alert(1)&lt;/script&gt;";

// Appends kHostile to every string of the document but the schema (it picks
// the page) and the trial arms (they pick a chart's points), and to the names
// that are object keys (latency histograms by target, work by function).
void taint(nlohmann::json& j, bool keyed_by_name = false) {
    if (j.is_string()) {
        j = j.get<std::string>() + kHostile;
    } else if (j.is_array()) {
        for (auto& x : j) taint(x);
    } else if (j.is_object()) {
        nlohmann::json out = nlohmann::json::object();
        for (auto& [k, v] : j.items()) {
            nlohmann::json x = v;
            if (k != "schema" && k != "arm") taint(x, k == "histograms" || k == "work_functions");
            out[keyed_by_name ? k + kHostile : k] = std::move(x);
        }
        j = std::move(out);
    }
}

void expect_inert(const std::string& page, const std::string& kernel) {
    EXPECT_EQ(page.find("<script"), std::string::npos) << "a document's string became markup";
    EXPECT_EQ(page.find("'>"), std::string::npos) << "a document's string ended an attribute";
    EXPECT_NE(page.find(kernel + kHostileText), std::string::npos) << "the kernel release, escaped";
}

}  // namespace

TEST(HtmlReport, Recording) {
    auto page = render_html(HtmlInput{golden_document("recording.json"), "recording.json", {}, {}});
    ASSERT_TRUE(page) << page.error().message();
    expect_self_contained(*page);
    EXPECT_NE(page->find("6.1.0-18-amd64"), std::string::npos) << "kernel in the header";
    EXPECT_NE(page->find("2 NUMA nodes, 4 CPUs"), std::string::npos);
    // Two nodes: one chart each, one line per target (4 targets, 2 intervals).
    EXPECT_EQ(count(*page, "data-chart=\"line\""), 2u + 4u) << "per node, then per CPU per target";
    EXPECT_EQ(count(*page, "data-chart=\"heatmap\""), 2u) << "the two targets that track handoffs";
    EXPECT_EQ(marks_in(*page, "heatmap"), 8u) << "2x2 cells per target";
    EXPECT_EQ(count(*page, "data-chart=\"cacheline\""), 1u);
    EXPECT_EQ(marks_in(*page, "cacheline"), 5u);
    EXPECT_EQ(count(*page, "data-chart=\"histogram\""), 2u);
    EXPECT_EQ(marks_in(*page, "histogram"), 6u);
    EXPECT_EQ(count(*page, "data-chart=\"bars\""), 2u);
    EXPECT_EQ(marks_in(*page, "bars"), 8u);
    EXPECT_EQ(count(*page, "<desc>"), count(*page, "<figure"));
}

// Handoffs tracked in windows (record's --handoff-share): the header says the
// share, and the counts and rates say they cover the windows.
TEST(HtmlReport, RecordingSaysWhatShareOfTheTimeHandoffsWereTracked) {
    nlohmann::json doc = golden_document("recording.json");
    auto whole = render_html(HtmlInput{doc, "recording.json", {}, {}});
    ASSERT_TRUE(whole) << whole.error().message();
    EXPECT_NE(whole->find("<th>handoffs tracked</th><td>throughout</td>"), std::string::npos) << "tracked throughout";
    EXPECT_EQ(whole->find("tracking windows"), std::string::npos);
    doc["totals"]["tracking"] = {{"percent", 25}, {"seconds", 2.5}};
    doc["hot_objects"] = {{{"target", "dst_release"}, {"type", "dst_entry"}, {"handoffs_per_s", 10.0},
                           {"cross_node_per_s", 1.0}, {"last_cpu", "1"}}};
    auto windows = render_html(HtmlInput{doc, "recording.json", {}, {}});
    ASSERT_TRUE(windows) << windows.error().message();
    EXPECT_NE(windows->find("25% of the time (2.5 s)"), std::string::npos) << "the header gives the share";
    EXPECT_EQ(count(*windows, "counted in the tracking windows (25% of the time)"), 2u) << "each heatmap says so";
    EXPECT_NE(windows->find("<th>handoffs per tracked s</th>"), std::string::npos) << "hot objects' rate";
    doc["totals"].erase("tracking");
    doc["options"] = {{"handoff_share", 25}};
    auto option_only = render_html(HtmlInput{doc, "recording.json", {}, {}});
    ASSERT_TRUE(option_only) << option_only.error().message();
    EXPECT_NE(option_only->find("<td>25% of the time: "), std::string::npos) << "a recording with the option only";
}

TEST(HtmlReport, VerdictTrials) {
    auto doc = golden_document("verdict_mixed.json");
    auto page = render_html(HtmlInput{doc, "", {}, {}});
    ASSERT_TRUE(page) << page.error().message();
    expect_self_contained(*page);
    EXPECT_EQ(count(*page, "data-chart=\"criterion\""), doc["criteria"].size());
    std::size_t points = 0;
    for (auto& c : doc["criteria"])
        for (auto& t : doc["trials"])
            if (c["metric"].is_string() && t["metrics"].contains(c["metric"].get<std::string>())) ++points;
    EXPECT_EQ(marks_in(*page, "criterion"), points) << "one point per trial per criterion";
    EXPECT_NE(page->find("<pre class=\"reproduce\">hotline validate --fix early-demux-off --scenario tcp-crr"),
              std::string::npos);
    EXPECT_NE(page->find("class=\"verdict FAIL\""), std::string::npos);
}

// What was contended and what the fix changed: the arms' handoffs by CPU in one
// heatmap and by node pair in another, then the object's layout.
TEST(HtmlReport, VerdictShowsWhatWasContended) {
    auto doc = golden_document("verdict_pass.json");
    ASSERT_TRUE(doc.contains("contention")) << "the golden verdict carries its trials' handoffs";
    auto page = render_html(HtmlInput{doc, "", {}, {}});
    ASSERT_TRUE(page) << page.error().message();
    expect_self_contained(*page);
    EXPECT_NE(page->find("What was contended, and what the fix changed"), std::string::npos);
    EXPECT_NE(page->find("Handoffs per operation by CPU: dst_entry (dst_release)"), std::string::npos);
    EXPECT_NE(page->find("Handoffs per operation between nodes: dst_entry (dst_release)"), std::string::npos);
    EXPECT_EQ(count(*page, "data-chart=\"heatmap\""), 2u);
    EXPECT_EQ(marks_in(*page, "heatmap"), 2u * 4u + 4u * 2u) << "2 arms x 4 CPUs, then 2 arms x 2 nodes x 2 nodes";
    EXPECT_EQ(count(*page, "data-chart=\"cacheline\""), 1u);
    EXPECT_NE(page->find("lwtstate"), std::string::npos) << "the field sharing the refcount's line";
    // Each CPU cell says its handoffs per operation: the fix arm's CPU 2 had none.
    EXPECT_NE(page->find("<title>fix to CPU 2: 0</title>"), std::string::npos);
    EXPECT_EQ(page->find("<title>baseline to CPU 2: 0</title>"), std::string::npos);
}

TEST(HtmlReport, AVerdictWithoutContentionHasNoSuchSection) {
    auto page = render_html(HtmlInput{golden_document("verdict_mixed.json"), "", {}, {}});
    ASSERT_TRUE(page) << page.error().message();
    EXPECT_EQ(page->find("What was contended"), std::string::npos);
    EXPECT_EQ(count(*page, "data-chart=\"heatmap\""), 0u);
}

TEST(HtmlReport, DiffWithBothLayoutsSideBySide) {
    // The diff fixtures carry no layout: the recording's, and the same line
    // without the fields that moved away on the candidate.
    auto baseline = golden_document("diff_baseline.json"), candidate = golden_document("diff_candidate.json");
    auto layout = golden_document("recording.json")["analysis"]["layouts"];
    baseline["analysis"]["layouts"] = layout;
    auto& on_line = layout[0]["fields_on_line"];
    on_line.erase(on_line.begin() + 3, on_line.end());
    layout[0]["shares_line"] = {"__use"};
    candidate["analysis"]["layouts"] = layout;
    auto page = render_html(HtmlInput{golden_document("diff_verdict.json"), "", baseline, candidate});
    ASSERT_TRUE(page) << page.error().message();
    expect_self_contained(*page);
    EXPECT_EQ(count(*page, "class=\"side layout-pair\""), 1u);
    EXPECT_EQ(count(*page, "data-chart=\"cacheline\""), 2u);
    EXPECT_EQ(marks_in(*page, "cacheline"), 5u + 3u);
    EXPECT_NE(page->find("hotline diff diff_baseline.json diff_candidate.json --expect"), std::string::npos);
}

TEST(HtmlReport, RecordedCommandIsTheReproducer) {
    auto doc = golden_document("verdict_pass.json");
    doc["context"]["command"] = "hotline validate --fix x --trials 7";
    auto page = render_html(HtmlInput{doc, "", {}, {}});
    ASSERT_TRUE(page);
    EXPECT_NE(page->find("<pre class=\"reproduce\">hotline validate --fix x --trials 7</pre>"), std::string::npos);
}

TEST(HtmlReport, EveryVerdictFixtureRenders) {
    for (auto* f : {"verdict_pass.json", "verdict_error.json", "verdict_not_applicable.json"}) {
        auto page = render_html(HtmlInput{golden_document(f), f, {}, {}});
        ASSERT_TRUE(page) << f;
        expect_self_contained(*page);
    }
}

TEST(HtmlReport, FindingsWhenTheDocumentHasThem) {
    auto doc = golden_document("recording.json");
    doc["analysis"]["diagnosis"]["findings"] = {
        {{"rule", "dst-read-mostly-on-refcount-line"},
         {"severity", "warning"},
         {"summary", "refcount shares its line"},
         {"evidence", {{{"metric", "layout.dst_entry.read_mostly_on_refcnt_line"}, {"value", 2}, {"op", ">="},
                        {"threshold", 1}, {"mechanism", "btf"}, {"fidelity", "exact"}}}},
         {"fixes", {{{"fix", "dst-refcnt-false-sharing"}, {"prescribed", true}, {"confirm", "hotline ab --fix dst-refcnt-false-sharing"}},
                    {{"fix", "numa-local"}, {"prescribed", false}, {"confirm", "hotline validate --fix numa-local"}}}}}};
    auto page = render_html(HtmlInput{doc, "", {}, {}});
    ASSERT_TRUE(page);
    EXPECT_EQ(count(*page, "<tr class=\"finding\">"), 1u);
    EXPECT_NE(page->find("dst-refcnt-false-sharing: hotline ab --fix dst-refcnt-false-sharing"), std::string::npos);
    EXPECT_NE(page->find("layout.dst_entry.read_mostly_on_refcnt_line = 2"), std::string::npos);
    EXPECT_EQ(page->find("numa-local: hotline validate"), std::string::npos);
}

TEST(HtmlReport, AWrongTypedPrescribedFlagIsNotAPrescription) {
    auto doc = golden_document("recording.json");
    doc["analysis"]["diagnosis"]["findings"] = {
        {{"rule", "r"}, {"fixes", {{{"fix", "numa-local"}, {"prescribed", "yes"}, {"confirm", "hotline validate"}}}}}};
    auto page = render_html(HtmlInput{doc, "", {}, {}});
    ASSERT_TRUE(page);
    EXPECT_EQ(count(*page, "<tr class=\"finding\">"), 1u);
    EXPECT_EQ(page->find("numa-local: hotline validate"), std::string::npos);
}

TEST(HtmlReport, DegenerateDocumentsRenderWithoutCharts) {
    auto page = render_html(HtmlInput{{{"schema", "hotline.recording"}}, "", {}, {}});
    ASSERT_TRUE(page);
    EXPECT_NE(page->find("No interval was recorded."), std::string::npos);
    auto verdict = render_html(HtmlInput{{{"schema", "hotline.verdict"}, {"criteria", nullptr}}, "", {}, {}});
    ASSERT_TRUE(verdict);
    EXPECT_NE(verdict->find("No criterion was judged."), std::string::npos);
}

TEST(HtmlReport, UnknownSchemaIsAnError) {
    auto page = render_html(HtmlInput{{{"schema", "something.else"}}, "", {}, {}});
    ASSERT_FALSE(page);
    EXPECT_NE(page.error().message().find("something.else"), std::string::npos);
    EXPECT_NE(page.error().message().find("hotline.recording"), std::string::npos);
}

TEST(HtmlReport, EveryStringOfTheDocumentIsText) {
    auto rec = golden_document("recording.json");
    rec["analysis"]["diagnosis"]["findings"] = {
        {{"rule", "r"}, {"severity", "warning"}, {"summary", "s"},
         {"evidence", {{{"metric", "m"}, {"value", 2}, {"op", ">="}, {"threshold", 1}, {"mechanism", "btf"}}}},
         {"fixes", {{{"fix", "f"}, {"prescribed", true}, {"confirm", "hotline ab --fix f"}}}}}};
    rec["scenario"] = {{"scenario", "tcp-crr"}};
    taint(rec);
    auto page = render_html(HtmlInput{rec, kHostile, {}, {}});
    ASSERT_TRUE(page) << page.error().message();
    expect_inert(*page, "6.1.0-18-amd64");
    // The kernel release and the target names are drawn in the charts too.
    EXPECT_NE(page->find("<title>dst_entry" + std::string(kHostileText) + " refcount line on 6.1.0-18-amd64"),
              std::string::npos);
    EXPECT_NE(page->find(">dst_release" + std::string(kHostileText) + "</text>"), std::string::npos);

    // A diff's verdict page: the verdict's own strings and both recordings' layouts.
    auto verdict = golden_document("diff_verdict.json");
    verdict["notes"] = {"n"};
    auto baseline = golden_document("diff_baseline.json"), candidate = golden_document("diff_candidate.json");
    const auto layouts = golden_document("recording.json")["analysis"]["layouts"];
    baseline["analysis"]["layouts"] = candidate["analysis"]["layouts"] = layouts;
    for (auto* d : {&verdict, &baseline, &candidate}) taint(*d);
    auto diff = render_html(HtmlInput{verdict, kHostile, baseline, candidate});
    ASSERT_TRUE(diff) << diff.error().message();
    expect_inert(*diff, "6.12.9-amd64");
    EXPECT_NE(diff->find("refcount line on 6.1.0-18-amd64" + std::string(kHostileText)), std::string::npos);
    EXPECT_EQ(count(*diff, "data-chart=\"criterion\""), verdict["criteria"].size());

    // A validate verdict with its trials drawn.
    auto mixed = golden_document("verdict_mixed.json");
    mixed["context"]["kernel"] = {{"release", "6.18.0"}};
    taint(mixed);
    auto trials = render_html(HtmlInput{mixed, "", {}, {}});
    ASSERT_TRUE(trials) << trials.error().message();
    expect_inert(*trials, "6.18.0");
}

// A recording from outside is drawn only within bounds: an id or array that
// no machine has is refused with where it is, never indexed or allocated.
TEST(HtmlReport, RecordingsOutOfBoundsAreRefusedWithWhere) {
    const nlohmann::json good = golden_document("recording.json");
    struct Case {
        const char* says;
        std::function<void(nlohmann::json&)> edit;
    } cases[] = {
        {"topology.cpus[0].node is -1", [](auto& d) { d["topology"]["cpus"][0]["node"] = -1; }},
        {"topology.cpus[0].node is -100000000", [](auto& d) { d["topology"]["cpus"][0]["node"] = -100000000; }},
        {"topology.cpus[0].node is 3000000000", [](auto& d) { d["topology"]["cpus"][0]["node"] = 3000000000LL; }},
        {"topology.cpus[0].node is 1e+308", [](auto& d) { d["topology"]["cpus"][0]["node"] = 1e308; }},
        {"topology.cpus[1].node is 1000000", [](auto& d) { d["topology"]["cpus"][1]["node"] = 1000000; }},
        {"topology.cpus[0].cpu is 9000", [](auto& d) { d["topology"]["cpus"][0]["cpu"] = 9000; }},
        {"intervals[0].targets[0].calls has 20000 entries",
         [](auto& d) { d["intervals"][0]["targets"][0]["calls"] = std::vector<int>(20000, 1); }},
        {"intervals[0].targets[0].handoffs.node_matrix has 300 entries",
         [](auto& d) {
             d["intervals"][0]["targets"][0]["handoffs"]["node_matrix"] =
                 std::vector<std::vector<int>>(300, std::vector<int>(2, 1));
         }},
        {"node_matrix[0] has 500 entries",
         [](auto& d) { d["totals"]["targets"][0]["handoffs"]["node_matrix"][0] = std::vector<int>(500, 1); }},
        {".buckets has 5000 entries",
         [](auto& d) {
             auto& h = d["histograms"].begin().value();
             h["buckets"] = std::vector<nlohmann::json>(5000, h["buckets"][0]);
         }},
    };
    for (auto& c : cases) {
        SCOPED_TRACE(c.says);
        nlohmann::json d = good;
        c.edit(d);
        auto page = render_html(HtmlInput{d, "rec.json", {}, {}});
        ASSERT_FALSE(page);
        EXPECT_NE(page.error().message().find(c.says), std::string::npos) << page.error().message();
        EXPECT_NE(page.error().message().find("rec.json"), std::string::npos);
    }
    EXPECT_TRUE(render_html(HtmlInput{good, "rec.json", {}, {}}));
}
