// SPDX-License-Identifier: Apache-2.0
// What the benchmarks share: median [min-max] of repeated measurements, and a
// reader for their `--flag [value]` command lines.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace hotline::bench {

// A benchmark reports the median of its rounds and their range, never a mean:
// one disturbed round on a shared machine should not move the headline number.
struct Spread {
    double median = 0, min = 0, max = 0;
    std::size_t n = 0;
};

inline Spread spread(std::vector<double> v) {
    Spread s;
    if (v.empty()) return s;
    std::sort(v.begin(), v.end());
    s.n = v.size();
    s.min = v.front();
    s.max = v.back();
    s.median = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
    return s;
}

inline nlohmann::json to_json(const Spread& s) {
    return {{"median", s.median}, {"min", s.min}, {"max", s.max}, {"n", s.n}};
}

// "median [min-max]" with `prec` decimals, "-" when nothing was measured.
inline std::string fmt_spread(const Spread& s, int prec = 1) {
    if (s.n == 0) return "-";
    return fmt::format("{:.{}f} [{:.{}f}-{:.{}f}]", s.median, prec, s.min, prec, s.max, prec);
}

// A mean with its two-sided 95% confidence interval (Student's t), for figures
// averaged over many short rounds; half_width is 0 with fewer than two values.
struct MeanCi {
    double mean = 0, half_width = 0, sd = 0;
    std::size_t n = 0;
    double low() const { return mean - half_width; }
    double high() const { return mean + half_width; }
};

