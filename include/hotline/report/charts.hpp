// SPDX-License-Identifier: Apache-2.0
// SVG charts for the HTML report, one renderer per chart, written directly as
// text so the page needs no script, font or library.  Each returns a <figure>
// holding one inline <svg> with a <title> and <desc> (the text alternative).
// Marks (one per drawn datum) carry class="mark" so tests can count them; a
// non-finite value is never drawn nor printed, and empty data gives a figure
// that says so and draws no mark.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace hotline::charts {

// Okabe-Ito: distinguishable under the common colour-vision deficiencies.
inline constexpr const char* kPalette[] = {"#0072B2", "#E69F00", "#009E73", "#CC79A7",
                                           "#D55E00", "#56B4E9", "#F0E442", "#000000"};
const char* palette(std::size_t i);

// A number for people: finite values with at most 3 significant digits and an
// SI suffix from 1e4 on ("12.3k", "4.5G"); "n/a" when not finite.
std::string human(double v);
// A number for SVG coordinates: fixed, two decimals, finite (non-finite -> "0").
std::string coord(double v);
// "Nice" axis ticks covering [lo, hi]: 2..~6 round values (lo == hi widens).
std::vector<double> ticks(double lo, double hi, int target = 5);

struct Series {
    std::string name;
    std::vector<double> x, y;  // same length; pairs with a non-finite member are skipped
};
struct LineChart {
    std::string title, desc, x_label, y_label;
    std::vector<Series> series;
};
// One polyline per series (a dot when it has one point), with a legend.
std::string line_chart(const LineChart& c);

struct Heatmap {
    std::string title, desc, row_label, col_label;
    std::vector<std::string> rows, cols;
    std::vector<std::vector<double>> cells;  // [row][col]
};
// One cell per (row, col), shaded by count, the count written in it.
std::string heatmap(const Heatmap& h);

struct LineField {
    std::string name;
    long offset = 0;  // bytes from the start of the object
    long size = 0;
};
struct CacheLine {
    std::string title, desc;
    long line_start = 0;  // object offset of the line's first byte
    long line_bytes = 64;
    std::string anchor;   // the refcount field, drawn highlighted
    std::vector<std::string> flagged;  // fields that should not share its line (short names)
    std::vector<LineField> fields;
};
// The line drawn to scale, one box per field (clipped to the line).
std::string cache_line(const CacheLine& l);

struct Bucket {
    double low = 0, high = 0, count = 0;
};
struct Histogram {
    std::string title, desc, unit;
    std::vector<Bucket> buckets;
};
// One bar per bucket, labelled with its range.
std::string histogram(const Histogram& h);

struct Bar {
    std::string label;
    double value = 0;
};
struct BarChart {
    std::string title, desc, unit;
    std::vector<Bar> bars;
};
// Horizontal bars, largest first, each with its value.
std::string bar_chart(const BarChart& b);

struct RatioInterval {
    double estimate = 0, low = 0, high = 0;
};
struct CriterionChart {
    std::string title, desc, verdict;  // verdict: PASS, FAIL, INCONCLUSIVE, ...
    std::vector<double> baseline, fix;   // one value per trial
    std::optional<RatioInterval> ratio;  // fix / baseline
    double threshold = 0;                // on the ratio
    bool lower_is_better = true;
};
// Left: the two arms' trials as points with their medians.  Right: the ratio's
// confidence interval against the threshold, and the verdict.
std::string criterion_chart(const CriterionChart& c);

}  // namespace hotline::charts
