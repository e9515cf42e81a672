// SPDX-License-Identifier: Apache-2.0
// Two-sample statistics for fix validation: an anytime-valid sequential test of
// paired trials (t-mixture e-value and its confidence sequence for a ratio of
// means), the ratio of medians with a seeded bootstrap confidence interval for
// fixed samples, Mann-Whitney U and the Hodges-Lehmann ratio.
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

// The mixture scale g of the t-mixture e-value: the prior variance of the
// standardized effect (mean / sd of one pair's difference).  8 puts the power
// where fixes live (effects of 1-10 standard deviations per pair) and lets a
// large effect be decided after 3 pairs; docs/validate-design.md has the numbers.
inline constexpr double kDefaultMixtureG = 8;

// Evidence against "the mean of d is 0" for normal d of unknown variance: the
// Bayes factor of a N(0, g) prior on the standardized mean against the point
// null, with the scale-invariant (right Haar) prior on the sd.  It is a test
// martingale of the scale-invariant filtration, so under the null
// P(ever >= 1/alpha) <= alpha however often it is looked at (Ville); it is the
// safe t-test of Grunwald, de Heide and Koolen, and Perez-Ortiz et al.
// 1 for fewer than 2 values (no scale yet).
double t_mixture_e_value(const std::vector<double>& d, double g = kDefaultMixtureG);

// The set of ratios r = mean(fix) / mean(baseline) that the t-mixture test of
// the paired differences fix_i - r * baseline_i does not reject at 1/alpha:
// a confidence sequence for the ratio of means (Fieller's construction on the
// anytime-valid test), an interval when the baseline mean is itself resolved.
struct RatioCs {
    double ratio = 0;      // mean(fix) / mean(baseline), safe_ratio conventions
    double low = 0, high = 0;
    bool bounded = false;  // false: the set is not a bounded interval (low/high are -inf/+inf)
};
// Equal-length samples, pair i = (baseline[i], fix[i]).
RatioCs paired_ratio_cs(const std::vector<double>& baseline, const std::vector<double>& fix, double alpha,
                        double g = kDefaultMixtureG);

// ---- Trial length: Kalibera and Jones ("Rigorous benchmarking in reasonable
// time"), for two levels.  A trial of L seconds costs L + overhead_s of wall
// time; its result's relative variance is between^2 + within^2 / L: `between`
// varies from trial to trial however long it runs, `within` is the noise inside a
// trial, which averaging over a longer trial removes.
struct TrialNoise {
    double within = 0;      // relative sd of a 1 s mean from fluctuation inside a trial (per sqrt(s))
    double between = 0;     // relative sd per trial that no length averages away
    double overhead_s = 0;  // wall time per trial beyond its traffic (start, stop, apply, restore)
};

// The length minimising (L + overhead) * (between^2 + within^2 / L), the time to a
// given precision: sqrt(overhead_s) * within / between, clamped to [min_s, max_s]
// (max_s when `between` is 0 and `within` is not; min_s when `within` is 0).
double optimal_trial_length(const TrialNoise& n, double min_s, double max_s);

// One (seconds, operations so far) reading of a running total.
struct CountSample {
    double t = 0;
    double count = 0;
};
// `within` of TrialNoise from a running total read during one trial: the
// readings from the first that counted anything on are cut into windows of at
// least window_s; the relative sd of the windows' rates times sqrt(window length).
// The last window is dropped (it may hold the traffic's end).  nullopt with fewer
// than 4 windows or no operations.  Assumes the windows' rates are independent.
std::optional<double> within_trial_noise(const std::vector<CountSample>& samples, double window_s);

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
