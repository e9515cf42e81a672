// SPDX-License-Identifier: Apache-2.0
// Parses fix definitions from TOML (the embedded catalog and `--fixes DIR`),
// refusing unknown keys, bad values and hostile knob names with file:line.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "hotline/fix/fix.hpp"
#include "hotline/config/toml_reader.hpp"
#include "hotline/base/util.hpp"

namespace hotline {

namespace fs = std::filesystem;

std::string_view to_string(FixMode m) { return m == FixMode::kRuntime ? "runtime" : "kernel-pair"; }

std::string_view to_string(ChangeKind k) {
    switch (k) {
    case ChangeKind::kSysctl: return "sysctl";
    case ChangeKind::kSysfs: return "sysfs";
    case ChangeKind::kIrqAffinity: return "irq_affinity";
    case ChangeKind::kCpuPlacement: return "cpu_placement";
    case ChangeKind::kQueueFiles: return "queues";
    }
    return "?";
}

std::string Check::describe() const {
    std::string s;
    switch (kind) {
    case CheckKind::kKnob: s = "sysctl " + knob; break;
    case CheckKind::kFunction: s = "function " + function; break;
    case CheckKind::kField:
        s = "field " + type + "." + member;
        if (!member_type.empty()) s += " of type " + member_type;
        break;
    case CheckKind::kNumaNodes: return fmt::format("at least {} NUMA nodes", min_nodes);
    }
    return s + (present ? " exists" : " is absent");
}

std::string Change::describe() const {
    switch (kind) {
    case ChangeKind::kSysctl: return fmt::format("sysctl {}={} ({})", knob, value, to_string(scope));
    case ChangeKind::kSysfs: return fmt::format("sysfs {}={} ({})", knob, value, to_string(scope));
    case ChangeKind::kIrqAffinity:
        return fmt::format("IRQ affinity of the scenario's devices: {} ({}{})", value, to_string(scope),
                           optional ? ", where any" : "");
    case ChangeKind::kCpuPlacement: return fmt::format("CPU placement of the workload: {}", value);
    case ChangeKind::kQueueFiles:
        return fmt::format("{} of every network device's {} queues={} ({})", knob.substr(3), knob.substr(0, 2),
                           value == kNodeCpusValue ? "the CPUs of the device's NUMA node" : value, to_string(scope));
    }
    return "?";
}

namespace {

// Every error is recorded in `errs` (the one list the caller reports); the
// Error a parse step returns only stops that step.  A table with an error is
// left out and the next one is read, so one run reports an error per table.
class Parser {
public:
    explicit Parser(TomlErrors& errs) : errs_(errs) {}

    std::vector<FixDef> run(const TomlValue& doc);

private:
    TomlErrors& errs_;

    std::string where(const TomlValue& t) const { return errs_.where(t.line); }
    Error err(const TomlValue& n, const std::string& msg, const std::string& hint = {}) const {
        errs_.add(n.line, msg, hint);
        return make_error(msg, EINVAL);
    }

    // Unknown keys are typos more often than not: refuse them, naming the valid ones.
    Status only_keys(const TomlValue& t, std::initializer_list<std::string_view> allowed,
                     const std::string& what) const {
        if (errs_.only_keys(t, allowed, what)) return ok_status();
        return make_error("unknown keys in " + what, EINVAL);
    }

    Result<std::string> get_string(const TomlValue& t, std::string_view key, bool required,
                                   const std::string& what) const {
        const TomlValue* n = t.get(key);
        if (!n) {
            if (required) return err(t, fmt::format("{} needs \"{}\"", what, key));
            return std::string();
        }
        if (auto s = errs_.string(*n, fmt::format("\"{}\" in {}", key, what))) return *s;
        return make_error("not a string", EINVAL);
    }

    Result<bool> get_bool(const TomlValue& t, std::string_view key, bool def, const std::string& what) const {
        const TomlValue* n = t.get(key);
        if (!n) return def;
        if (auto b = errs_.boolean(*n, fmt::format("\"{}\" in {}", key, what))) return *b;
        return make_error("not a boolean", EINVAL);
    }

