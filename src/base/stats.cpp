// SPDX-License-Identifier: Apache-2.0
// Two-sample statistics behind every verdict: all deterministic given a seed.
#include "hotline/base/stats.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace hotline {

namespace {

std::uint64_t splitmix64(std::uint64_t& x) {
    std::uint64_t z = (x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

double median_inplace(std::vector<double>& v) {
    if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
    std::size_t n = v.size(), mid = n / 2;
    std::nth_element(v.begin(), v.begin() + mid, v.end());
    double hi = v[mid];
    if (n % 2) return hi;
    double lo = *std::max_element(v.begin(), v.begin() + mid);
    return (lo + hi) / 2;
}

}  // namespace

Rng::Rng(std::uint64_t seed) {
    for (auto& s : s_) s = splitmix64(seed);
}

std::uint64_t Rng::next() {
    std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
}

std::size_t Rng::below(std::size_t n) {
    // Rejection sampling keeps every index equally likely.
    std::uint64_t limit = std::numeric_limits<std::uint64_t>::max() -
                          std::numeric_limits<std::uint64_t>::max() % n;
    std::uint64_t x;
    do x = next();
    while (x >= limit);
    return std::size_t(x % n);
}

double Rng::uniform() { return double(next() >> 11) * 0x1.0p-53; }

double median(std::vector<double> v) { return median_inplace(v); }

double quantile_sorted(const std::vector<double>& s, double q) {
    if (s.empty()) return std::numeric_limits<double>::quiet_NaN();
    if (q <= 0) return s.front();
    if (q >= 1) return s.back();
    double pos = q * double(s.size() - 1);
    std::size_t i = std::size_t(pos);
    double frac = pos - double(i);
    if (i + 1 >= s.size()) return s.back();
    if (frac == 0) return s[i];
    // inf - inf would give NaN: an infinite neighbour decides.
    if (std::isinf(s[i + 1]) || std::isinf(s[i])) return frac < 0.5 ? s[i] : s[i + 1];
    return s[i] + frac * (s[i + 1] - s[i]);
}

double safe_ratio(double b, double a) {
    if (a == 0) return b == 0 ? 1.0 : std::numeric_limits<double>::infinity();
    return b / a;
}

RatioCi bootstrap_ratio_of_medians(const std::vector<double>& baseline,
                                   const std::vector<double>& candidate,
                                   const BootstrapOptions& opts) {
    RatioCi r;
    r.confidence = opts.confidence;
    r.iterations = opts.iterations;
    r.ratio = safe_ratio(median(candidate), median(baseline));
    if (baseline.empty() || candidate.empty() || opts.iterations <= 0) {
        r.low = r.high = r.ratio;
        return r;
    }
    Rng rng(opts.seed);
    std::vector<double> ratios;
    ratios.reserve(std::size_t(opts.iterations));
    std::vector<double> ra(baseline.size()), rb(candidate.size());
    for (int it = 0; it < opts.iterations; ++it) {
        for (auto& x : ra) x = baseline[rng.below(baseline.size())];
        for (auto& x : rb) x = candidate[rng.below(candidate.size())];
        ratios.push_back(safe_ratio(median_inplace(rb), median_inplace(ra)));
    }
    std::sort(ratios.begin(), ratios.end());
    double alpha = 1 - opts.confidence;
    r.low = quantile_sorted(ratios, alpha / 2);
    r.high = quantile_sorted(ratios, 1 - alpha / 2);
    return r;
}

namespace {

// Squared t over its degrees of freedom, n * mean^2 / sum of squared deviations,
// is what the e-value grows with; this is the value of it at which the e-value
// reaches 1/alpha after n values, or +inf when no data of n values can get there.
double u_at_threshold(std::size_t n, double alpha, double g) {
    double one_ng = 1 + double(n) * g;
    double log_c = 2.0 / double(n) * (0.5 * std::log(one_ng) - std::log(alpha));
    double c = std::exp(log_c);
    if (c >= one_ng) return std::numeric_limits<double>::infinity();
    return (c - 1) / (1 - c / one_ng);
}

}  // namespace

double t_mixture_e_value(const std::vector<double>& d, double g) {
    const std::size_t n = d.size();
    if (n < 2) return 1;
    double mean = 0, ss = 0;
    for (double x : d) mean += x;
    mean /= double(n);
    for (double x : d) ss += (x - mean) * (x - mean);
    const double one_ng = 1 + double(n) * g;
    if (ss == 0) {  // every difference the same: t is 0 or infinite
        if (mean == 0) return std::pow(one_ng, -0.5);
        return std::pow(one_ng, (double(n) - 1) / 2);
    }
    const double u = double(n) * mean * mean / ss;
    double log_e = -0.5 * std::log(one_ng) + double(n) / 2 * (std::log1p(u) - std::log1p(u / one_ng));
    return std::exp(log_e);
}

RatioCs paired_ratio_cs(const std::vector<double>& base, const std::vector<double>& fix, double alpha, double g) {
    RatioCs r;
    r.low = -std::numeric_limits<double>::infinity();
    r.high = std::numeric_limits<double>::infinity();
    const std::size_t n = std::min(base.size(), fix.size());
    if (n == 0) return r;
    double mb = 0, mf = 0;
    for (std::size_t i = 0; i < n; ++i) mb += base[i], mf += fix[i];
    mb /= double(n);
    mf /= double(n);
    r.ratio = safe_ratio(mf, mb);
    const double u = n < 2 ? std::numeric_limits<double>::infinity() : u_at_threshold(n, alpha, g);
    if (!std::isfinite(u)) return r;
    double sbb = 0, sff = 0, sfb = 0;
    for (std::size_t i = 0; i < n; ++i) {
        sbb += (base[i] - mb) * (base[i] - mb);
        sff += (fix[i] - mf) * (fix[i] - mf);
        sfb += (fix[i] - mf) * (base[i] - mb);
    }
    // r is kept when n (mf - r mb)^2 < u * sum((f - mf) - r (b - mb))^2: a quadratic in r.
    const double nn = double(n);
    const double qa = nn * mb * mb - u * sbb, qb = -2 * (nn * mf * mb - u * sfb), qc = nn * mf * mf - u * sff;
    if (qa <= 0) return r;  // the baseline mean itself is not resolved: unbounded
    const double disc = std::max(0.0, qb * qb - 4 * qa * qc);
    r.low = (-qb - std::sqrt(disc)) / (2 * qa);
    r.high = (-qb + std::sqrt(disc)) / (2 * qa);
    r.bounded = true;
    return r;
}

double optimal_trial_length(const TrialNoise& n, double min_s, double max_s) {
    if (!(n.within > 0)) return min_s;
    if (!(n.between > 0)) return max_s;
    const double best = std::sqrt(std::max(0.0, n.overhead_s)) * n.within / n.between;
    return std::clamp(best, min_s, max_s);
}

std::optional<double> within_trial_noise(const std::vector<CountSample>& samples, double window_s) {
    std::size_t i = 0;
    while (i < samples.size() && !(samples[i].count > 0)) ++i;
    std::vector<double> rates, lengths;
    for (std::size_t j = i + 1; i < samples.size() && j < samples.size(); ++j) {
        const double dt = samples[j].t - samples[i].t;
        if (dt < window_s) continue;
        rates.push_back((samples[j].count - samples[i].count) / dt);
        lengths.push_back(dt);
        i = j;
    }
    if (rates.size() < 5) return std::nullopt;
    rates.pop_back();  // the window that may hold the end of the traffic
    lengths.pop_back();
    double mean = 0, ss = 0, mean_len = 0;
    for (std::size_t k = 0; k < rates.size(); ++k) mean += rates[k], mean_len += lengths[k];
    mean /= double(rates.size());
    mean_len /= double(rates.size());
    if (!(mean > 0)) return std::nullopt;
    for (double r : rates) ss += (r - mean) * (r - mean);
    return std::sqrt(ss / double(rates.size() - 1)) / mean * std::sqrt(mean_len);
}

MannWhitney mann_whitney(const std::vector<double>& a, const std::vector<double>& b) {
    MannWhitney m;
    const double n1 = double(a.size()), n2 = double(b.size());
    if (a.empty() || b.empty()) return m;
    struct Obs {
        double v;
        bool cand;
    };
    std::vector<Obs> all;
    for (double x : a) all.push_back({x, false});
    for (double x : b) all.push_back({x, true});
    std::sort(all.begin(), all.end(), [](const Obs& x, const Obs& y) { return x.v < y.v; });
    double rank_sum_b = 0, tie_term = 0;
    for (std::size_t i = 0; i < all.size();) {
        std::size_t j = i;
        while (j < all.size() && all[j].v == all[i].v) ++j;
        double avg_rank = (double(i + 1) + double(j)) / 2;  // ranks are 1-based
        double t = double(j - i);
        tie_term += t * t * t - t;
        for (std::size_t k = i; k < j; ++k)
            if (all[k].cand) rank_sum_b += avg_rank;
        i = j;
    }
    m.u = rank_sum_b - n2 * (n2 + 1) / 2;
    m.prob_superiority = m.u / (n1 * n2);
    double mean = n1 * n2 / 2;
    double n = n1 + n2;
    double var = n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1)));
    if (var <= 0) {
        m.z = 0;
        m.p_two_sided = 1;
        return m;
    }
    double diff = m.u - mean;
    double cc = diff > 0 ? -0.5 : (diff < 0 ? 0.5 : 0);
    m.z = (diff + cc) / std::sqrt(var);
    m.p_two_sided = std::min(1.0, std::erfc(std::fabs(m.z) / std::sqrt(2.0)));
    return m;
}

