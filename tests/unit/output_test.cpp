// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <sstream>

#include "hotline/report/output.hpp"
#include "hotline/base/util.hpp"
#include "topology_fixtures.hpp"

using namespace hotline;

namespace {

using hotline::test::two_nodes;

Snapshot snap(double t, std::vector<std::uint64_t> calls, std::uint64_t hist5) {
    Snapshot s;
    s.t = t;
    TargetCounters c;
    c.target = "dst_release";
    c.mechanism = Mechanism::kFentry;
    c.fidelity = Fidelity::kExact;
    c.calls = calls;
    c.events = calls;
    c.has_latency = true;
    c.hist[5] = hist5;
    c.lat_count = hist5;
    s.targets.push_back(c);
    s.cost.push_back({"dst_release", "hl_fentry", 100, 5000, 1});
    return s;
}

}  // namespace

TEST(Histogram, BccStyleBarsFromFirstToLastNonEmptySlot) {
    Log2Hist h{};
    h[3] = 10;
    h[5] = 40;
    std::ostringstream os;
    render_log2_hist(os, h, "nsecs");
    std::string s = os.str();
    EXPECT_NE(s.find("nsecs"), std::string::npos);
    EXPECT_NE(s.find("8 -> 15"), std::string::npos);
    EXPECT_NE(s.find("16 -> 31"), std::string::npos);  // empty slot between is shown
    EXPECT_NE(s.find("32 -> 63"), std::string::npos);
    EXPECT_EQ(s.find("4 -> 7"), std::string::npos);
    EXPECT_EQ(s.find("64 -> 127"), std::string::npos);
    EXPECT_NE(s.find("|" + std::string(40, '*') + "|"), std::string::npos);  // the max slot
    EXPECT_NE(s.find("|" + std::string(10, '*') + std::string(30, ' ') + "|"), std::string::npos);
}

TEST(Histogram, EmptySaysSo) {
    Log2Hist h{};
    std::ostringstream os;
    render_log2_hist(os, h, "nsecs");
    EXPECT_NE(os.str().find("no samples"), std::string::npos);
}

TEST(Metrics, DeltaSubtractsPerCpuAndCost) {
    auto iv = delta(snap(10, {1, 2, 3, 4}, 2), snap(12, {11, 2, 23, 4}, 7));
    EXPECT_DOUBLE_EQ(iv.seconds(), 2.0);
    ASSERT_EQ(iv.d.targets.size(), 1u);
    EXPECT_EQ(iv.d.targets[0].calls, (std::vector<std::uint64_t>{10, 0, 20, 0}));
    EXPECT_EQ(iv.d.targets[0].hist[5], 5u);
    EXPECT_EQ(iv.d.cost[0].run_cnt, 0u);
}

TEST(Metrics, WorkFunctionTablesSumByFunctionOverCpus) {
    std::vector<hl_work_funcs> per_cpu(2);  // 16 KiB each: on the heap
    per_cpu[0].e[7] = {0xffffffff81000010, 3};
    per_cpu[0].e[8] = {0xffffffff81000020, 1};
    per_cpu[0].e[9] = {0xffffffff81000030, 0};  // a way taken, its first count not yet stored: not listed
    per_cpu[1].e[300] = {0xffffffff81000010, 4};  // the same function in another CPU's table
    per_cpu[0].other = 2;
    per_cpu[1].other = 5;
    std::uint64_t other = 99;
    auto by_func = sum_work_funcs(per_cpu, other);
    EXPECT_EQ(by_func, (std::map<std::uint64_t, std::uint64_t>{{0xffffffff81000010, 7}, {0xffffffff81000020, 1}}));
    EXPECT_EQ(other, 7u);
}