    static std::optional<std::string> string_of(const TomlValue& n) {
        if (n.kind == TomlValue::Kind::kString) return n.string;
        return std::nullopt;
    }

    Result<double> get_percent(const TomlValue& n, std::string_view key, const std::string& what) const {
        auto s = string_of(n);
        std::string hint = "write a percentage such as \"50%\"";
        if (!s || s->empty() || s->back() != '%')
            return err(n, fmt::format("\"{}\" in {} must be a percentage string", key, what), hint);
        std::string num = s->substr(0, s->size() - 1);
        char* end = nullptr;
        double v = std::strtod(num.c_str(), &end);
        if (num.empty() || *end || !std::isfinite(v) || v < 0 || v > 1000)
            return err(n, fmt::format("\"{}\" in {} is not a percentage: \"{}\"", key, what, *s), hint);
        return v / 100;
    }

    Result<std::vector<std::string>> get_metrics(const TomlValue& t, const std::string& what) const {
        const TomlValue* n = t.get("metric");
        if (!n) return err(t, what + " needs \"metric\"", "e.g. metric = \"scenario.ops_per_s\"");
        std::vector<std::string> out;
        if (auto s = string_of(*n)) {
            out.push_back(*s);
        } else if (n->is_array()) {
            for (auto& e : n->items) {
                auto s2 = string_of(e);
                if (!s2) return err(e, "\"metric\" alternatives must be strings");
                out.push_back(*s2);
            }
        } else {
            return err(*n, "\"metric\" must be a string or an array of strings");
        }
        if (out.empty()) return err(*n, "\"metric\" names no metric");
        for (auto& m : out) {
            bool ok = !m.empty() && m.find('.') != std::string::npos;
            for (char c : m)
                ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-' ||
                            c == '@' || c == ':');
            if (!ok)
                return err(*n, fmt::format("bad metric name \"{}\"", m),
                           "metric names are dotted words such as handoff.dst_release.cross_node_per_op");
        }
        return out;
    }

    Result<Check> parse_check(const TomlValue& t, const std::string& what) const;
    Result<Change> parse_change(const TomlValue& t) const;
    Result<Criterion> parse_criterion(const TomlValue& t, CriterionKind kind) const;
    Result<Precondition> parse_precondition(const TomlValue& t) const;
    Result<FixDef> parse_fix(const TomlValue& t) const;
    Status parse_fix_header(const TomlValue& t, FixDef& f) const;
    Status parse_kernel_pair(const TomlValue& t, FixDef& f) const;
    Result<Reference> parse_reference(const TomlValue& r) const;
    void parse_fix_tables(const TomlValue& t, FixDef& f) const;
    Status check_fix_rules(const TomlValue& t, const FixDef& f) const;

