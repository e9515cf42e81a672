// SPDX-License-Identifier: Apache-2.0
// The SVG chart renderers on fixture data: marks per datum, axes, empty,
// single-point, non-finite and huge inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <regex>
#include <string>
#include <vector>

#include "hotline/report/charts.hpp"
#include "files.hpp"

namespace ch = hotline::charts;
using testlib::count;

namespace {

std::size_t marks(const std::string& svg) { return count(svg, "class=\"mark"); }

// Nothing a reader should not see: no NaN, inf or unbalanced figure.
void expect_clean(const std::string& svg) {
    EXPECT_EQ(svg.find("nan"), std::string::npos) << svg;
    EXPECT_EQ(svg.find("inf"), std::string::npos) << svg;
    EXPECT_EQ(count(svg, "<figure"), 1u);
    EXPECT_EQ(count(svg, "</figure>"), 1u);
    EXPECT_EQ(count(svg, "<title>"), count(svg, "</title>"));
    EXPECT_NE(svg.find("<desc>"), std::string::npos) << "every chart has a text alternative";
}

// The boxes a reader sees: each <text> (11 px, at most 6.5 px a character,
// placed by its anchor) and each trial point.
struct Box {
    double x0, y0, x1, y1;
    std::string what;
};
bool overlap(const Box& a, const Box& b) { return a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1; }

std::vector<Box> text_boxes(const std::string& svg) {
    std::vector<Box> boxes;
    std::regex re(R"re(<text class="([^"]*)" x="([-0-9.]+)" y="([-0-9.]+)" text-anchor="(\w+)">([^<]*)</text>)re");
    for (std::sregex_iterator it(svg.begin(), svg.end(), re), end; it != end; ++it) {
        const std::smatch& m = *it;
        if (m[1] == "verdict") continue;  // the panel's title, drawn above everything
        double x = std::stod(m[2]), y = std::stod(m[3]), w = 6.5 * double(m[5].length());
        double left = m[4] == "middle" ? x - w / 2 : m[4] == "end" ? x - w : x;
        boxes.push_back({left, y - 9, left + w, y + 2, m[5]});
    }
    return boxes;
}

std::vector<Box> point_boxes(const std::string& svg) {
    std::vector<Box> boxes;
    std::regex re(R"re(<circle class="mark trial \w+" cx="([-0-9.]+)" cy="([-0-9.]+)" r="([0-9.]+)")re");
    for (std::sregex_iterator it(svg.begin(), svg.end(), re), end; it != end; ++it) {
        double x = std::stod((*it)[1]), y = std::stod((*it)[2]), r = std::stod((*it)[3]);
        boxes.push_back({x - r, y - r, x + r, y + r, "trial point"});
    }
    return boxes;
}

// No label over another label or a trial point, nor across the gap between
// the trials' panel (x <= 300) and the ratio's (x >= 360).
void expect_no_overlap(const std::string& svg) {
    auto texts = text_boxes(svg), points = point_boxes(svg);
    ASSERT_FALSE(texts.empty());
    for (std::size_t i = 0; i < texts.size(); ++i) {
        EXPECT_FALSE(texts[i].x0 < 330 && texts[i].x1 > 330) << "'" << texts[i].what << "' crosses into the other panel";
        for (std::size_t j = i + 1; j < texts.size(); ++j)
            EXPECT_FALSE(overlap(texts[i], texts[j])) << "'" << texts[i].what << "' over '" << texts[j].what << "'";
        for (auto& p : points) EXPECT_FALSE(overlap(texts[i], p)) << "'" << texts[i].what << "' over a trial point";
    }
}

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

TEST(Charts, HumanNumbers) {
    EXPECT_EQ(ch::human(0), "0");
    EXPECT_EQ(ch::human(42), "42");
    EXPECT_EQ(ch::human(1.23456), "1.23");
    EXPECT_EQ(ch::human(12345), "12.3k");
    EXPECT_EQ(ch::human(4.5e9), "4.5G");
    EXPECT_EQ(ch::human(-2e6), "-2M");
    EXPECT_EQ(ch::human(1e300), "1.00e+300");
    EXPECT_EQ(ch::human(0.0001), "1.00e-04");
    EXPECT_EQ(ch::human(kNaN), "n/a");
    EXPECT_EQ(ch::human(kInf), "n/a");
    EXPECT_EQ(ch::coord(kNaN), "0.00");
}

TEST(Charts, TicksCoverTheRangeWithRoundSteps) {
    auto t = ch::ticks(0, 97);
    ASSERT_GE(t.size(), 2u);
    EXPECT_LE(t.front(), 0);
    EXPECT_GE(t.back(), 97);
    EXPECT_DOUBLE_EQ(t[1] - t[0], 20);
    EXPECT_GE(ch::ticks(0, 4370).back(), 4370) << "the top value is inside the axis";
    auto flat = ch::ticks(5, 5);  // one value: widened, still two ticks or more
    EXPECT_GE(flat.size(), 2u);
    EXPECT_LT(flat.front(), flat.back());
    EXPECT_GE(ch::ticks(kNaN, 1).size(), 2u);
    auto huge = ch::ticks(0, 1.8e19);
    EXPECT_LE(huge.size(), 12u);
    EXPECT_GE(huge.back(), 1.8e19);
}

TEST(Charts, LineChartOnePolylinePerSeriesAndADotForOnePoint) {
    ch::LineChart c{"calls", "calls per second", "s", "calls/s",
                    {{"dst_release", {1, 2, 3}, {10, 20, 15}}, {"single", {2}, {5}}, {"none", {}, {}}}};
    std::string svg = ch::line_chart(c);
    expect_clean(svg);
    EXPECT_EQ(count(svg, "<polyline class=\"mark\""), 1u);
    EXPECT_EQ(count(svg, "<circle class=\"mark\""), 1u);
    EXPECT_EQ(count(svg, "class=\"key\""), 3u) << "every series is in the legend";
    EXPECT_NE(svg.find("<title>calls</title>"), std::string::npos);
    EXPECT_NE(svg.find(">calls/s</text>"), std::string::npos) << "y axis label";
}

TEST(Charts, LineChartSkipsNonFiniteAndHandlesEmptyAndHuge) {
    std::string empty = ch::line_chart({"t", "d", "x", "y", {}});
    expect_clean(empty);
    EXPECT_EQ(marks(empty), 0u);
    EXPECT_NE(empty.find("no data"), std::string::npos);
    std::string all_nan = ch::line_chart({"t", "d", "x", "y", {{"a", {kNaN, 1}, {1, kInf}}}});
    EXPECT_EQ(marks(all_nan), 0u);
    expect_clean(all_nan);
    std::string huge = ch::line_chart({"t", "d", "x", "y", {{"a", {0, 1, 2}, {0, 1.8e19, kNaN}}}});
    expect_clean(huge);
    EXPECT_EQ(marks(huge), 1u);
    EXPECT_NE(huge.find("E</text>"), std::string::npos) << "exa-scale ticks use the SI suffix";
}

TEST(Charts, HeatmapOneCellPerPairWithTheCount) {
    ch::Heatmap h{"handoffs", "node pairs", "from", "to", {"node 0", "node 1"}, {"node 0", "node 1"},
                  {{5700, 4500}, {3600, 5400}}};
    std::string svg = ch::heatmap(h);
    expect_clean(svg);
    EXPECT_EQ(marks(svg), 4u);
    EXPECT_NE(svg.find(">5700</text>"), std::string::npos) << "counts are written in the cells";
    EXPECT_NE(svg.find("<title>node 1 to node 0: 3600</title>"), std::string::npos);
}

// Row labels as long as the verdict page's ("baseline node 0") stay inside the figure.
TEST(Charts, HeatmapRowLabelsFitTheFigure) {
    ch::Heatmap h{"t", "d", "from", "to node", {"baseline node 0", "baseline node 1", "fix node 0", "fix node 1"},
                  {"node 0", "node 1"}, {{1, 2}, {3, 4}, {5, 0}, {0, 0}}};
    std::string svg = ch::heatmap(h);
    for (auto& b : text_boxes(svg)) EXPECT_GE(b.x0, 0) << "'" << b.what << "' starts left of the figure";
}

// Every label inside its figure's viewBox: long legend names, value labels and
// bar names widen the figure instead of being cut off.
void expect_labels_inside(const std::string& svg) {
    std::smatch m;
    ASSERT_TRUE(std::regex_search(svg, m, std::regex(R"re(viewBox="0 0 ([0-9.]+) ([0-9.]+)")re"))) << svg;
    double w = std::stod(m[1]);
    for (auto& b : text_boxes(svg)) {
        EXPECT_GE(b.x0, 0) << "'" << b.what << "' starts left of the figure";
        EXPECT_LE(b.x1, w) << "'" << b.what << "' ends right of the figure (" << w << " wide)";
    }
}

TEST(Charts, LongNamesAndValuesStayInsideTheirFigure) {
    expect_labels_inside(ch::line_chart({"t", "d", "s", "calls/s",
                                         {{"dst_release", {1, 2}, {3, 4}},
                                          {"mix_interrupt_randomness_and_then_some", {1, 2}, {1, 1}}}}));
    expect_labels_inside(ch::bar_chart({"t", "d", "per IRQ",
                                        {{"mix_interrupt_randomness", 0.0111}, {"flush_to_ldisc", 0.00429},
                                         {"a_very_long_kernel_work_function_name_indeed_x", 0.5}}}));
}

TEST(Charts, HeatmapDegenerate) {
    EXPECT_EQ(marks(ch::heatmap({"h", "d", "", "", {}, {}, {}})), 0u);
    std::string zeros = ch::heatmap({"h", "d", "", "", {"n0"}, {"n0"}, {{0}}});
    expect_clean(zeros);
    EXPECT_EQ(marks(zeros), 1u);
    std::string ragged = ch::heatmap({"h", "d", "", "", {"a", "b"}, {"a", "b"}, {{1, kNaN}}});
    expect_clean(ragged);
    EXPECT_EQ(marks(ragged), 4u) << "a missing or non-finite cell is drawn empty";
    EXPECT_NE(ragged.find(">n/a</text>"), std::string::npos);
}

TEST(Charts, CacheLineToScaleWithTheRefcountMarked) {
    ch::CacheLine l{"dst_entry", "the refcount line", 64, 64, "__refcnt", {"__use", "lwtstate"},
                    {{"dst_entry.__refcnt", 64, 4},
                     {"dst_entry.__use", 68, 4},
                     {"dst_entry.lastuse", 72, 8},
                     {"dst_entry.lwtstate", 80, 8},
                     {"dst_entry.dev_tracker", 112, 0},   // zero-sized: not drawn
                     {"rtable.rt_genid", 112, 4},
                     {"dst_entry.callback_head", 120, 16}}};  // runs past the line: clipped
    std::string svg = ch::cache_line(l);
    expect_clean(svg);
    EXPECT_EQ(marks(svg), 6u);
    EXPECT_EQ(count(svg, "class=\"mark anchor\""), 1u);
    EXPECT_EQ(count(svg, "class=\"mark flagged\""), 2u);
    // 64 bytes over 640 px: 10 px a byte; the refcount is 4 bytes wide at x 10.
    EXPECT_NE(svg.find("class=\"mark anchor\" x=\"10.00\" y=\"24.00\" width=\"40.00\""), std::string::npos) << svg;
    EXPECT_NE(svg.find("x=\"570.00\" y=\"24.00\" width=\"80.00\""), std::string::npos) << "clipped to byte 127";
    EXPECT_NE(svg.find(">128</text>"), std::string::npos) << "byte ruler ends at the line's end";
}

TEST(Charts, CacheLineEmpty) {
    std::string svg = ch::cache_line({"t", "d", 0, 64, "", {}, {}});
    expect_clean(svg);
    EXPECT_EQ(marks(svg), 0u);
}

TEST(Charts, HistogramOneBarPerBucket) {
    ch::Histogram h{"latency", "calls by duration", "ns", {{32, 63, 27000}, {64, 127, 9000}, {128, 255, 0}}};
    std::string svg = ch::histogram(h);
    expect_clean(svg);
    EXPECT_EQ(marks(svg), 3u);
    EXPECT_NE(svg.find("<title>32-63 ns: 27k</title>"), std::string::npos);
    std::string bad = ch::histogram({"l", "d", "ns", {{1, 2, kNaN}, {2, 3, -1}}});
    EXPECT_EQ(marks(bad), 0u);
    expect_clean(bad);
    std::string huge = ch::histogram({"l", "d", "ns", {{0, 1, 1.8e19}}});
    expect_clean(huge);
    EXPECT_EQ(marks(huge), 1u);
}

TEST(Charts, BarsLargestFirst) {
    ch::BarChart b{"work", "queued per second", "per s", {{"vmstat_update", 1.8}, {"mix_interrupt_randomness", 46.8},
                                                          {"gone", kNaN}}};
    std::string svg = ch::bar_chart(b);
    expect_clean(svg);
    EXPECT_EQ(marks(svg), 2u);
    EXPECT_LT(svg.find("mix_interrupt_randomness"), svg.find("vmstat_update"));
    EXPECT_EQ(marks(ch::bar_chart({"w", "d", "", {}})), 0u);
    std::string zero = ch::bar_chart({"w", "d", "", {{"a", 0}}});
    expect_clean(zero);
    EXPECT_EQ(marks(zero), 1u);
}

TEST(Charts, CriterionPointsMediansIntervalAndVerdict) {
    ch::CriterionChart c{"handoffs down >= 50%", "d", "FAIL", {0.8, 0.75, 0.78}, {0.7, 0.72, 0.73},
                         ch::RatioInterval{0.935, 0.904, 0.974}, 0.5, true};
    std::string svg = ch::criterion_chart(c);
    expect_clean(svg);
    EXPECT_EQ(marks(svg), 6u) << "one point per trial";
    EXPECT_EQ(count(svg, "class=\"median\""), 2u);
    EXPECT_EQ(count(svg, "class=\"ci\""), 1u);
    EXPECT_EQ(count(svg, "class=\"threshold\""), 1u);
    EXPECT_NE(svg.find(">FAIL</text>"), std::string::npos);
    EXPECT_NE(svg.find("threshold 0.5"), std::string::npos);
}

// The verdict pages of the fixtures: medians of close arms, an estimate at the
// axis's left end, a threshold near its right end.
TEST(Charts, CriterionLabelsDoNotOverlap) {
    expect_no_overlap(ch::criterion_chart({"ops", "d", "INFO", {890, 820, 950}, {880, 935, 1040},
                                           ch::RatioInterval{1.05, 0.944, 1.27}, 1, false}));
    expect_no_overlap(ch::criterion_chart({"cross-node", "d", "PASS", {1.28, 1.02, 1.06}, {0, 0.0022, 0.003},
                                           ch::RatioInterval{0.00212, 0, 0.00313}, 0.5, true}));
    expect_no_overlap(ch::criterion_chart({"cpu", "d", "PASS", {4370, 4800, 4150}, {2200, 2107, 1900},
                                           ch::RatioInterval{0.482, 0.397, 0.532}, 1.1, true}));
    expect_no_overlap(ch::criterion_chart({"one each", "d", "FAIL", {5}, {5.1},
                                           ch::RatioInterval{1.02, 1.0, 1.04}, 0.5, true}));
}

TEST(Charts, CriterionWithoutTrialsOrInterval) {
    std::string none = ch::criterion_chart({"c", "d", "INCONCLUSIVE", {}, {}, std::nullopt, 0.9, true});
    expect_clean(none);
    EXPECT_EQ(marks(none), 0u);
    EXPECT_EQ(count(none, "class=\"median\""), 0u);
    EXPECT_NE(none.find("no interval yet"), std::string::npos);
    // One trial per arm (an exact criterion) and an infinite ratio from a zero baseline.
    std::string one = ch::criterion_chart(
        {"c", "d", "INFO", {0}, {0.0035}, ch::RatioInterval{kInf, kInf, kInf}, 1, true});
    expect_clean(one);
    EXPECT_EQ(marks(one), 2u);
    EXPECT_NE(one.find("no interval yet"), std::string::npos);
}

TEST(Charts, TextIsEscaped) {
    std::string svg = ch::bar_chart({"a<b & \"c\"", "<script>", "", {{"<x>", 1}}});
    EXPECT_EQ(svg.find("<script>"), std::string::npos);
    EXPECT_EQ(svg.find("<x>"), std::string::npos);
    EXPECT_NE(svg.find("a&lt;b &amp; &quot;c&quot;"), std::string::npos);
}
