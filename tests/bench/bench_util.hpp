// What the benchmarks share: median [min-max] of repeated measurements, and a
// reader for their `--flag [value]` command lines.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
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
