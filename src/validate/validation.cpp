// Verdicts from per-trial metrics: one criterion at a time, then the overall
// verdict and the adaptive ABAB stopping rule.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "hotline/validate.hpp"

namespace hotline {

std::optional<std::string> check_options(const ValidateOptions& o) {
    if (o.min_each < 1) return "the minimum number of trials per arm must be at least 1";
    if (o.max_each < o.min_each)
        return fmt::format("the maximum trials per arm ({}) is below the minimum ({})", o.max_each, o.min_each);
    if (!(o.confidence > 0.5 && o.confidence < 1))
        return fmt::format("confidence {} is outside (0.5, 1); use e.g. 0.95", o.confidence);
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
    if (std::isinf(r)) return "inf";
    return fmt::format("{:.3g}", r);
}

}  // namespace

CriterionResult evaluate_criterion(const Criterion& c, const std::vector<Trial>& trials,
                                   const ValidateOptions& opts, std::uint64_t seed) {
    CriterionResult r;
    r.criterion = c;
    const Verdict undecided = c.required() ? Verdict::kInconclusive : Verdict::kInfo;
    r.verdict = undecided;
    if (trials.empty()) {
        r.reason = "no trials yet";
        return r;
    }
    Picked p = pick_metric(c, trials);
    if (p.metric.empty()) {
        r.reason = "not measured: " + p.missing;
        return r;
    }
    r.metric = p.metric;
    r.n_baseline = p.a.size();
    r.n_candidate = p.b.size();
    if (p.a.empty() || p.b.empty()) {
        r.reason = p.a.empty() ? "no baseline trial yet" : "no fix trial yet";
        return r;
    }
    r.median_baseline = median(p.a);
    r.median_candidate = median(p.b);
    if (c.exact) {
        if (!constant(p.a) || !constant(p.b)) {
            r.reason = "an exact metric varies within an arm: the trials did not measure the same thing";
            return r;
        }
        RatioCi ci;
        ci.ratio = ci.low = ci.high = safe_ratio(p.b.front(), p.a.front());
        ci.confidence = 1;
        r.ratio = ci;
    } else {
        BootstrapOptions bo;
        bo.iterations = opts.bootstrap_iterations;
        bo.confidence = opts.confidence;
        bo.seed = seed;
        r.ratio = bootstrap_ratio_of_medians(p.a, p.b, bo);
        r.mann_whitney = mann_whitney(p.a, p.b);
        r.hl_ratio = hodges_lehmann_ratio(p.a, p.b);
    }
    const RatioCi& ci = *r.ratio;
    std::string est = c.exact ? fmt::format("ratio {}", fmt_ratio(ci.ratio))
                              : fmt::format("ratio {} ({:.0f}% CI {}..{})", fmt_ratio(ci.ratio),
                                            ci.confidence * 100, fmt_ratio(ci.low), fmt_ratio(ci.high));
    if (r.median_baseline == 0 && r.median_candidate == 0 && c.kind == CriterionKind::kExpect) {
        r.reason = "the metric is 0 in both arms: nothing to improve on, so no judgement";
        return r;
    }
    if (!c.required()) {
        r.reason = est;
        return r;
    }
    if (!c.exact && (int(p.a.size()) < opts.min_each || int(p.b.size()) < opts.min_each)) {
        r.reason = fmt::format("{}; {} trials per arm needed before judging", est, opts.min_each);
        return r;
    }
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
            s += fmt::format("; {} {} [{}, {}] {}", name, fmt_ratio(c.ratio->ratio), fmt_ratio(c.ratio->low),
                             fmt_ratio(c.ratio->high), to_string(c.verdict));
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