    // Reads every [[fix.KEY]] table, the ones after an error too.
    template <class F>
    Status each_table(const TomlValue& fix, std::string_view key, F&& f) const {
        const TomlValue* n = fix.get(key);
        if (!n) return ok_status();
        if (!n->is_array_of_tables())
            return err(*n, fmt::format("\"{}\" must be written as [[fix.{}]] tables", key, key));
        Status all = ok_status();
        for (auto& e : n->items)
            if (auto st = f(e); !st) all = st;
        return all;
    }
};

Result<Check> Parser::parse_check(const TomlValue& t, const std::string& what) const {
    if (auto st = only_keys(t, {"knob", "function", "field", "member_type", "numa_nodes", "present", "why"}, what); !st)
        return st.error();
    Check c;
    c.source = where(t);
    int kinds = 0;
    if (t.contains("knob")) {
        ++kinds;
        c.kind = CheckKind::kKnob;
        auto k = get_string(t, "knob", true, what);
        if (!k) return k.error();
        if (auto rp = knob_relpath(KnobKind::kSysctl, *k); !rp) return err(*t.get("knob"), rp.error().what, rp.error().hint);
        c.knob = knob_display(KnobKind::kSysctl, *k);
    }
    if (t.contains("function")) {
        ++kinds;
        c.kind = CheckKind::kFunction;
        auto f = get_string(t, "function", true, what);
        if (!f) return f.error();
        c.function = *f;
    }
    if (t.contains("field")) {
        ++kinds;
        c.kind = CheckKind::kField;
        auto f = get_string(t, "field", true, what);
        if (!f) return f.error();
        auto dot = f->find('.');
        if (dot == std::string::npos || dot == 0 || dot + 1 == f->size() || f->find('.', dot + 1) != std::string::npos)
            return err(*t.get("field"), fmt::format("field \"{}\" must be STRUCT.MEMBER", *f), "e.g. dst_entry.__rcuref");
        c.type = f->substr(0, dot);
        c.member = f->substr(dot + 1);
        auto mt = get_string(t, "member_type", false, what);
        if (!mt) return mt.error();
        c.member_type = *mt;
    } else if (t.contains("member_type")) {
        return err(*t.get("member_type"), "\"member_type\" only goes with \"field\"");
    }
    if (t.contains("numa_nodes")) {
        ++kinds;
        c.kind = CheckKind::kNumaNodes;
        const TomlValue& v = *t.get("numa_nodes");
        if (v.kind != TomlValue::Kind::kInteger || v.integer < 1 || v.integer > 1024)
            return err(*t.get("numa_nodes"), "\"numa_nodes\" must be a node count such as 2");
        c.min_nodes = int(v.integer);
    }
    if (kinds != 1)
        return err(t, what + " needs exactly one of knob, function, field, numa_nodes");
    auto p = get_bool(t, "present", true, what);
    if (!p) return p.error();
    c.present = *p;
    auto why = get_string(t, "why", false, what);
    if (!why) return why.error();
    c.why = why->empty() ? "needs " + c.describe() : *why;
    return c;
}

Result<Change> Parser::parse_change(const TomlValue& t) const {
    const std::string what = "[[fix.change]]";
    if (auto st = only_keys(t, {"sysctl", "sysfs", "irq_affinity", "cpu_placement", "queues", "value", "scope",
                                "optional", "note"},
                            what);
        !st)
        return st.error();
    Change c;
    c.source = where(t);
    int kinds = 0;
    for (auto [key, kind] : {std::pair{"sysctl", ChangeKind::kSysctl}, std::pair{"sysfs", ChangeKind::kSysfs},
                             std::pair{"irq_affinity", ChangeKind::kIrqAffinity},
                             std::pair{"cpu_placement", ChangeKind::kCpuPlacement},
                             std::pair{"queues", ChangeKind::kQueueFiles}}) {
        if (!t.contains(key)) continue;
        ++kinds;
        c.kind = kind;
        auto v = get_string(t, key, true, what);
        if (!v) return v.error();
        if (kind == ChangeKind::kSysctl || kind == ChangeKind::kSysfs) {
            KnobKind kk = kind == ChangeKind::kSysctl ? KnobKind::kSysctl : KnobKind::kSysfs;
            if (auto rp = knob_relpath(kk, *v); !rp) return err(*t.get(key), rp.error().what, rp.error().hint);
            c.knob = knob_display(kk, *v);
        } else if (kind == ChangeKind::kQueueFiles) {
            if (auto st = check_queue_file(*v); !st) return err(*t.get(key), st.error().what, st.error().hint);
            c.knob = *v;
        } else {
            bool placement = kind == ChangeKind::kCpuPlacement && (*v == "cpu-local" || *v == "cpu-set");
            if (*v != "one-node" && !placement)
                return err(*t.get(key), fmt::format("{} = \"{}\" is not supported", key, *v),
                           kind == ChangeKind::kCpuPlacement
                               ? "cpu_placement is \"one-node\", \"cpu-local\" or \"cpu-set\""
                               : "the only IRQ affinity is \"one-node\"");
            c.value = *v;
        }
    }
    if (kinds != 1) return err(t, what + " needs exactly one of sysctl, sysfs, irq_affinity, cpu_placement, queues");
    if (c.kind == ChangeKind::kSysctl || c.kind == ChangeKind::kSysfs || c.kind == ChangeKind::kQueueFiles) {
        const TomlValue* v = t.get("value");
        if (!v) return err(t, what + " needs \"value\"", "the value to write, e.g. value = \"0\"");
        if (auto s = string_of(*v)) c.value = *s;
        else if (v->kind == TomlValue::Kind::kInteger) c.value = std::to_string(v->integer);
        else return err(*v, "\"value\" must be a string or an integer");
        for (char ch : c.value)
            if (std::iscntrl(static_cast<unsigned char>(ch)) && ch != '\t')
                return err(*v, "\"value\" must not contain control characters or newlines");
        if (normalize_value(c.value).empty()) return err(*v, "\"value\" is empty");
    } else if (t.contains("value")) {
        return err(*t.get("value"), fmt::format("\"value\" does not go with {}", to_string(c.kind)));
    }
    const TomlValue* s = t.get("scope");
    if (!s) return err(t, what + " needs \"scope\"", "scope = \"netns\" (the scenario's namespaces only) or \"global\"");
    auto sv = string_of(*s);
    if (!sv || (*sv != "netns" && *sv != "global"))
        return err(*s, "\"scope\" must be \"netns\" or \"global\"");
    c.scope = *sv == "netns" ? Scope::kNetns : Scope::kGlobal;
    if ((c.kind == ChangeKind::kIrqAffinity || c.kind == ChangeKind::kQueueFiles) && c.scope != Scope::kGlobal)
        return err(*s, fmt::format("{} is machine-wide: its scope must be \"global\"", to_string(c.kind)));
    auto o = get_bool(t, "optional", false, what);
    if (!o) return o.error();
    c.optional = *o;
    auto note = get_string(t, "note", false, what);
    if (!note) return note.error();
    c.note = *note;
    return c;
}

Result<Criterion> Parser::parse_criterion(const TomlValue& t, CriterionKind kind) const {
    std::string what = fmt::format("[[fix.{}]]", to_string(kind));
    Criterion c;
    c.kind = kind;
    c.source = where(t);
    Status keys = kind == CriterionKind::kExpect    ? only_keys(t, {"metric", "down", "up", "exact", "note"}, what)
                  : kind == CriterionKind::kGuardrail ? only_keys(t, {"metric", "better", "max_worse", "note"}, what)
                                                      : only_keys(t, {"metric", "better", "note"}, what);
    if (!keys) return keys.error();
    auto m = get_metrics(t, what);
    if (!m) return m.error();
    c.metrics = std::move(*m);
    if (kind == CriterionKind::kExpect) {
        const TomlValue* down = t.get("down");
        const TomlValue* up = t.get("up");
        if (!!down == !!up) return err(t, what + " needs exactly one of \"down\" or \"up\"", "e.g. down = \"50%\"");
        auto p = get_percent(down ? *down : *up, down ? "down" : "up", what);
        if (!p) return p.error();
        if (down && *p > 1) return err(*down, "a metric cannot go down by more than 100%");
        if (*p <= 0) return err(down ? *down : *up, "an expected change must be above 0%");
        c.better = down ? Better::kLower : Better::kHigher;
        c.change = *p;
        auto ex = get_bool(t, "exact", false, what);
        if (!ex) return ex.error();
        c.exact = *ex;
    } else {
        const TomlValue* b = t.get("better");
        if (!b) {
            if (kind == CriterionKind::kGuardrail)
                return err(t, what + " needs \"better\"", "better = \"higher\" (e.g. throughput) or \"lower\" (e.g. CPU per operation)");
            c.better = Better::kLower;
        } else {
            auto bs = string_of(*b);
            if (!bs || (*bs != "higher" && *bs != "lower"))
                return err(*b, "\"better\" must be \"higher\" or \"lower\"");
            c.better = *bs == "higher" ? Better::kHigher : Better::kLower;
        }
        if (kind == CriterionKind::kGuardrail) {
            const TomlValue* w = t.get("max_worse");
            if (!w) return err(t, what + " needs \"max_worse\"", "e.g. max_worse = \"5%\"");
            auto p = get_percent(*w, "max_worse", what);
            if (!p) return p.error();
            if (c.better == Better::kHigher && *p >= 1)
                return err(*w, "a higher-is-better metric cannot get worse by 100% or more");
            c.change = *p;
        }
    }
    auto note = get_string(t, "note", false, what);
    if (!note) return note.error();
    c.note = *note;
    return c;
}

Result<Precondition> Parser::parse_precondition(const TomlValue& t) const {
    const std::string what = "[[fix.precondition]]";
    if (auto k = only_keys(t, {"metric", "at_least", "why"}, what); !k) return k.error();
    Precondition p;
    p.source = where(t);
    auto m = get_metrics(t, what);
    if (!m) return m.error();
    p.metrics = std::move(*m);
    const TomlValue* floor = t.get("at_least");
    if (!floor) return err(t, what + " needs \"at_least\"", "the baseline's floor, e.g. at_least = 0.1");
    if (floor->kind == TomlValue::Kind::kFloat) p.at_least = floor->floating;
    else if (floor->kind == TomlValue::Kind::kInteger) p.at_least = double(floor->integer);
    else return err(*floor, "\"at_least\" must be a number", "e.g. at_least = 0.1");
    if (!std::isfinite(p.at_least) || p.at_least <= 0)
        return err(*floor, "\"at_least\" must be above 0: a floor of 0 is always reached");
    auto why = get_string(t, "why", true, what);
    if (!why) return why.error();
    p.why = *why;
    return p;
}

Status Parser::parse_fix_header(const TomlValue& t, FixDef& f) const {
    const std::string what = "[[fix]]";
    auto name = get_string(t, "name", true, what);
    if (!name) return name.error();
    bool name_ok = !name->empty() && name->size() <= 64 && std::isalnum(static_cast<unsigned char>((*name)[0]));
    for (char c : *name) name_ok = name_ok && (std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '-');
    if (!name_ok)
        return err(*t.get("name"), fmt::format("bad fix name \"{}\"", *name),
                   "use lower-case letters, digits and dashes, e.g. early-demux-off");
    f.name = *name;
    std::string in = fmt::format("fix \"{}\"", f.name);
    auto mode = get_string(t, "mode", true, in);
    if (!mode) return mode.error();
    if (*mode == "runtime") f.mode = FixMode::kRuntime;
    else if (*mode == "kernel-pair") f.mode = FixMode::kKernelPair;
    else return err(*t.get("mode"), fmt::format("mode \"{}\" is not runtime or kernel-pair", *mode));
    auto summary = get_string(t, "summary", true, in);
    if (!summary) return summary.error();
    f.summary = *summary;
    auto desc = get_string(t, "description", false, in);
    if (!desc) return desc.error();
    f.description = *desc;
    while (!f.description.empty() && f.description.back() == '\n') f.description.pop_back();
    if (const TomlValue* s = t.get("scenarios")) {
        if (!s->is_array()) return err(*s, "\"scenarios\" must be an array of scenario names");
        for (auto& e : s->items) {
            auto v = string_of(e);
            if (!v || v->empty()) return err(e, "scenario names must be non-empty strings");
            f.scenarios.push_back(*v);
        }
    }
    return ok_status();
}

// baseline_kernel, fixed_kernel, baseline_range, fixed_range: kernel-pair fixes only.
Status Parser::parse_kernel_pair(const TomlValue& t, FixDef& f) const {
    const std::string in = fmt::format("fix \"{}\"", f.name);
    bool any = false;
    for (auto [key, dest] : {std::pair{"baseline_kernel", &f.kernels.baseline}, std::pair{"fixed_kernel", &f.kernels.fixed},
                             std::pair{"baseline_range", &f.kernels.baseline_range},
                             std::pair{"fixed_range", &f.kernels.fixed_range}}) {
        auto v = get_string(t, key, false, in);
        if (!v) return v.error();
        *dest = *v;
        any = any || !v->empty();
    }
    if (any && f.mode != FixMode::kKernelPair)
        return err(t, in + ": baseline_kernel, fixed_kernel and the ranges only go with kernel-pair fixes");
    return ok_status();
}

Result<Reference> Parser::parse_reference(const TomlValue& r) const {
    const std::string what = "[[fix.reference]]";
    if (auto k = only_keys(r, {"commit", "title", "role"}, what); !k) return k.error();
    Reference ref;
    auto c = get_string(r, "commit", true, what);
    if (!c) return c.error();
    bool hex = c->size() >= 7 && c->size() <= 40 &&
               std::all_of(c->begin(), c->end(), [](char ch) { return std::isxdigit(static_cast<unsigned char>(ch)); });
    if (!hex) return err(*r.get("commit"), fmt::format("commit \"{}\" is not an abbreviated commit id", *c));
    ref.commit = *c;
    auto title = get_string(r, "title", false, what);
    if (!title) return title.error();
    ref.title = *title;
    auto role = get_string(r, "role", false, what);
    if (!role) return role.error();
    ref.role = role->empty() ? "related" : *role;
    if (ref.role != "fix" && ref.role != "culprit" && ref.role != "related")
        return err(*r.get("role"), "\"role\" must be fix, culprit or related");
    return ref;
}

// Reads every sub-table, the ones after an error too.
void Parser::parse_fix_tables(const TomlValue& t, FixDef& f) const {
    auto into = [](auto& dest, auto parsed) -> Status {
        if (!parsed) return parsed.error();
        dest.push_back(std::move(*parsed));
        return ok_status();
    };
    (void)each_table(t, "reference", [&](const TomlValue& r) { return into(f.references, parse_reference(r)); });
    for (auto [key, dest] : {std::pair{"check", &f.checks}, std::pair{"fixed_when", &f.fixed_when}}) {
        std::string what = fmt::format("[[fix.{}]]", key);
        (void)each_table(t, key, [&, dest = dest](const TomlValue& c) { return into(*dest, parse_check(c, what)); });
    }
    (void)each_table(t, "change", [&](const TomlValue& c) { return into(f.changes, parse_change(c)); });
    (void)each_table(t, "precondition", [&](const TomlValue& c) { return into(f.preconditions, parse_precondition(c)); });
    for (auto [key, kind] : {std::pair{"expect", CriterionKind::kExpect}, std::pair{"guardrail", CriterionKind::kGuardrail},
                             std::pair{"report", CriterionKind::kReport}})
        (void)each_table(t, key, [&, kind = kind](const TomlValue& c) { return into(f.criteria, parse_criterion(c, kind)); });
}

// The rules between a fix's tables: checked once every table has been read.
Status Parser::check_fix_rules(const TomlValue& t, const FixDef& f) const {
    std::string in = fmt::format("fix \"{}\"", f.name);
    bool has_expect = std::any_of(f.criteria.begin(), f.criteria.end(),
                                  [](const Criterion& c) { return c.kind == CriterionKind::kExpect; });
    if (!has_expect)
        return err(t, in + " has no [[fix.expect]]", "a fix must say which metric it is expected to move");
    if (f.mode == FixMode::kRuntime && f.changes.empty())
        return err(t, in + " is a runtime fix without any [[fix.change]]");
    if (f.mode == FixMode::kKernelPair && !f.changes.empty())
        return err(t, in + " is a kernel-pair fix: it cannot have [[fix.change]] tables");
    if (f.mode == FixMode::kRuntime && !f.fixed_when.empty())
        return err(t, in + ": [[fix.fixed_when]] only goes with kernel-pair fixes");
    if (f.mode == FixMode::kKernelPair && !f.preconditions.empty())
        return err(t, in + ": [[fix.precondition]] judges baseline trials, which only runtime fixes have");
    return ok_status();
}

Result<FixDef> Parser::parse_fix(const TomlValue& t) const {
    if (auto st = only_keys(t, {"name", "mode", "summary", "description", "scenarios", "reference", "check",
                                "fixed_when", "change", "precondition", "expect", "guardrail", "report",
                                "baseline_kernel", "fixed_kernel", "baseline_range", "fixed_range"},
                            "[[fix]]");
        !st)
        return st.error();
    const std::size_t errors_before = errs_.count();
    FixDef f;
    f.source = where(t);
    Status header = parse_fix_header(t, f);
    if (header) header = parse_kernel_pair(t, f);
    parse_fix_tables(t, f);
    if (!header) return header.error();
    if (errs_.count() != errors_before) return make_error("errors in " + f.source, EINVAL);
    if (auto st = check_fix_rules(t, f); !st) return st.error();
    return f;
}

std::vector<FixDef> Parser::run(const TomlValue& doc) {
    std::vector<FixDef> out;
    for (const auto& m : doc.members)
        // [[rule]] tables are finding rules, read by the diagnosis layer from the same files.
        if (m.key != "fix" && m.key != "rule")
            errs_.add(m.line, fmt::format("unknown top-level key \"{}\"", m.key),
                      "fixes are [[fix]] tables, finding rules [[rule]] tables");
    const TomlValue* fixes = doc.get("fix");
    if (!fixes) return out;
    if (!fixes->is_array_of_tables()) {
        (void)err(*fixes, "fixes must be written as [[fix]] tables");
        return out;
    }
    for (auto& e : fixes->items) {
        auto f = parse_fix(e);
        if (!f) continue;
        auto dup = std::find_if(out.begin(), out.end(), [&](const FixDef& d) { return d.name == f->name; });
        if (dup != out.end())
            (void)err(e, fmt::format("fix \"{}\" is defined twice (first at {})", f->name, dup->source),
                      "give each fix a unique name");
        else
            out.push_back(std::move(*f));
    }
    return out;
}

}  // namespace

}  // namespace hotline

