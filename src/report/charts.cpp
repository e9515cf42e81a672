// SPDX-License-Identifier: Apache-2.0
// SVG chart renderers (see charts.hpp).  Every coordinate goes through coord()
// and every printed number through human(), so nothing non-finite reaches the page.
#include "hotline/report/charts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "hotline/report/output.hpp"

namespace hotline::charts {

const char* palette(std::size_t i) { return kPalette[i % std::size(kPalette)]; }

std::string human(double v) {
    if (!std::isfinite(v)) return "n/a";
    static constexpr const char* kSuffix[] = {"", "k", "M", "G", "T", "P", "E"};
    double a = std::fabs(v);
    if (a < 1e4) {
        if (a != 0 && a < 1e-3) return fmt::format("{:.2e}", v);
        if (a >= 1000) return fmt::format("{:.0f}", v);  // not "5e+03"
        return fmt::format("{:.3g}", v);
    }
    std::size_t i = 0;
    while (a >= 1000 && i + 1 < std::size(kSuffix)) {
        a /= 1000;
        v /= 1000;
        ++i;
    }
    if (a >= 1000) return fmt::format("{:.2e}", v * std::pow(1000.0, double(i)));
    return fmt::format("{:.3g}{}", v, kSuffix[i]);
}

std::string coord(double v) { return fmt::format("{:.2f}", std::isfinite(v) ? v : 0.0); }

std::vector<double> ticks(double lo, double hi, int target) {
    if (!std::isfinite(lo) || !std::isfinite(hi)) return {0, 1};
    if (hi < lo) std::swap(lo, hi);
    if (hi - lo < 1e-12 * std::max(1.0, std::fabs(hi))) {
        double pad = lo == 0 ? 1 : std::fabs(lo) * 0.5;
        lo -= pad;
        hi += pad;
    }
    double raw = (hi - lo) / std::max(1, target);
    double mag = std::pow(10.0, std::floor(std::log10(raw)));
    double step = mag;
    for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
        if (m * mag >= raw) {
            step = m * mag;
            break;
        }
    // From the step at or below lo to the first at or above hi, so every value is inside.
    std::vector<double> t;
    for (double v = std::floor(lo / step) * step; t.size() < 50; v += step) {
        t.push_back(std::fabs(v) < step * 1e-9 ? 0.0 : v);
        if (v >= hi - step * 1e-9) break;
    }
    if (t.size() < 2) t.push_back(t.back() + step);
    return t;
}

namespace {

// Linear map of the domain [d0, d1] onto the range [r0, r1].
struct Scale {
    double d0 = 0, d1 = 1, r0 = 0, r1 = 1;
    double operator()(double v) const {
        double span = d1 - d0;
        return span == 0 ? (r0 + r1) / 2 : r0 + (v - d0) / span * (r1 - r0);
    }
};

std::string esc(const std::string& s) { return xml_escape(s); }

std::string open_figure(const char* kind, const std::string& title, const std::string& desc, int w, int h) {
    return fmt::format(
        "<figure class=\"chart\" data-chart=\"{0}\">\n"
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {1} {2}\" width=\"{1}\" height=\"{2}\" "
        "role=\"img\"><title>{3}</title><desc>{4}</desc>\n",
        kind, w, h, esc(title), esc(desc));
}

std::string close_figure(const std::string& title) {
    return fmt::format("</svg>\n<figcaption>{}</figcaption>\n</figure>\n", esc(title));
}

std::string text(double x, double y, const std::string& s, const char* anchor = "start",
                 const char* cls = "label") {
    return fmt::format("<text class=\"{}\" x=\"{}\" y=\"{}\" text-anchor=\"{}\">{}</text>\n", cls, coord(x), coord(y),
                       anchor, esc(s));
}

std::string empty_figure(const char* kind, const std::string& title, const std::string& desc) {
    return open_figure(kind, title, desc + " No data.", 320, 60) + text(160, 35, "no data", "middle", "empty") +
           close_figure(title);
}

// Horizontal grid lines and labels of a value axis.
std::string y_axis(const Scale& y, const std::vector<double>& tk, double x0, double x1, const std::string& label) {
    std::string o;
    for (double t : tk) {
        o += fmt::format("<line class=\"grid\" x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>\n", coord(x0), coord(x1),
                         coord(y(t)), coord(y(t)));
        o += text(x0 - 4, y(t) + 4, human(t), "end", "tick");
    }
    if (!label.empty())
        o += fmt::format("<text class=\"axis-label\" transform=\"translate(12,{}) rotate(-90)\" "
                         "text-anchor=\"middle\">{}</text>\n",
                         coord((y.r0 + y.r1) / 2), esc(label));
    return o;
}

std::string x_axis(const Scale& x, const std::vector<double>& tk, double y0, const std::string& label) {
    std::string o = fmt::format("<line class=\"axis\" x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>\n", coord(x.r0),
                                coord(x.r1), coord(y0), coord(y0));
    for (double t : tk)
        if (t >= x.d0 - 1e-9 && t <= x.d1 + 1e-9) o += text(x(t), y0 + 14, human(t), "middle", "tick");
    if (!label.empty()) o += text((x.r0 + x.r1) / 2, y0 + 30, label, "middle", "axis-label");
    return o;
}

struct Extent {
    double lo = INFINITY, hi = -INFINITY;
    void add(double v) {
        if (!std::isfinite(v)) return;
        lo = std::min(lo, v);
        hi = std::max(hi, v);
    }
    bool empty() const { return lo > hi; }
};

// The width a label takes: 11 px text is at most ~6.5 px a character.  Figures
// are sized and labels placed with it, so that no label leaves its figure.
double text_width(const std::string& s) { return 6.5 * double(s.size()); }

std::string legend(const std::vector<std::string>& names, double x, double y) {
    std::string o;
    for (std::size_t i = 0; i < names.size(); ++i) {
        double yy = y + 16.0 * double(i);
        o += fmt::format("<rect class=\"key\" x=\"{}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{}\"/>\n", coord(x),
                         coord(yy - 9), palette(i));
        o += text(x + 14, yy, names[i]);
    }
    return o;
}

std::vector<std::pair<double, double>> finite_points(const Series& s) {
    std::vector<std::pair<double, double>> p;
    for (std::size_t i = 0; i < std::min(s.x.size(), s.y.size()); ++i)
        if (std::isfinite(s.x[i]) && std::isfinite(s.y[i])) p.emplace_back(s.x[i], s.y[i]);
    return p;
}

std::string series_mark(const std::vector<std::pair<double, double>>& pts, const Scale& x, const Scale& y,
                        std::size_t i) {
    if (pts.size() == 1)
        return fmt::format("<circle class=\"mark\" cx=\"{}\" cy=\"{}\" r=\"4\" fill=\"{}\"/>\n", coord(x(pts[0].first)),
                           coord(y(pts[0].second)), palette(i));
    std::string d;
    for (auto& [px, py] : pts) d += coord(x(px)) + "," + coord(y(py)) + " ";
    return fmt::format("<polyline class=\"mark\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>\n",
                       palette(i), d);
}

}  // namespace

std::string line_chart(const LineChart& c) {
    Extent ex, ey;
    ey.add(0);
    std::vector<std::vector<std::pair<double, double>>> pts;
    for (auto& s : c.series) {
        pts.push_back(finite_points(s));
        for (auto& [px, py] : pts.back()) ex.add(px), ey.add(py);
    }
    if (ex.empty()) return empty_figure("line", c.title, c.desc);
    constexpr double kW = 640, kH = 260, kLeft = 64, kRight = 470, kTop = 12, kBottom = 210;
    auto yt = ticks(ey.lo, ey.hi);
    auto xt = ticks(ex.lo, ex.hi, 6);
    Scale x{ex.lo, ex.hi, kLeft, kRight}, y{yt.front(), yt.back(), kBottom, kTop};
    if (ex.lo == ex.hi) x = Scale{xt.front(), xt.back(), kLeft, kRight};
    double widest = 0;  // the legend's longest name
    for (auto& s : c.series) widest = std::max(widest, text_width(s.name));
    std::string o = open_figure("line", c.title, c.desc, int(std::max(kW, kRight + 16 + 14 + widest + 8)), int(kH));
    o += y_axis(y, yt, kLeft, kRight, c.y_label) + x_axis(x, xt, kBottom, c.x_label);
    std::vector<std::string> names;
    for (std::size_t i = 0; i < pts.size(); ++i) {
        names.push_back(c.series[i].name);
        if (!pts[i].empty()) o += series_mark(pts[i], x, y, i);
    }
    return o + legend(names, kRight + 16, kTop + 10) + close_figure(c.title);
}

std::string heatmap(const Heatmap& h) {
    Extent e;
    for (auto& row : h.cells)
        for (double v : row) e.add(v);
    if (h.rows.empty() || h.cols.empty() || e.empty()) return empty_figure("heatmap", h.title, h.desc);
    constexpr double kCell = 64, kTop = 40;
    // Room for the longest row label.
    double longest = text_width(h.row_label);
    for (auto& r : h.rows) longest = std::max(longest, text_width(r));
    const double kLeft = std::max(90.0, longest + 12);
    double w = kLeft + kCell * double(h.cols.size()) + 20, hh = kTop + kCell * double(h.rows.size()) + 36;
    std::string o = open_figure("heatmap", h.title, h.desc, int(w), int(hh));
    o += text(kLeft + kCell * double(h.cols.size()) / 2, 14, h.col_label, "middle", "axis-label");
    for (std::size_t c = 0; c < h.cols.size(); ++c) o += text(kLeft + kCell * (double(c) + 0.5), kTop - 6, h.cols[c], "middle", "tick");
    double top = std::max(e.hi, 0.0);
    for (std::size_t r = 0; r < h.rows.size(); ++r) {
        double yy = kTop + kCell * double(r);
        o += text(kLeft - 6, yy + kCell / 2 + 4, h.rows[r], "end", "tick");
        for (std::size_t c = 0; c < h.cols.size(); ++c) {
            double v = r < h.cells.size() && c < h.cells[r].size() ? h.cells[r][c] : NAN;
            double share = std::isfinite(v) && top > 0 ? std::clamp(v / top, 0.0, 1.0) : 0;
            // One hue (Okabe-Ito blue) by opacity: readable in grey print too.
            o += fmt::format("<rect class=\"mark\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#0072B2\" "
                             "fill-opacity=\"{}\" stroke=\"#999\"><title>{} to {}: {}</title></rect>\n",
                             coord(kLeft + kCell * double(c)), coord(yy), coord(kCell), coord(kCell),
                             coord(0.05 + 0.95 * share), esc(h.rows[r]), esc(h.cols[c]), human(v));
            o += text(kLeft + kCell * (double(c) + 0.5), yy + kCell / 2 + 4, human(v), "middle",
                      share > 0.55 ? "cell dark" : "cell");
        }
    }
    o += text(kLeft - 6, kTop + kCell * double(h.rows.size()) + 20, h.row_label, "end", "axis-label");
    return o + close_figure(h.title);
}

std::string cache_line(const CacheLine& l) {
    if (l.line_bytes <= 0 || l.fields.empty()) return empty_figure("cacheline", l.title, l.desc);
    constexpr double kLeft = 10, kWidth = 640, kTop = 24, kBox = 44;
    Scale x{double(l.line_start), double(l.line_start + l.line_bytes), kLeft, kLeft + kWidth};
    std::string o = open_figure("cacheline", l.title, l.desc, int(kLeft * 2 + kWidth), 140);
    o += fmt::format("<rect class=\"line-outline\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>\n", coord(kLeft),
                     coord(kTop), coord(kWidth), coord(kBox));
    for (long b = 0; b <= l.line_bytes; b += 8)
        o += text(x(double(l.line_start + b)), kTop - 6, std::to_string(l.line_start + b), "middle", "tick");
    std::size_t n = 0;
    for (auto& f : l.fields) {
        long a = std::max(f.offset, l.line_start), z = std::min(f.offset + std::max(f.size, 0L), l.line_start + l.line_bytes);
        if (z <= a) continue;  // zero-sized markers and fields off the line
        std::string shortname = f.name.substr(f.name.rfind('.') + 1);
        bool anchor = !l.anchor.empty() && shortname == l.anchor;
        bool flagged = std::find(l.flagged.begin(), l.flagged.end(), shortname) != l.flagged.end();
        const char* fill = anchor ? "#D55E00" : flagged ? "#E69F00" : palette(n % 2 ? 5 : 0);
        o += fmt::format("<rect class=\"mark{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" "
                         "stroke=\"#fff\"><title>{}: bytes {}..{}{}</title></rect>\n",
                         anchor ? " anchor" : flagged ? " flagged" : "", coord(x(double(a))), coord(kTop),
                         coord(x(double(z)) - x(double(a))), coord(kBox), fill, esc(f.name), f.offset,
                         f.offset + f.size - 1, anchor ? " (refcount)" : flagged ? " (shares the refcount's line)" : "");
        double mid = (x(double(a)) + x(double(z))) / 2;
        // Names alternate below the line so neighbours on narrow fields do not overlap.
        o += text(mid, kTop + kBox + 16 + 14 * double(n % 4), shortname, "middle",
                  anchor ? "field anchor" : flagged ? "field flagged" : "field");
        ++n;
    }
    return o + close_figure(l.title);
}

std::string histogram(const Histogram& h) {
    std::vector<Bucket> b;
    for (auto& k : h.buckets)
        if (std::isfinite(k.count) && k.count >= 0 && std::isfinite(k.low) && std::isfinite(k.high)) b.push_back(k);
    if (b.empty()) return empty_figure("histogram", h.title, h.desc);
    double top = 0;
    for (auto& k : b) top = std::max(top, k.count);
    constexpr double kLeft = 64, kTop = 12, kBottom = 200;
    double slot = std::clamp(560.0 / double(b.size()), 14.0, 80.0);
    double w = kLeft + slot * double(b.size()) + 16;
    auto yt = ticks(0, top);
    Scale y{yt.front(), yt.back(), kBottom, kTop};
    std::string o = open_figure("histogram", h.title, h.desc, int(w), 270);
    o += y_axis(y, yt, kLeft, w - 10, "count");
    for (std::size_t i = 0; i < b.size(); ++i) {
        double x0 = kLeft + slot * double(i);
        std::string range = human(b[i].low) + "-" + human(b[i].high);
        std::string low = human(b[i].low);  // the axis names each bucket by its start; the tooltip by its range
        o += fmt::format("<rect class=\"mark\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#0072B2\">"
                         "<title>{} {}: {}</title></rect>\n",
                         coord(x0 + 1), coord(y(b[i].count)), coord(slot - 2), coord(kBottom - y(b[i].count)), range,
                         esc(h.unit), human(b[i].count));
        o += fmt::format("<text class=\"tick\" transform=\"translate({},{}) rotate(45)\">{}</text>\n",
                         coord(x0 + slot / 2), coord(kBottom + 10), low);
    }
    return o + text(w - 10, 262, h.unit, "end", "axis-label") + close_figure(h.title);
}

std::string bar_chart(const BarChart& c) {
    std::vector<Bar> bars;
    for (auto& b : c.bars)
        if (std::isfinite(b.value)) bars.push_back(b);
    if (bars.empty()) return empty_figure("bars", c.title, c.desc);
    std::stable_sort(bars.begin(), bars.end(), [](const Bar& a, const Bar& b) { return a.value > b.value; });
    double top = 0;
    for (auto& b : bars) top = std::max(top, b.value);
    constexpr double kRow = 22, kTop = 8, kBarsWidth = 330;
    auto value_label = [&](const Bar& b) { return human(b.value) + (c.unit.empty() ? "" : " " + c.unit); };
    double widest = 0, longest = 0;  // value labels right of the bars, names left of them
    for (auto& b : bars) widest = std::max(widest, text_width(value_label(b))), longest = std::max(longest, text_width(b.label));
    const double kLeft = std::max(230.0, longest + 12), kRight = kLeft + kBarsWidth;
    Scale x{0, top > 0 ? top : 1, kLeft, kRight};
    std::string o = open_figure("bars", c.title, c.desc, int(std::max(640.0, kRight + 4 + widest + 8)),
                                int(kTop * 2 + kRow * double(bars.size()) + 8));
    for (std::size_t i = 0; i < bars.size(); ++i) {
        double yy = kTop + kRow * double(i);
        double v = std::max(bars[i].value, 0.0);
        o += text(kLeft - 6, yy + 14, bars[i].label, "end", "tick");
        o += fmt::format("<rect class=\"mark\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"/>\n",
                         coord(kLeft), coord(yy + 3), coord(std::max(x(v) - kLeft, 1.0)), coord(kRow - 6), palette(i));
        o += text(x(v) + 4, yy + 14, value_label(bars[i]), "start", "value");
    }
    return o + close_figure(c.title);
}

namespace {

const char* verdict_colour(const std::string& v) {
    if (v == "PASS") return "#009E73";
    if (v == "FAIL") return "#D55E00";
    if (v == "INCONCLUSIVE") return "#E69F00";
    return "#555555";
}

// The two arms' trials as points (spread sideways by trial order) and medians.
std::string arm_points(const CriterionChart& c, double x0, double x1, double top, double bottom) {
    Extent e;
    e.add(0);
    for (auto* arm : {&c.baseline, &c.fix})
        for (double v : *arm) e.add(v);
    auto yt = ticks(e.lo, e.hi, 4);
    Scale y{yt.front(), yt.back(), bottom, top};
    std::string o = y_axis(y, yt, x0, x1, "");
    double col = (x1 - x0) / 2;
    const std::vector<double>* arms[] = {&c.baseline, &c.fix};
    const char* names[] = {"baseline", "fix"};
    for (int a = 0; a < 2; ++a) {
        std::vector<double> vals;
        for (double v : *arms[a])
            if (std::isfinite(v)) vals.push_back(v);
        double cx = x0 + col * (a + 0.5);
        o += text(cx, bottom + 16, names[a], "middle", "tick");
        for (std::size_t i = 0; i < vals.size(); ++i) {
            double dx = vals.size() > 1 ? (double(i) / double(vals.size() - 1) - 0.5) * col * 0.6 : 0;
            o += fmt::format("<circle class=\"mark trial {}\" cx=\"{}\" cy=\"{}\" r=\"3.5\" fill=\"{}\"/>\n", names[a],
                             coord(cx + dx), coord(y(vals[i])), palette(a));
        }
        if (vals.empty()) continue;
        std::sort(vals.begin(), vals.end());
        std::size_t n = vals.size();
        double med = n % 2 ? vals[n / 2] : (vals[n / 2 - 1] + vals[n / 2]) / 2;
        o += fmt::format("<line class=\"median\" x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>\n", coord(cx - col * 0.4),
                         coord(cx + col * 0.4), coord(y(med)), coord(y(med)));
        // Under the arm's name, not beside its points: there it ran into the other arm's.
        o += text(cx, bottom + 30, "median " + human(med), "middle", "value");
    }
    return o;
}

// Where a label of `s` centred near x stays within [x0, x1]: a centred label
// at an axis end ran into the neighbouring panel.
double centred_within(double x, const std::string& s, double x0, double x1) {
    double half = text_width(s) / 2;
    if (x1 - x0 < 2 * half) return (x0 + x1) / 2;
    return std::clamp(x, x0 + half, x1 - half);
}

// The ratio's interval on a horizontal axis with the threshold and 1 (no change).
std::string ratio_panel(const CriterionChart& c, double x0, double x1, double yy) {
    Extent e;
    e.add(1);
    e.add(c.threshold);
    if (c.ratio)
        for (double v : {c.ratio->low, c.ratio->high, c.ratio->estimate}) e.add(v);
    auto xt = ticks(e.lo, e.hi, 4);
    Scale x{xt.front(), xt.back(), x0, x1};
    std::string o = x_axis(x, xt, yy + 30, "ratio fix / baseline");
    if (std::isfinite(c.threshold)) {
        double tx = x(c.threshold);
        double gx = c.lower_is_better ? x0 : tx, gw = c.lower_is_better ? tx - x0 : x1 - tx;
        o += fmt::format("<rect class=\"good-side\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"60\"/>\n", coord(gx),
                         coord(yy - 30), coord(std::max(gw, 0.0)));
        o += fmt::format("<line class=\"threshold\" x1=\"{0}\" x2=\"{0}\" y1=\"{1}\" y2=\"{2}\"/>\n", coord(tx),
                         coord(yy - 34), coord(yy + 30));
        std::string label = "threshold " + human(c.threshold);
        o += text(centred_within(tx, label, x0, x1), yy - 38, label, "middle", "tick");
    }
    o += fmt::format("<line class=\"unity\" x1=\"{0}\" x2=\"{0}\" y1=\"{1}\" y2=\"{2}\"/>\n", coord(x(1)),
                     coord(yy - 20), coord(yy + 30));
    if (!c.ratio || !std::isfinite(c.ratio->low) || !std::isfinite(c.ratio->high)) return o + text((x0 + x1) / 2, yy + 4, "no interval yet", "middle", "empty");
    o += fmt::format("<line class=\"ci\" x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"{}\"/>\n", coord(x(c.ratio->low)),
                     coord(x(c.ratio->high)), coord(yy), coord(yy), verdict_colour(c.verdict));
    if (std::isfinite(c.ratio->estimate))
        o += fmt::format("<circle class=\"estimate\" cx=\"{}\" cy=\"{}\" r=\"5\" fill=\"{}\"/>\n",
                         coord(x(c.ratio->estimate)), coord(yy), verdict_colour(c.verdict));
    std::string label = human(c.ratio->estimate) + " [" + human(c.ratio->low) + ", " + human(c.ratio->high) + "]";
    return o + text(centred_within(x(c.ratio->estimate), label, x0, x1), yy - 10, label, "middle", "value");
}

}  // namespace

std::string criterion_chart(const CriterionChart& c) {
    std::string o = open_figure("criterion", c.title, c.desc, 700, 230);
    o += arm_points(c, 60, 300, 16, 190);
    o += ratio_panel(c, 360, 660, 110);
    o += fmt::format("<text class=\"verdict\" x=\"510\" y=\"30\" text-anchor=\"middle\" fill=\"{}\">{}</text>\n",
                     verdict_colour(c.verdict), esc(c.verdict));
    return o + close_figure(c.title);
}

}  // namespace hotline::charts