TEST(Text, IntervalTablePerNodeAndPerCpu) {
    auto iv = delta(snap(0, {0, 0, 0, 0}, 0), snap(2, {10, 30, 100, 0}, 0));
    std::ostringstream os;
    render_interval_text(os, iv, two_nodes(), false, "t");
    std::string s = os.str();
    EXPECT_NE(s.find("node 0 (cpus 0-1)"), std::string::npos);
    EXPECT_NE(s.find("node 1 (cpus 2-3)"), std::string::npos);
    EXPECT_NE(s.find("20.0"), std::string::npos);  // node 0: 40 calls / 2 s
    EXPECT_NE(s.find("50.0"), std::string::npos);  // node 1: 100 / 2 s
    EXPECT_NE(s.find("exact"), std::string::npos);
    std::ostringstream pc;
    render_interval_text(pc, iv, two_nodes(), true, "t");
    EXPECT_NE(pc.str().find("CPU 3 (node 1)"), std::string::npos);
    EXPECT_NE(pc.str().find("15.0"), std::string::npos);  // CPU 1: 30 / 2 s
}

TEST(Text, SampledRowsShowShareNotRate) {
    Snapshot a, b;
    a.t = 0;
    b.t = 1;
    TargetCounters c;
    c.target = "ipv4_dst_check";
    c.mechanism = Mechanism::kSampling;
    c.fidelity = Fidelity::kSampled;
    c.calls = {0, 0, 0, 0};
    a.targets.push_back(c);
    a.samples_total = {0, 0, 0, 0};
    c.calls = {5, 0, 0, 0};
    b.targets.push_back(c);
    b.samples_total = {500, 500, 1000, 1000};
    std::ostringstream os;
    render_interval_text(os, delta(a, b), two_nodes(), false, "t");
    EXPECT_NE(os.str().find("5 samples, 0.500% of CPU time"), std::string::npos);
    EXPECT_NE(os.str().find("0 samples, 0.000%"), std::string::npos);
    EXPECT_DOUBLE_EQ(sampled_share(delta(a, b).d.targets[0], delta(a, b).d.samples_total), 5.0 / 3000);
}

TEST(Recording, SchemaAndTotalsEqualSumOfIntervals) {
    KernelInfo k;
    k.release = "6.1.0-test";
    Plan p;
    TargetPlan tp;
    tp.target = "dst_release";
    tp.mechanism = Mechanism::kFentry;
    tp.fidelity = Fidelity::kExact;
    tp.latency = true;
    p.targets.push_back(tp);
    RecordingWriter w(k, two_nodes(), p);
    Snapshot s0 = snap(0, {0, 0, 0, 0}, 0), s1 = snap(1, {3, 0, 9, 1}, 4), s2 = snap(2, {5, 1, 9, 8}, 6);
    w.add_interval(delta(s0, s1));
    w.add_interval(delta(s1, s2));
    w.finish(delta(s0, s2), 0, {"true"});
    nlohmann::json doc = nlohmann::json::parse(w.doc().dump());
    EXPECT_TRUE(check_recording(doc).empty());
    EXPECT_EQ(doc["schema"], "hotline.recording");
    EXPECT_EQ(doc["version"], 1);
    EXPECT_EQ(doc["plan"][0]["mechanism"], "fentry");
    EXPECT_EQ(doc["topology"]["cpus"][2]["node"], 1);
    std::vector<std::uint64_t> sum(4, 0);
    for (auto& iv : doc["intervals"])
        for (std::size_t c = 0; c < 4; ++c) sum[c] += iv["targets"][0]["calls"][c].get<std::uint64_t>();
    EXPECT_EQ(sum, doc["totals"]["targets"][0]["calls"].get<std::vector<std::uint64_t>>());
    EXPECT_EQ(doc["histograms"]["dst_release"]["buckets"][0]["low_ns"], 32);
    EXPECT_EQ(doc["histograms"]["dst_release"]["buckets"][0]["count"], 6);
    EXPECT_EQ(doc["command"]["exit_status"], 0);
    EXPECT_EQ(doc["drops"]["recursion_misses"], 0);
}

TEST(Recording, CheckFindsProblems) {
    EXPECT_FALSE(check_recording(nlohmann::json::array()).empty());
    nlohmann::json d = {{"schema", "other"}};
    auto probs = check_recording(d);
    EXPECT_FALSE(probs.empty());
    EXPECT_NE(probs[0].find("missing"), std::string::npos);
}