namespace hotline {

Result<FixCatalog> FixCatalog::parse(std::string_view text, const std::string& source) {
    auto doc = parse_toml(text, source);
    if (!doc) return doc.error();
    TomlErrors errs(source);
    std::vector<FixDef> defs = Parser(errs).run(*doc);
    if (!errs.ok()) return errs.error();
    FixCatalog cat;
    cat.fixes_ = std::move(defs);
    return cat;
}

Result<FixCatalog> FixCatalog::builtin() { return parse(builtin_catalog_text(), "builtin"); }

Status FixCatalog::merge(FixCatalog other) {
    for (auto& f : other.fixes_)
        if (auto* dup = find(f.name))
            return make_error(fmt::format("{}: fix \"{}\" already exists (defined at {})", f.source, f.name, dup->source),
                              EEXIST, "rename it: extra fixes cannot replace existing ones");
    for (auto& f : other.fixes_) fixes_.push_back(std::move(f));
    return ok_status();
}

Status FixCatalog::add_dir(const std::string& dir) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
        return make_error("--fixes " + dir + ": not a directory", ec ? ec.value() : ENOTDIR,
                          "give a directory holding *.toml fix files");
    std::vector<fs::path> files;
    for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
        if (it->path().extension() == ".toml") files.push_back(it->path());  // read_file refuses what is not a regular file
    if (ec) return make_error("--fixes " + dir + ": cannot list", ec.value());
    std::sort(files.begin(), files.end());
    for (auto& p : files) {
        auto text = read_file(p.string());
        if (!text) return text.error();
        auto cat = parse(*text, p.string());
        if (!cat) return cat.error();
        if (auto st = merge(std::move(*cat)); !st) return st;
    }
    return ok_status();
}

const FixDef* FixCatalog::find(std::string_view name) const {
    for (auto& f : fixes_)
        if (f.name == name) return &f;
    return nullptr;
}

std::string FixCatalog::names() const {
    std::string s;
    for (auto& f : fixes_) s += (s.empty() ? "" : ", ") + f.name;
    return s;
}

Result<FixCatalog> load_catalog(const std::string& extra_dir) {
    auto cat = FixCatalog::builtin();
    if (!cat) return cat.error();
    if (!extra_dir.empty())
        if (auto st = cat->add_dir(extra_dir); !st) return st.error();
    return cat;
}

}  // namespace hotline
