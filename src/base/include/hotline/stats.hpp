// Two-sample statistics for fix validation: ratio of medians with a seeded
// bootstrap confidence interval, Mann-Whitney U and the Hodges-Lehmann ratio.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace hotline {

// A small, fully specified PRNG (splitmix64-seeded xoshiro256**) so a seed gives
// the same confidence interval with any standard library.
class Rng {
public:
    explicit Rng(std::uint64_t seed);
    std::uint64_t next();
    std::size_t below(std::size_t n);  // uniform in [0, n), unbiased
    double uniform();                  // [0, 1)

private:
    std::uint64_t s_[4];
};

double median(std::vector<double> v);                        // NaN when empty
double quantile_sorted(const std::vector<double>& sorted, double q);  // linear interpolation

// b / a with the conventions the verdicts rely on: 0/0 is 1 (both arms saw
// nothing: no change), x/0 is +infinity.
double safe_ratio(double b, double a);

struct RatioCi {
    double ratio = 0;    // median(candidate) / median(baseline)
    double low = 0;      // percentile bootstrap bounds of that ratio
    double high = 0;
    double confidence = 0.95;
    int iterations = 0;
};

struct BootstrapOptions {
    int iterations = 4000;
    double confidence = 0.95;
    std::uint64_t seed = 1;
};

// Both samples must be non-empty.  Each arm is resampled independently.
RatioCi bootstrap_ratio_of_medians(const std::vector<double>& baseline,
                                   const std::vector<double>& candidate,
                                   const BootstrapOptions& opts);

struct MannWhitney {
    double u = 0;        // U of the candidate arm
    double z = 0;        // normal approximation, tie- and continuity-corrected
    double p_two_sided = 1;
    // Probability that a candidate value exceeds a baseline value (ties count half).
    double prob_superiority = 0.5;
};
MannWhitney mann_whitney(const std::vector<double>& baseline, const std::vector<double>& candidate);

// Hodges-Lehmann estimate of the candidate/baseline ratio: the median of all
// pairwise ratios (the HL shift on the log scale).  nullopt if any value <= 0.
std::optional<double> hodges_lehmann_ratio(const std::vector<double>& baseline,
                                           const std::vector<double>& candidate);

}  // namespace hotline
