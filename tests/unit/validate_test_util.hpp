// SPDX-License-Identifier: Apache-2.0
// Test helpers for the verdict tests: seeded samples and criteria.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "hotline/base/stats.hpp"
#include "hotline/validate/validation.hpp"

namespace hotline::test {

// Box-Muller on the project's own PRNG, so samples are the same everywhere.
inline std::vector<double> normal(Rng& rng, int n, double mean, double sd) {
    std::vector<double> v;
    for (int i = 0; i < n; ++i) {
        double u1 = 1 - rng.uniform(), u2 = rng.uniform();
        v.push_back(mean + sd * std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2));
    }
    return v;
}

inline std::vector<double> lognormal(Rng& rng, int n, double median, double sigma) {
    auto z = normal(rng, n, 0, 1);
    for (auto& x : z) x = median * std::exp(sigma * x);
    return z;
}

inline Criterion expect_down(const std::string& m, double change) {
    Criterion c;
    c.kind = CriterionKind::kExpect;
    c.metrics = {m};
    c.better = Better::kLower;
    c.change = change;
    return c;
}

inline Criterion guard_higher(const std::string& m, double worse) {
    Criterion c;
    c.kind = CriterionKind::kGuardrail;
    c.metrics = {m};
    c.better = Better::kHigher;
    c.change = worse;
    return c;
}

// ABAB trials from two generators of one metric each.
inline std::vector<Trial> abab(const std::vector<double>& a, const std::vector<double>& b, const std::string& metric) {
    std::vector<Trial> t;
    for (std::size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
        if (i < a.size()) t.push_back({Arm::kBaseline, {{metric, a[i]}}, ""});
        if (i < b.size()) t.push_back({Arm::kCandidate, {{metric, b[i]}}, ""});
    }
    return t;
}

}  // namespace hotline::test
