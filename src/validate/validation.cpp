// SPDX-License-Identifier: Apache-2.0
// Verdicts from per-trial metrics: one criterion at a time, then the overall
// verdict and the adaptive ABAB stopping rule.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "hotline/base/util.hpp"
#include "hotline/validate/validation.hpp"

namespace hotline {

namespace {

std::optional<std::string> check_trial_length(const TrialLengthOptions& t) {
    if (!t.adapt) {
        if (!(t.fixed_s > 0) || !std::isfinite(t.fixed_s))
            return fmt::format("trial length {} s must be positive", t.fixed_s);
        return std::nullopt;
    }
    if (!(t.min_s > 0) || !(t.max_s >= t.min_s) || !std::isfinite(t.max_s))
        return fmt::format("trial length bounds {}..{} s must be positive and in order", t.min_s, t.max_s);
    if (!(t.pilot_s >= t.min_s && t.pilot_s <= t.max_s))
        return fmt::format("the pilot trial length {} s is outside the bounds {}..{} s", t.pilot_s, t.min_s, t.max_s);
    return std::nullopt;
}

}  // namespace

std::optional<std::string> check_validate_options(const ValidateOptions& o) {
    if (o.min_each < 1) return "the minimum number of trials per arm must be at least 1";
    if (o.max_each < o.min_each)
        return fmt::format("the maximum trials per arm ({}) is below the minimum ({})", o.max_each, o.min_each);
    if (!(o.confidence > 0.5 && o.confidence < 1))
        return fmt::format("confidence {} is outside (0.5, 1); use e.g. 0.95", o.confidence);
    if (o.method == TestMethod::kSequential && !(o.mixture_g > 0))
        return fmt::format("mixture scale {} must be > 0", o.mixture_g);
    if (auto p = check_trial_length(o.trial_length)) return p;
    if (o.bootstrap_iterations < 100)
        return fmt::format("{} bootstrap iterations are too few for a percentile interval; use >= 1000",
                           o.bootstrap_iterations);
    return std::nullopt;
}

namespace {

struct Picked {
    std::string metric;
    std::vector<double> a, b;
    std::string missing;  // why no alternative could be used
};

Picked pick_metric(const Criterion& c, const std::vector<Trial>& trials) {
    Picked p;
    std::vector<std::string> why;
    for (auto& name : c.metrics) {
        std::vector<double> a, b;
        std::size_t absent = 0;
        for (auto& t : trials) {
            auto it = t.metrics.find(name);
            if (it == t.metrics.end() || !std::isfinite(it->second)) {
                ++absent;
                continue;
            }
            (t.arm == Arm::kBaseline ? a : b).push_back(it->second);
        }
        if (absent == 0) {
            p.metric = name;
            p.a = std::move(a);
            p.b = std::move(b);
            return p;
        }
        why.push_back(fmt::format("{} missing in {} of {} trials", name, absent, trials.size()));
    }
    for (std::size_t i = 0; i < why.size(); ++i) p.missing += (i ? "; " : "") + why[i];
    return p;
}

bool constant(const std::vector<double>& v) {
    return std::all_of(v.begin(), v.end(), [&](double x) { return x == v.front(); });
}

std::string fmt_ratio(double r) {
    return plain_number(r, 3);
}

}  // namespace

namespace {

// The exact comparison: one value per arm (constant within it) decides.
std::optional<RatioCi> exact_ratio(const Picked& p, CriterionResult& r) {
    if (!constant(p.a) || !constant(p.b)) {
        r.reason = "an exact metric varies within an arm: the trials did not measure the same thing";
        return std::nullopt;
    }
    RatioCi ci;
    ci.ratio = ci.low = ci.high = safe_ratio(p.b.front(), p.a.front());
    ci.confidence = 1;
    return ci;
}

// The sequential test on complete ABAB pairs (baseline i, fix i): at each look
// from min_each pairs on, the t-mixture e-value of fix - t * baseline against
// "ratio of means = t"; the first look where it reaches 1/alpha decides, on the
// side the mean difference is on.  Every look counts, so the error rate holds
// however the run stops.  The ratio's interval is the running intersection of
// the confidence sequence, so it only narrows, as the decision only stays.
// With an adapted trial length the pilot pairs are a stage of their own: the
// evidence is the pilot's e-value (fixed at its last pair) times the e-value of
// the pairs after it, and the interval is the later stage's (docs/validate-design.md).
struct SequentialJudgement {
    int pairs = 0;
    int decided_after = 0;  // 0: undecided
    double e_value = 1;     // at the deciding look, else at the last one
    std::optional<double> pilot_e_value;
    bool good_side = false;
    RatioCi ci;
};

RatioCi unbounded_ci(double confidence) {
    RatioCi ci;
    ci.confidence = confidence;
    ci.low = -std::numeric_limits<double>::infinity();
    ci.high = std::numeric_limits<double>::infinity();
    return ci;
}

// Narrows the running interval with this look's confidence sequence.
void narrow(RatioCi& ci, const std::vector<double>& a, const std::vector<double>& b, const ValidateOptions& o) {
    RatioCs now = paired_ratio_cs(a, b, 1 - o.confidence, o.mixture_g);
    ci.ratio = now.ratio;
    if (now.bounded && now.low <= ci.high && now.high >= ci.low) {
        ci.low = std::max(ci.low, now.low);
        ci.high = std::min(ci.high, now.high);
    }
}

SequentialJudgement judge_sequential(const Criterion& c, const Picked& p, const ValidateOptions& o) {
    SequentialJudgement j;
    const std::size_t n = std::min(p.a.size(), p.b.size());
    const std::size_t stage = o.trial_length.adapt ? kPilotPairs : 0;
    const double t = c.threshold(), alpha = 1 - o.confidence;
    j.pairs = int(n);
    j.ci = unbounded_ci(o.confidence);
    std::vector<double> a, b, d;  // the current stage's
    double earlier = 1, sum_d = 0;
    for (std::size_t k = 0; k < n; ++k) {
        if (k == stage && stage > 0) {
            j.pilot_e_value = earlier = t_mixture_e_value(d, o.mixture_g);
            a.clear(), b.clear(), d.clear();
            j.ci = unbounded_ci(o.confidence);
        }
        a.push_back(p.a[k]);
        b.push_back(p.b[k]);
        d.push_back(p.b[k] - t * p.a[k]);
        sum_d += d.back();
        narrow(j.ci, a, b, o);
        if (j.decided_after || int(k + 1) < o.min_each) continue;
        j.e_value = earlier * t_mixture_e_value(d, o.mixture_g);
        if (j.e_value < 1 / alpha) continue;
        j.decided_after = int(k + 1);
        j.good_side = c.better == Better::kLower ? sum_d < 0 : sum_d > 0;
    }
    return j;
}

// An interval's ends ("CS" or "CI"): few pairs of noisy trials, or a zero
// baseline, leave it unbounded, which reads better as words than as infinities.
std::string interval_text(const RatioCi& ci, const char* kind) {
    auto end = [](double v) { return std::isfinite(v) ? fmt_ratio(v) : std::string("unbounded"); };
    if (!std::isfinite(ci.low) && !std::isfinite(ci.high))
        return fmt::format("{:.0f}% {} not bounded yet", ci.confidence * 100, kind);
    return fmt::format("{:.0f}% {} {}..{}", ci.confidence * 100, kind, end(ci.low), end(ci.high));
}

void judge_sequential_criterion(const Criterion& c, const SequentialJudgement& j, const ValidateOptions& opts,
                                CriterionResult& r) {
    r.ratio = j.ci;
    r.pairs = j.pairs;
    r.decided_after_pairs = j.decided_after;
    r.e_value = j.e_value;
    r.pilot_e_value = j.pilot_e_value;
    const std::string side = c.better == Better::kLower ? "<=" : ">=";
    std::string est = fmt::format("ratio of means {} ({})", fmt_ratio(j.ci.ratio), interval_text(j.ci, "CS"));
    const double bar = 1 / (1 - opts.confidence);
    const std::string e = j.pilot_e_value ? fmt::format("e-value {}, the pilot's {} included", fmt_ratio(j.e_value),
                                                        fmt_ratio(*j.pilot_e_value))
                                          : fmt::format("e-value {}", fmt_ratio(j.e_value));
    if (j.decided_after) {
        r.verdict = j.good_side ? Verdict::kPass : Verdict::kFail;
        r.reason = fmt::format("{} {}{} {}; decided after {} pairs ({} >= {})", est, j.good_side ? "" : "misses ",
                               side, fmt_ratio(c.threshold()), j.decided_after, e, fmt_ratio(bar));
        return;
    }
    r.verdict = Verdict::kInconclusive;
    r.reason = fmt::format("{} straddles the threshold {} ({} < {} after {} pairs)", est,
                           fmt_ratio(c.threshold()), e, fmt_ratio(bar), j.pairs);
}

void judge_fixed_sample(const Criterion& c, const RatioCi& ci, const std::string& est, CriterionResult& r) {
    const double t = c.threshold();
    const bool lower_good = c.better == Better::kLower;
    // Good side of the threshold: ratio <= t when lower is better, ratio >= t otherwise.
    bool all_good = lower_good ? ci.high <= t : ci.low >= t;
    bool all_bad = lower_good ? ci.low > t : ci.high < t;
    std::string side = lower_good ? "<=" : ">=";
    if (all_good) {
        r.verdict = Verdict::kPass;
        r.reason = fmt::format("{} {} {}", est, side, fmt_ratio(t));
    } else if (all_bad) {
        r.verdict = Verdict::kFail;
        r.reason = fmt::format("{} misses {} {}", est, side, fmt_ratio(t));
    } else {
        r.verdict = Verdict::kInconclusive;
        r.reason = fmt::format("{} straddles the threshold {}", est, fmt_ratio(t));
    }
}

// Picks the metric and fills the medians; false (with the reason) when there
// is nothing to compare yet.
bool collect(const Criterion& c, const std::vector<Trial>& trials, CriterionResult& r, Picked& p) {
    if (trials.empty()) {
        r.reason = "no trials yet";
        return false;
    }
    p = pick_metric(c, trials);
    if (p.metric.empty()) {
        r.reason = "not measured: " + p.missing;
        return false;
    }
    r.metric = p.metric;
    r.n_baseline = p.a.size();
    r.n_candidate = p.b.size();
    if (p.a.empty() || p.b.empty()) {
        r.reason = p.a.empty() ? "no baseline trial yet" : "no fix trial yet";
        return false;
    }
    r.median_baseline = median(p.a);
    r.median_candidate = median(p.b);
    return true;
}

}  // namespace

CriterionResult evaluate_criterion(const Criterion& c, const std::vector<Trial>& trials,
                                   const ValidateOptions& opts, std::uint64_t seed) {
    CriterionResult r;
    r.criterion = c;
    r.verdict = c.required() ? Verdict::kInconclusive : Verdict::kInfo;
    Picked p;
    if (!collect(c, trials, r, p)) return r;
    const bool sequential = !c.exact && opts.method == TestMethod::kSequential;
    if (c.exact) {
        r.ratio = exact_ratio(p, r);
        if (!r.ratio) return r;
    } else {
        if (!sequential) {
            BootstrapOptions bo;
            bo.iterations = opts.bootstrap_iterations;
            bo.confidence = opts.confidence;
            bo.seed = seed;
            r.ratio = bootstrap_ratio_of_medians(p.a, p.b, bo);
        }
        r.mann_whitney = mann_whitney(p.a, p.b);
        r.hl_ratio = hodges_lehmann_ratio(p.a, p.b);
    }
    std::optional<SequentialJudgement> seq;
    if (sequential) {
        seq = judge_sequential(c, p, opts);
        r.ratio = seq->ci;
    }
    if (r.median_baseline == 0 && r.median_candidate == 0 && c.kind == CriterionKind::kExpect) {
        r.reason = "the metric is 0 in both arms: nothing to improve on, so no judgement";
        return r;
    }
    const bool enough = c.exact || (int(p.a.size()) >= opts.min_each && int(p.b.size()) >= opts.min_each);
    if (sequential && c.required() && enough) {
        judge_sequential_criterion(c, *seq, opts, r);
        return r;
    }
    const RatioCi& ci = *r.ratio;
    std::string est = c.exact ? fmt::format("ratio {}", fmt_ratio(ci.ratio))
                              : fmt::format("ratio {} ({})", fmt_ratio(ci.ratio), interval_text(ci, sequential ? "CS" : "CI"));
    if (!c.required()) {
        r.reason = est;
        return r;
    }
    if (!enough) {
        r.reason = fmt::format("{}; {} trials per arm needed before judging", est, opts.min_each);
        return r;
    }
    judge_fixed_sample(c, ci, est, r);
    return r;
}

VerdictReport evaluate(const std::string& fix, const std::vector<Criterion>& criteria,
                       const std::vector<Trial>& trials, const ValidateOptions& opts) {
    VerdictReport rep;
    rep.fix = fix;
    rep.options = opts;
    rep.trials = trials;
    for (auto& t : trials) ++(t.arm == Arm::kBaseline ? rep.baseline_trials : rep.candidate_trials);
    for (std::size_t i = 0; i < criteria.size(); ++i)
        rep.criteria.push_back(evaluate_criterion(criteria[i], trials, opts, opts.seed + 0x9e37ull * (i + 1)));

    int expects = 0, required = 0, passed = 0;
    const CriterionResult* first_fail = nullptr;
    std::vector<std::string> open;
    for (auto& c : rep.criteria) {
        if (!c.criterion.required()) continue;
        ++required;
        if (c.criterion.kind == CriterionKind::kExpect) ++expects;
        if (c.verdict == Verdict::kPass) ++passed;
        if (c.verdict == Verdict::kFail && !first_fail) first_fail = &c;
        if (c.verdict == Verdict::kInconclusive) open.push_back(c.criterion.describe() + ": " + c.reason);
    }
    if (expects == 0) {
        rep.overall = Verdict::kInconclusive;
        rep.reason = "the fix names no expected metric, so nothing can confirm it";
    } else if (first_fail) {
        rep.overall = Verdict::kFail;
        rep.reason = fmt::format("{} {} failed: {}", to_string(first_fail->criterion.kind),
                                 first_fail->criterion.describe(), first_fail->reason);
    } else if (passed == required) {
        rep.overall = Verdict::kPass;
        rep.reason = fmt::format("all {} criteria hold", required);
    } else {
        rep.overall = Verdict::kInconclusive;
        rep.reason = fmt::format("{} of {} criteria undecided after {} baseline and {} fix trials; first: {}",
                                 open.size(), required, rep.baseline_trials, rep.candidate_trials,
                                 open.empty() ? "" : open.front());
    }
    return rep;
}

PreconditionResult judge_precondition(const Precondition& p, const std::vector<Trial>& trials) {
    PreconditionResult r;
    r.precondition = p;
    std::vector<Trial> first;
    for (auto& t : trials)
        if (t.arm == Arm::kBaseline && int(first.size()) < kPreconditionTrials) first.push_back(t);
    for (std::size_t n = 1; n <= first.size(); ++n) {
        Criterion as_metric;
        as_metric.metrics = p.metrics;
        Picked pk = pick_metric(as_metric, std::vector<Trial>(first.begin(), first.begin() + long(n)));
        r.metric = pk.metric;
        r.values = pk.a;
        r.median = pk.a.empty() ? 0 : median(pk.a);
        if (!pk.metric.empty() && r.median >= p.at_least) {
            r.state = PreconditionState::kHeld;
            return r;
        }
    }
    r.state = int(first.size()) >= kPreconditionTrials ? PreconditionState::kFailed : PreconditionState::kPending;
    return r;
}

VerdictReport not_applicable_report(const std::string& fix, const std::vector<Criterion>& criteria,
                                    const std::string& reason) {
    VerdictReport rep;
    rep.fix = fix;
    rep.overall = Verdict::kNotApplicable;
    rep.reason = reason;
    for (auto& c : criteria) {
        CriterionResult cr;
        cr.criterion = c;
        cr.verdict = Verdict::kNotApplicable;
        cr.reason = "not measured: the fix does not apply here";
        rep.criteria.push_back(std::move(cr));
    }
    return rep;
}

Validation::Validation(std::string fix, std::vector<Criterion> criteria, ValidateOptions opts,
                       std::vector<Precondition> preconditions)
    : fix_(std::move(fix)), criteria_(std::move(criteria)), opts_(opts), preconditions_(std::move(preconditions)) {}

std::vector<PreconditionResult> Validation::judge_preconditions() const {
    std::vector<PreconditionResult> out;
    for (auto& p : preconditions_) out.push_back(judge_precondition(p, trials_));
    return out;
}

bool Validation::preconditions_pending() const {
    auto r = judge_preconditions();
    return std::any_of(r.begin(), r.end(), [](auto& p) { return p.state == PreconditionState::kPending; });
}

const PreconditionResult* Validation::failed_precondition(const std::vector<PreconditionResult>& r) const {
    for (auto& p : r)
        if (p.state == PreconditionState::kFailed) return &p;
    return nullptr;
}

int Validation::count(Arm a) const {
    return int(std::count_if(trials_.begin(), trials_.end(), [&](const Trial& t) { return t.arm == a; }));
}

Arm Validation::next_arm() const {
    // No fix trial changes the kernel before the baseline shows something to remove.
    if (preconditions_pending()) return Arm::kBaseline;
    return count(Arm::kBaseline) <= count(Arm::kCandidate) ? Arm::kBaseline : Arm::kCandidate;
}

namespace {

// The quantity the pilot measures the noise of: the workload's operation rate,
// the one number the runner can read inside a trial as well as at its end.
constexpr const char* kRateMetric = "scenario.ops_per_s";

// The first kPilotPairs trials of each arm, in order.
std::vector<const Trial*> pilot_trials(const std::vector<Trial>& trials, Arm arm) {
    std::vector<const Trial*> out;
    for (auto& t : trials)
        if (t.arm == arm && int(out.size()) < kPilotPairs) out.push_back(&t);
    return out;
}

double rate_of(const Trial& t) {
    auto it = t.metrics.find(kRateMetric);
    return it == t.metrics.end() ? std::numeric_limits<double>::quiet_NaN() : it->second;
}

// With one degree of freedom the between-trial variance, a difference of two
// estimates, often comes out at or below 0, which would send every later trial
// to the longest length; this floor (a share of the pilot trials' whole
// variance) caps the length at sqrt(overhead * pilot_s / kBetweenFloor) instead.
// Too short costs little, too long much (docs/validate-design.md).
constexpr double kBetweenFloor = 1.0 / 4;

// Within, between and overhead from the pilot pairs; an error text when the
// pilot did not measure them.  Between: the pairs' log rate ratios vary by
// 2 between^2 + 2 within^2 / pilot_s, so between^2 is half their variance less
// the within part, at least kBetweenFloor of that half (or of the within part).
std::optional<std::string> pilot_noise(const std::vector<const Trial*>& a, const std::vector<const Trial*>& b,
                                       double pilot_s, TrialNoise& n) {
    double within2 = 0, overhead = 0;
    std::vector<double> log_ratios;
    for (std::size_t k = 0; k < a.size(); ++k) {
        for (const Trial* t : {a[k], b[k]}) {
            if (!t->within_noise) return "the pilot read no running operation count";
            within2 += *t->within_noise * *t->within_noise;
            overhead += std::max(0.0, t->wall_s - t->length_s);
        }
        const double ra = rate_of(*a[k]), rb = rate_of(*b[k]);
        if (!(ra > 0) || !(rb > 0)) return std::string("the pilot measured no ") + kRateMetric;
        log_ratios.push_back(std::log(rb / ra));
    }
    const double trials = 2.0 * double(a.size());
    n.within = std::sqrt(within2 / trials);
    n.overhead_s = overhead / trials;
    double mean = 0, ss = 0;
    for (double l : log_ratios) mean += l;
    mean /= double(log_ratios.size());
    for (double l : log_ratios) ss += (l - mean) * (l - mean);
    const double per_trial = ss / double(log_ratios.size() - 1) / 2;
    // The floor also holds when two nearly equal ratios make the sample variance
    // itself about 0: it is then a share of what the within noise alone predicts.
    const double within_part = n.within * n.within / pilot_s;
    n.between = std::sqrt(std::max(per_trial - within_part, kBetweenFloor * std::max(per_trial, within_part)));
    return std::nullopt;
}

std::string choice_reason(const TrialLengthChoice& c) {
    std::string why = fmt::format(
        "within-trial noise {:.1f}%/sqrt(s), between-trial {:.1f}%, overhead {:.2f} s per trial -> "
        "sqrt(overhead) x within / between = {}",
        c.noise.within * 100, c.noise.between * 100, c.noise.overhead_s,
        std::isfinite(c.optimal_s) ? fmt::format("{:.2f} s", c.optimal_s) : std::string("unbounded"));
    if (c.length_s != c.optimal_s) why += fmt::format(", bounded to {:g}..{:g} s", c.min_s, c.max_s);
    return why;
}

}  // namespace

TrialLengthChoice Validation::trial_length() const {
    const TrialLengthOptions& o = opts_.trial_length;
    TrialLengthChoice c;
    c.adapted = o.adapt;
    if (!o.adapt) {
        c.length_s = o.fixed_s;
        c.reason = "fixed";
        return c;
    }
    c.pilot_s = o.pilot_s;
    c.pilot_pairs = kPilotPairs;
    c.min_s = o.min_s;
    c.max_s = o.max_s;
    c.length_s = o.pilot_s;
    auto a = pilot_trials(trials_, Arm::kBaseline), b = pilot_trials(trials_, Arm::kCandidate);
    if (int(a.size()) < kPilotPairs || int(b.size()) < kPilotPairs) {
        c.reason = fmt::format("pilot: {} pairs of {:g} s measure the noise", kPilotPairs, o.pilot_s);
        return c;
    }
    c.pilot_done = true;
    if (auto err = pilot_noise(a, b, o.pilot_s, c.noise)) {
        c.reason = *err + fmt::format("; the trials stay at the pilot's {:g} s", o.pilot_s);
        return c;
    }
    c.optimal_s = !(c.noise.within > 0)  ? 0
                  : c.noise.between > 0 ? std::sqrt(c.noise.overhead_s) * c.noise.within / c.noise.between
                                        : std::numeric_limits<double>::infinity();
    c.length_s = optimal_trial_length(c.noise, o.min_s, o.max_s);
    c.reason = choice_reason(c);
    return c;
}

double Validation::next_trial_length() const {
    const Arm arm = next_arm();
    const int k = count(arm);
    if (opts_.trial_length.adapt && k < kPilotPairs) return opts_.trial_length.pilot_s;
    // A trial whose partner ran first (baselines ahead while a precondition was
    // pending) runs as long as that partner, so both trials of a pair match.
    const Arm other = arm == Arm::kBaseline ? Arm::kCandidate : Arm::kBaseline;
    int seen = 0;
    for (auto& t : trials_)
        if (t.arm == other && seen++ == k && t.length_s > 0) return t.length_s;
    return trial_length().length_s;
}

void Validation::add_trial(Trial t) { trials_.push_back(std::move(t)); }

std::string Validation::stop_reason() const {
    auto pre = judge_preconditions();
    if (auto* f = failed_precondition(pre))
        return fmt::format("the baseline shows nothing for the fix to remove ({})", f->describe());
    int nb = count(Arm::kBaseline), nc = count(Arm::kCandidate);
    if (nb >= opts_.max_each && nc >= opts_.max_each)
        return fmt::format("reached the maximum of {} trials per arm", opts_.max_each);
    if (nb != nc || nb < opts_.min_each) return {};
    VerdictReport r = evaluate(fix_, criteria_, trials_, opts_);
    bool undecided = false, failed = false;
    for (auto& c : r.criteria) {
        if (!c.criterion.required()) continue;
        undecided |= c.verdict == Verdict::kInconclusive;
        failed |= c.verdict == Verdict::kFail;
    }
    if (failed && opts_.stop_on_fail) return "a required criterion failed";
    if (!undecided) return "every criterion is decided";
    return {};
}

bool Validation::finished() const { return !stop_reason().empty(); }

VerdictReport Validation::report() const {
    VerdictReport r = evaluate(fix_, criteria_, trials_, opts_);
    r.trial_length = trial_length();
    r.preconditions = judge_preconditions();
    if (auto* f = failed_precondition(r.preconditions)) {
        r.overall = Verdict::kNotApplicable;
        r.reason = fmt::format("{}: {}", f->describe(), f->precondition.why);
    }
    std::string why = stop_reason();
    if (!why.empty()) r.notes.push_back("stopped: " + why);
    return r;
}

std::string Validation::progress_line() const {
    VerdictReport r = evaluate(fix_, criteria_, trials_, opts_);
    std::string s = fmt::format("{} trials (baseline {}, fix {})", trials_.size(), r.baseline_trials,
                                r.candidate_trials);
    for (auto& p : judge_preconditions())
        if (p.state != PreconditionState::kHeld) s += fmt::format("; precondition {} ({})", to_string(p.state), p.describe());
    for (auto& c : r.criteria) {
        if (!c.criterion.required()) continue;
        std::string name = c.metric.empty() ? (c.criterion.metrics.empty() ? "?" : c.criterion.metrics[0]) : c.metric;
        if (c.ratio)
            s += fmt::format("; {} {} {} {}", name, fmt_ratio(c.ratio->ratio), interval_text(c), to_string(c.verdict));
        else
            s += fmt::format("; {} {}", name, to_string(c.verdict));
    }
    return s;
}

TrialProgress Validation::progress(int trial_no, Arm arm) const {
    VerdictReport r = evaluate(fix_, criteria_, trials_, opts_);
    TrialProgress p;
    p.trial_no = trial_no;
    p.arm = arm;
    p.baseline_trials = r.baseline_trials;
    p.candidate_trials = r.candidate_trials;
    p.min_each = opts_.min_each;
    p.max_each = opts_.max_each;
    for (auto& c : r.criteria)
        if (c.criterion.required())
            p.verdicts.emplace_back(c.metric.empty() ? (c.criterion.metrics.empty() ? "?" : c.criterion.metrics[0]) : c.metric,
                                    c.verdict);
    p.line = fmt::format("trial {} ({}): {}", trial_no, to_string(arm), progress_line());
    return p;
}

}  // namespace hotline