namespace {

// The pairwise differences y - x of two sorted samples, never materialised:
// n*m of them would be quadratic in memory.  Selection by bisection on the
// value, each step counting in O(n + m).
class PairDifferences {
public:
    PairDifferences(std::vector<double> xs, std::vector<double> ys) : x_(std::move(xs)), y_(std::move(ys)) {
        std::sort(x_.begin(), x_.end());
        std::sort(y_.begin(), y_.end());
    }
    std::size_t size() const { return x_.size() * y_.size(); }

    // The k-th smallest (0-based), exactly as sorting all differences would give.
    double kth(std::size_t k) const {
        double lo = y_.front() - x_.back(), hi = y_.back() - x_.front();
        if (count_le(lo) > k) return lo;
        // Invariant: count_le(lo) <= k < count_le(hi), so the answer is in (lo, hi].
        while (true) {
            double mid = lo + (hi - lo) / 2;
            if (mid <= lo || mid >= hi) break;
            (count_le(mid) > k ? hi : lo) = mid;
        }
        return largest_le(hi);
    }

private:
    std::size_t count_le(double t) const {
        std::size_t n = 0, j = 0;
        for (std::size_t i = 0; i < x_.size(); ++i) {  // x ascending: the bound on y grows
            while (j < y_.size() && y_[j] - x_[i] <= t) ++j;
            n += j;
        }
        return n;
    }
    double largest_le(double t) const {
        double best = -std::numeric_limits<double>::infinity();
        std::size_t j = 0;
        for (std::size_t i = 0; i < x_.size(); ++i) {
            while (j < y_.size() && y_[j] - x_[i] <= t) ++j;
            if (j > 0) best = std::max(best, y_[j - 1] - x_[i]);
        }
        return best;
    }
    std::vector<double> x_, y_;
};

std::optional<std::vector<double>> logs_of_positive(const std::vector<double>& v) {
    std::vector<double> out;
    out.reserve(v.size());
    for (double x : v) {
        if (!(x > 0) || !std::isfinite(x)) return std::nullopt;
        out.push_back(std::log(x));
    }
    return out;
}

}  // namespace

std::optional<double> hodges_lehmann_ratio(const std::vector<double>& a, const std::vector<double>& b) {
    if (a.empty() || b.empty()) return std::nullopt;
    auto la = logs_of_positive(a), lb = logs_of_positive(b);
    if (!la || !lb) return std::nullopt;
    PairDifferences d(std::move(*la), std::move(*lb));
    std::size_t n = d.size(), mid = n / 2;
    double hi = d.kth(mid);
    return std::exp(n % 2 ? hi : (d.kth(mid - 1) + hi) / 2);
}

}  // namespace hotline