TEST(Xml, EscapesMarkupAndReplacesForbiddenControlCharacters) {
    EXPECT_EQ(xml_escape("a&b<c>d\"e'f"), "a&amp;b&lt;c&gt;d&quot;e&apos;f");
    // Already-escaped text is escaped again, not passed through.
    EXPECT_EQ(xml_escape("&amp;"), "&amp;amp;");
    // XML 1.0 has no way to carry \x01 or \x1f, even as a reference; tab,
    // newline and carriage return are legal and stay.
    EXPECT_EQ(xml_escape(std::string("x\x01y\x1fz")), "x?y?z");
    EXPECT_EQ(xml_escape(std::string("\0", 1)), "?");
    EXPECT_EQ(xml_escape("a\tb\nc\rd"), "a\tb\nc\rd");
    EXPECT_EQ(xml_escape("plain text / 0x20 ~"), "plain text / 0x20 ~");
    EXPECT_EQ(xml_escape(""), "");
}

TEST(Duration, ParsesUnits) {
    EXPECT_DOUBLE_EQ(*parse_duration("5"), 5.0);
    EXPECT_DOUBLE_EQ(*parse_duration("250ms"), 0.25);
    EXPECT_DOUBLE_EQ(*parse_duration("2m"), 120.0);
    EXPECT_DOUBLE_EQ(*parse_duration("1.5s"), 1.5);
    EXPECT_FALSE(parse_duration("").ok());
    EXPECT_FALSE(parse_duration("-1").ok());
    EXPECT_FALSE(parse_duration("5 parsecs").ok());
    EXPECT_NE(parse_duration("5x").error().message().find("unit"), std::string::npos);
}

TEST(Duration, OutOfRangeValuesAreRefusedWithTheRange) {
    for (const char* s : {"1e19", "1e99", "inf", "nan", "9000h", "1e300ms"}) {
        auto d = parse_duration(s);
        ASSERT_FALSE(d.ok()) << s << " gave " << *d;
    }
    EXPECT_NE(parse_duration("1e19").error().message().find("366 days"), std::string::npos);
    EXPECT_TRUE(parse_duration("8784h").ok());
    EXPECT_TRUE(parse_duration("1ms").ok());
    EXPECT_TRUE(parse_duration("0s").ok());  // "none" where a setting allows it; callers that need time check > 0
}

TEST(List, SplitsAndTrims) {
    EXPECT_EQ(split_list("a, b,,c "), (std::vector<std::string>{"a", "b", "c"}));
    EXPECT_TRUE(split_list("").empty());
}

// Every document's text: the head keys first (as a reader of `head -3` or a
// streaming parser meets them), the rest by name, numbers at their precision.
TEST(DocumentText, HeadKeysFirstThenByNameAndNumbersAtTheirPrecision) {
    nlohmann::json doc = json_document("hotline.test", 3);
    doc["analysis"] = {{"rate", 0.1 - 0.05}, {"count", 7}, {"big", std::uint64_t(1) << 63}};
    doc["embedded"] = json_document("hotline.inner");
    doc["embedded"]["a"] = 1;
    doc["nan"] = std::nan("");
    const std::string text = document_text(doc);
    EXPECT_EQ(text.find("{\n \"schema\": \"hotline.test\",\n \"version\": 3,\n \"tool\": {"), 0u) << text;
    EXPECT_LT(text.find("\"analysis\""), text.find("\"embedded\"")) << text;
    EXPECT_NE(text.find("\"rate\": 0.05\n"), std::string::npos) << text;
    EXPECT_NE(text.find("\"big\": 9223372036854775808"), std::string::npos) << text;
    EXPECT_NE(text.find("\"embedded\": {\n  \"schema\": \"hotline.inner\",\n  \"version\": 1,"), std::string::npos)
        << text;
    EXPECT_NE(text.find("\"nan\": null"), std::string::npos) << text;
    EXPECT_EQ(text.back(), '\n');
    // The same document, read back: only the float lost its noise digits.
    nlohmann::json back = nlohmann::json::parse(text);
    EXPECT_EQ(back["analysis"]["rate"].get<double>(), 0.05);
    back["analysis"]["rate"] = doc["analysis"]["rate"];
    back["nan"] = doc["nan"];
    EXPECT_EQ(back.dump(), doc.dump());
}
