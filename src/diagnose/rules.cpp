// SPDX-License-Identifier: Apache-2.0
// The finding rules: [[rule]] tables read with the strict TOML reader, every
// error as FILE:LINE, metric names checked against the model's table of names.
#include <fmt/format.h>

#include <cmath>

#include <algorithm>
#include <filesystem>

#include "hotline/diagnose/diagnose.hpp"
#include "hotline/model/recording_metrics.hpp"
#include "hotline/targets/targets.hpp"
#include "hotline/config/toml_reader.hpp"
#include "hotline/base/util.hpp"

namespace hotline {

namespace fs = std::filesystem;

namespace {

bool is_target(std::string_view name) { return find_target(name) != nullptr; }

std::optional<double> number(TomlErrors& errs, const TomlValue& v, std::string_view name) {
    if (v.kind == TomlValue::Kind::kFloat) {
        if (std::isfinite(v.floating)) return v.floating;
        errs.add(v.line, fmt::format("{} must be a finite number, not {}", name, v.floating),
                 "a threshold of nan or inf can never be met, or always is");
        return std::nullopt;
    }
    if (v.kind == TomlValue::Kind::kInteger) return double(v.integer);
    errs.add(v.line, fmt::format("{} must be a number", name));
    return std::nullopt;
}

std::optional<Severity> severity(TomlErrors& errs, const TomlValue& v) {
    auto s = errs.string(v, "\"severity\"");
    if (!s) return std::nullopt;
    if (*s == "high") return Severity::kHigh;
    if (*s == "medium") return Severity::kMedium;
    if (*s == "low") return Severity::kLow;
    errs.add(v.line, fmt::format("unknown severity \"{}\"", *s), "use high, medium or low");
    return std::nullopt;
}

// A metric name must have one of the forms the recording produces, and a target
// it names must be a watched function.
void check_metric(TomlErrors& errs, const TomlValue& v, const std::string& name) {
    if (match_metric_name(name, is_target)) return;
    if (match_metric_name(name))
        errs.add(v.line, fmt::format("metric \"{}\" names no watched function", name),
                 "watched functions: " + builtin_target_names());
    else
        errs.add(v.line, fmt::format("unknown metric \"{}\"", name),
                 "metric names are the forms of docs/validate-design.md, e.g. handoff.dst_release.cross_node_share");
}

std::optional<RuleCondition> parse_condition(TomlErrors& errs, const TomlValue& t) {
    if (!errs.only_keys(t, {"metric", "above", "below", "equals"}, "[[rule.when]]")) return std::nullopt;
    RuleCondition c;
    c.line = t.line;
    const TomlValue* m = t.get("metric");
    if (!m) {
        errs.add(t.line, "[[rule.when]] needs \"metric\"", "e.g. metric = \"handoff.dst_release.cross_node_share\"");
        return std::nullopt;
    }
    auto name = errs.string(*m, "\"metric\"");
    if (!name) return std::nullopt;
    c.metric = *name;
    check_metric(errs, *m, c.metric);
    int ops = 0;
    for (auto [key, op] : {std::pair{"above", ConditionOp::kAbove}, std::pair{"below", ConditionOp::kBelow},
                           std::pair{"equals", ConditionOp::kEquals}})
        if (const TomlValue* v = t.get(key)) {
            ++ops;
            c.op = op;
            if (auto x = number(errs, *v, fmt::format("\"{}\"", key))) c.threshold = *x;
        }
    if (ops != 1) {
        errs.add(t.line, "[[rule.when]] needs exactly one of \"above\", \"below\", \"equals\"");
        return std::nullopt;
    }
    return c;
}

void parse_fixes(TomlErrors& errs, const TomlValue& v, const FixCatalog& cat, RuleDef& r) {
    if (!v.is_array()) {
        errs.add(v.line, "\"fixes\" must be an array of fix names", "e.g. fixes = [\"numa-local\"]");
        return;
    }
    for (auto& item : v.items) {
        auto name = errs.string(item, "a fix name");
        if (!name) continue;
        if (!cat.find(*name)) {
            errs.add(item.line, fmt::format("unknown fix \"{}\"", *name), "catalog fixes: " + cat.names());
            continue;
        }
        r.fixes.push_back(*name);
    }
}

void parse_texts(TomlErrors& errs, const TomlValue& t, RuleDef& r) {
    for (auto [key, into] : {std::pair{"name", &r.name}, std::pair{"summary", &r.summary},
                             std::pair{"meaning", &r.meaning}}) {
        const TomlValue* v = t.get(key);
        if (!v) {
            errs.add(t.line, fmt::format("[[rule]] needs \"{}\"", key));
            continue;
        }
        if (auto s = errs.string(*v, fmt::format("\"{}\"", key))) {
            *into = trim(*s);
            std::replace(into->begin(), into->end(), '\n', ' ');  // TOML multi-line text is one paragraph
        }
    }
    if (const TomlValue* v = t.get("scenario"))
        if (auto s = errs.string(*v, "\"scenario\"")) r.scenario = *s;
}

std::optional<RuleDef> parse_rule(TomlErrors& errs, const TomlValue& t, const FixCatalog& cat) {
    const std::size_t before = errs.count();
    errs.only_keys(t, {"name", "severity", "summary", "meaning", "fixes", "scenario", "when"}, "[[rule]]");
    RuleDef r;
    r.source = errs.where(t.line);
    parse_texts(errs, t, r);
    if (const TomlValue* v = t.get("severity"))
        if (auto s = severity(errs, *v)) r.severity = *s;
    if (const TomlValue* v = t.get("fixes")) parse_fixes(errs, *v, cat, r);
    const TomlValue* when = t.get("when");
    if (!when || !when->is_array_of_tables())
        errs.add(when ? when->line : t.line, "[[rule]] needs [[rule.when]] conditions",
                 "a rule is a condition on recording metrics");
    else
        for (auto& c : when->items)
            if (auto cond = parse_condition(errs, c)) r.when.push_back(std::move(*cond));
    if (errs.count() != before) return std::nullopt;
    return r;
}

}  // namespace

Result<RuleSet> RuleSet::parse(std::string_view text, const std::string& source, const FixCatalog& cat) {
    auto doc = parse_toml(text, source);
    if (!doc) return doc.error();
    TomlErrors errs(source);
    RuleSet set;
    const TomlValue* rules = doc->get("rule");
    if (rules && !rules->is_array_of_tables()) errs.add(rules->line, "rules must be written as [[rule]] tables");
    for (auto& t : rules && rules->is_array_of_tables() ? rules->items : std::vector<TomlValue>{}) {
        auto r = parse_rule(errs, t, cat);
        if (!r) continue;
        if (const RuleDef* dup = set.find(r->name))
            errs.add(t.line, fmt::format("rule \"{}\" is defined twice (first at {})", r->name, dup->source));
        else
            set.rules_.push_back(std::move(*r));
    }
    if (!errs.ok()) return errs.error();
    return set;
}

const RuleDef* RuleSet::find(std::string_view name) const {
    auto it = std::find_if(rules_.begin(), rules_.end(), [&](const RuleDef& r) { return r.name == name; });
    return it == rules_.end() ? nullptr : &*it;
}

Status RuleSet::merge(RuleSet other) {
    for (auto& r : other.rules_) {
        if (const RuleDef* dup = find(r.name))
            return make_error(fmt::format("{}: rule \"{}\" is already defined at {}", r.source, r.name, dup->source),
                              EINVAL, "give the rule another name");
        rules_.push_back(std::move(r));
    }
    return ok_status();
}

Status RuleSet::add_dir(const std::string& dir, const FixCatalog& cat) {
    std::error_code ec;
    std::vector<fs::path> files;
    for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
        if (it->path().extension() == ".toml") files.push_back(it->path());  // read_file refuses what is not a regular file
    if (ec) return make_error("--fixes " + dir + ": cannot list", ec.value(), "give a directory of *.toml files");
    std::sort(files.begin(), files.end());
    for (auto& p : files) {
        auto text = read_file(p.string());
        if (!text) return text.error();
        auto set = parse(*text, p.string(), cat);
        if (!set) return set.error();
        if (auto st = merge(std::move(*set)); !st) return st;
    }
    return ok_status();
}

std::string_view builtin_rules_text() {
    static const char kText[] =
#include "builtin_rules.toml.inc"
        ;
    return kText;
}

Result<RuleSet> RuleSet::builtin(const FixCatalog& cat) { return parse(builtin_rules_text(), "builtin", cat); }

Result<RuleSet> load_rules(const FixCatalog& cat, const std::string& extra_dir) {
    auto set = RuleSet::builtin(cat);
    if (!set) return set.error();
    if (!extra_dir.empty())
        if (auto st = set->add_dir(extra_dir, cat); !st) return st.error();
    return set;
}

std::vector<std::string> rule_knobs(const RuleSet& rules) {
    std::vector<std::string> out;
    for (auto& r : rules.rules())
        for (auto& c : r.when)
            if (auto m = match_metric_name(c.metric); m && m->part == MetricPart::kSysctl &&
                                                       std::find(out.begin(), out.end(), m->subject) == out.end())
                out.push_back(m->subject);
    return out;
}

}  // namespace hotline