// The 0.975 quantile of Student's t with `df` degrees of freedom: exact table
// values to 30, then the Cornish-Fisher expansion (within 0.001 of the exact
// value from there on).
inline double t975(std::size_t df) {
    static const double table[] = {0,      12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                   2.201,  2.179,  2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080,
                                   2.074,  2.069,  2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
    if (df < sizeof table / sizeof table[0]) return table[df];
    const double z = 1.959964, d = double(df);
    return z + (z * z * z + z) / (4 * d) + (5 * std::pow(z, 5) + 16 * z * z * z + 3 * z) / (96 * d * d);
}

inline MeanCi mean_ci95(const std::vector<double>& v) {
    MeanCi m;
    m.n = v.size();
    if (v.empty()) return m;
    double sum = 0;
    for (double x : v) sum += x;
    m.mean = sum / double(v.size());
    if (v.size() < 2) return m;
    double ss = 0;
    for (double x : v) ss += (x - m.mean) * (x - m.mean);
    m.sd = std::sqrt(ss / double(v.size() - 1));
    m.half_width = t975(v.size() - 1) * m.sd / std::sqrt(double(v.size()));
    return m;
}

// A ratio of two arms from paired rounds (round i of one over round i of the
// other): the geometric mean and its 95% confidence interval, from the mean of
// the log ratios.  A round's level moves both arms (the machine's state), so
// the pairs spread less than either arm's own rounds.
struct RatioCi {
    double estimate = 0, low = 0, high = 0;
    std::size_t n = 0;
};

// A figure by round and by mode; a run that failed leaves its cell empty.
using RoundFigures = std::vector<std::map<std::string, double>>;

// A over B in every round that has both (B above zero): a failed run drops its
// round, never pairs one round's A with another's B.
inline std::vector<double> paired_ratios(const RoundFigures& rounds, const std::string& a, const std::string& b) {
    std::vector<double> out;
    for (const auto& round : rounds) {
        auto x = round.find(a), y = round.find(b);
        if (x != round.end() && y != round.end() && y->second > 0) out.push_back(x->second / y->second);
    }
    return out;
}

inline RatioCi ratio_ci95(const std::vector<double>& ratios) {
    std::vector<double> logs;
    for (double r : ratios)
        if (r > 0 && std::isfinite(r)) logs.push_back(std::log(r));
    MeanCi m = mean_ci95(logs);
    if (logs.empty()) return {};
    return {std::exp(m.mean), std::exp(m.low()), std::exp(m.high()), logs.size()};
}

inline std::string fmt_ratio_ci(const RatioCi& r) {
    return fmt::format("{:.3f} [{:.3f} .. {:.3f}] ({} rounds)", r.estimate, r.low, r.high, r.n);
}

// Against a ceiling: met when the whole interval lies at or under it, MISSED when
// it lies above, and undecided (more rounds would tell) when it holds the goal.
inline std::string ceiling_verdict(const RatioCi& r, double goal) {
    if (r.n < 2) return fmt::format("undecided: {} round (target <= {})", r.n, goal);
    if (r.high <= goal) return fmt::format("met (target <= {})", goal);
    if (r.low > goal) return fmt::format("MISSED (target <= {})", goal);
    return fmt::format("undecided: the interval holds the target {}", goal);
}

// A ratio reported with no goal of its own.
inline nlohmann::json to_json(const RatioCi& r) {
    return {{"estimate", r.estimate}, {"low", r.low}, {"high", r.high}, {"rounds", r.n}};
}

inline nlohmann::json to_json(const RatioCi& r, double goal) {
    return {{"estimate", r.estimate}, {"low", r.low}, {"high", r.high}, {"rounds", r.n}, {"target", goal},
            {"verdict", ceiling_verdict(r, goal)}};
}

// What a benchmark's JSON may hold besides positive, finite figures: keys whose
// value is a signed difference (finite is enough), and lists that may be empty.
struct FigureRules {
    std::set<std::string> signed_keys;
    std::set<std::string> may_be_empty = {"missed", "notes"};
};

// Every number under `j` is finite and positive (a zero is a figure that measured
// nothing), every object and array has entries; one line per violation, named
// by its JSON path.  Under a signed key, finite is enough.
inline void check_figures(const nlohmann::json& j, const std::string& path, const FigureRules& rules,
                          std::vector<std::string>& problems, bool signed_ok = false) {
    std::string key = path.substr(path.find_last_of('/') + 1);
    if (j.is_number()) {
        double v = j.get<double>();
        if (!std::isfinite(v) || (v <= 0 && !signed_ok))
            problems.push_back(fmt::format("{} = {} (a figure must be positive and finite)", path, v));
    } else if (j.is_object() || j.is_array()) {
        if (j.empty() && !rules.may_be_empty.count(key)) problems.push_back(fmt::format("{} is empty", path));
        if (j.is_object())
            for (auto& [k, v] : j.items())
                check_figures(v, path + "/" + k, rules, problems, signed_ok || rules.signed_keys.count(k));
        else
            for (std::size_t i = 0; i < j.size(); ++i)
                check_figures(j[i], fmt::format("{}/{}", path, i), rules, problems, signed_ok);
    }
}

// The end of every benchmark: writes `out` to `path` (when given), reads it back
// and checks that each of `sections` is there and every figure is positive and
// finite.  Prints every problem and every part that failed (`failures`) and
// returns the exit code: 1 when there is any, 0 otherwise.
inline int finish(const char* prog, const nlohmann::json& out, const std::string& path,
                  const std::vector<std::string>& sections, std::vector<std::string> failures,
                  const FigureRules& rules = {}) {
    nlohmann::json written = out;
    if (!path.empty()) {
        std::ofstream(path) << out.dump(2) << "\n";
        std::ifstream in(path);
        written = nlohmann::json::parse(in, nullptr, false);
        if (written.is_discarded()) failures.push_back(fmt::format("{}: not valid JSON after writing", path));
    }
    for (auto& s : sections)
        if (!written.is_discarded() && !written.contains(s)) failures.push_back(fmt::format("section {} missing", s));
    if (!written.is_discarded()) check_figures(written, "", rules, failures);
    for (auto& f : failures) fmt::print(stderr, "{}: FAILED: {}\n", prog, f);
    if (!path.empty()) fmt::print("JSON: {}{}\n", path, failures.empty() ? " (checked)" : "");
    return failures.empty() ? 0 : 1;
}

// Walks argv one flag at a time:
//   Args args("bench_x", "bench_x [--smoke] [--rounds N]", argc, argv);
//   while (args.next())
//       if (args.is("--rounds")) rounds = args.int_value(); else ... else return args.usage();
class Args {
public:
    Args(const char* prog, const char* usage, int argc, char** argv)
        : prog_(prog), usage_(usage), argc_(argc), argv_(argv) {}

    // Steps to the next argument; false after the last one.
    bool next() {
        if (i_ + 1 >= argc_) return false;
        flag_ = argv_[++i_];
        return true;
    }
    bool is(const char* flag) const { return flag_ == flag; }

    // The argument after the current flag; a flag without one is a usage error
    // that names the flag (exit 2).
    std::string value() {
        if (i_ + 1 >= argc_) {
            fmt::print(stderr, "{}: {} needs a value\n", prog_, flag_);
            std::exit(2);
        }
        return argv_[++i_];
    }
    // Numbers as atoi/atof read them: garbage reads as 0, which each bench's
    // range check then rejects.
    int int_value() { return std::atoi(value().c_str()); }
    double double_value() { return std::atof(value().c_str()); }

    // Prints the usage line; returns 2, the exit code for a usage error.
    int usage() const {
        fmt::print(stderr, "usage: {}\n", usage_);
        return 2;
    }

private:
    const char* prog_;
    const char* usage_;
    int argc_;
    char** argv_;
    int i_ = 0;
    std::string flag_;
};

}  // namespace hotline::bench
