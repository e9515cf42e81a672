// SPDX-License-Identifier: Apache-2.0
// Diagnosis: the built-in rules load and each fires on its evidence and only
// then; rule files fail with FILE:LINE; and recordings from the guests and this
// host prescribe what they should (tests/fixtures/diagnose/README.md says how
// they were made).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "hotline/diagnose/diagnose.hpp"
#include "hotline/report/finding_output.hpp"
#include "hotline/base/util.hpp"

using namespace hotline;

namespace {

const FixCatalog& catalog() {
    static const FixCatalog cat = [] {
        auto c = FixCatalog::builtin();
        EXPECT_TRUE(c) << c.error().message();
        return *c;
    }();
    return cat;
}

std::string parse_error(const std::string& toml) {
    auto r = RuleSet::parse(toml, "rules.toml", catalog());
    return r ? std::string("(parsed)") : r.error().message();
}

// A value that makes the condition hold, or fail.
double satisfying(const RuleCondition& c, bool hold) {
    switch (c.op) {
    case ConditionOp::kAbove: return hold ? c.threshold * 2 + 1 : c.threshold / 2;
    case ConditionOp::kBelow: return hold ? c.threshold / 2 : c.threshold * 2 + 1;
    case ConditionOp::kEquals: return hold ? c.threshold : c.threshold + 1;
    }
    return 0;
}

DiagnoseInput input_for(const RuleDef& r, bool hold_all) {
    DiagnoseInput in;
    for (std::size_t i = 0; i < r.when.size(); ++i)
        in.metrics[r.when[i].metric] = satisfying(r.when[i], hold_all || i + 1 < r.when.size());
    return in;
}

std::set<std::string> prescribed(const Diagnosis& d) {
    std::set<std::string> out;
    for (auto& f : d.findings)
        for (auto& a : f.fixes)
            if (a.prescribed()) out.insert(a.fix);
    return out;
}

Diagnosis diagnose_fixture(const std::string& file) {
    auto text = read_file(std::string(HOTLINE_FIXTURES) + "/diagnose/" + file);
    EXPECT_TRUE(text) << file;
    auto rules = RuleSet::builtin(catalog());
    EXPECT_TRUE(rules);
    auto in = input_from_recording(nlohmann::json::parse(*text), file);
    EXPECT_TRUE(in) << in.error().message();
    return diagnose(*rules, catalog(), *in);
}

// ------------------------------------------------ discover recordings

nlohmann::json type_json(const std::string& type, double touches, double handoffs, double cross_node) {
    return {{"type", type},
            {"touches_per_s", touches},
            {"handoffs_per_s", handoffs},
            {"cross_node_per_s", cross_node},
            {"attach_points", {{{"attach", "tracepoint sched_waking arg 0"}}, {{"attach", "tracepoint sched_switch arg 2"}}}},
            {"layout",
             {{"type", type},
              {"lines",
               {{{"line", 0}, {"fields", {"__state", "usage"}}, {"written_by_every_user", {"usage (refcount_t)"}}},
                {{"line", 1}, {"fields", {"prio"}}, {"written_by_every_user", nlohmann::json::array()}}}}}}};
}

// A recording document as `hotline discover -o` writes it, reduced to what diagnosis reads.
nlohmann::json recording(const nlohmann::json& types) {
    return {{"schema", "hotline.recording"},
            {"kernel", {{"release", "6.18.0"}}},
            {"analysis", {{"diagnosis", {{"metrics", nlohmann::json::object()}, {"applicability", nlohmann::json::object()}}}}},
            {"discover", {{"types", types}}}};
}

Diagnosis diagnose_doc(const nlohmann::json& doc) {
    auto rules = RuleSet::builtin(catalog());
    EXPECT_TRUE(rules) << rules.error().message();
    auto in = input_from_recording(doc, "discover.json");
    EXPECT_TRUE(in) << in.error().message();
    return diagnose(*rules, catalog(), *in);
}

std::vector<const Finding*> of_rule(const Diagnosis& d, const std::string& rule) {
    std::vector<const Finding*> out;
    for (const auto& f : d.findings)
        if (f.rule == rule) out.push_back(&f);
    return out;
}

}  // namespace

TEST(DiagnoseRules, BuiltinLoadsAndCoversTheIssueCases) {
    auto rules = RuleSet::builtin(catalog());
    ASSERT_TRUE(rules) << rules.error().message();
    for (const char* name : {"dst-cross-node-handoffs", "dst-cross-cpu-handoffs", "dst-refcnt-read-mostly-line",
                             "tcp-prequeue-dst-bounce", "early-demux-dst-check", "random-mix-work-from-irq",
                             "remote-work-queueing"})
        EXPECT_NE(rules->find(name), nullptr) << name;
}

// Every rule, built-in or not, fires when all its conditions hold and not when
// the last one fails; its evidence lists every condition.
TEST(DiagnoseRules, EveryRuleFiresOnItsEvidenceOnly) {
    auto rules = RuleSet::builtin(catalog());
    ASSERT_TRUE(rules);
    for (auto& r : rules->rules()) {
        Diagnosis yes = diagnose(*rules, catalog(), input_for(r, true));
        auto it = std::find_if(yes.findings.begin(), yes.findings.end(), [&](auto& f) { return f.rule == r.name; });
        ASSERT_NE(it, yes.findings.end()) << r.name;
        EXPECT_EQ(it->evidence.size(), r.when.size()) << r.name;
        EXPECT_EQ(it->fixes.size(), r.fixes.size()) << r.name;
        Diagnosis no = diagnose(*rules, catalog(), input_for(r, false));
        for (auto& f : no.findings) EXPECT_NE(f.rule, r.name);
    }
}

TEST(DiagnoseRules, MissingNumbersAreNotJudgedAndSayWhy) {
    auto rules = RuleSet::builtin(catalog());
    ASSERT_TRUE(rules);
    DiagnoseInput in;
    TargetPlan tp;
    tp.target = "dst_release";
    tp.unavailable_reason = "fentry refused: lockdown";
    in.plan.targets.push_back(tp);
    Diagnosis d = diagnose(*rules, catalog(), in);
    EXPECT_TRUE(d.findings.empty());
    ASSERT_FALSE(d.unjudged.empty());
    bool named = false;
    for (auto& u : d.unjudged)
        if (u.rule == "dst-cross-node-handoffs") named = u.why.find("dst_release unavailable: fentry refused") != std::string::npos;
    EXPECT_TRUE(named);
}

TEST(DiagnoseRules, ErrorsNameFileAndLine) {
    EXPECT_EQ(parse_error("[[rule]]\nname = \"x\"\nsummary = \"s\"\nmeaning = \"m\"\n[[rule.when]]\n"
                          "metric = \"handoff.dst_release.cross_node_sharez\"\nabove = 1\n")
                  .rfind("rules.toml:6: unknown metric \"handoff.dst_release.cross_node_sharez\"", 0),
              0u);
    EXPECT_NE(parse_error("[[rule]]\nname = \"x\"\nsummary = \"s\"\nmeaning = \"m\"\n[[rule.when]]\n"
                          "metric = \"handoff.no_such_fn.cross_node_share\"\nabove = 1\n")
                  .find("rules.toml:6: metric \"handoff.no_such_fn.cross_node_share\" names no watched function"),
              std::string::npos);
    EXPECT_NE(parse_error("[[rule]]\nname = \"x\"\nsummary = \"s\"\nmeaning = \"m\"\nfixes = [\"no-such-fix\"]\n"
                          "[[rule.when]]\nmetric = \"work.remote_share\"\nabove = 1\n")
                  .find("rules.toml:5: unknown fix \"no-such-fix\""),
              std::string::npos);
    EXPECT_NE(parse_error("[[rule]]\nname = \"x\"\nsummary = \"s\"\nmeaning = \"m\"\n").find("rules.toml:1: [[rule]] needs [[rule.when]]"),
              std::string::npos);
    EXPECT_NE(parse_error("[[rule]]\nname = \"x\"\nsummary = \"s\"\nmeaning = \"m\"\n[[rule.when]]\n"
                          "metric = \"work.remote_share\"\nabove = 1\nbelow = 2\n")
                  .find("rules.toml:5: [[rule.when]] needs exactly one of"),
              std::string::npos);
    EXPECT_NE(parse_error("[[rule]]\nname = \"x\"\nseverity = \"dire\"\nsummary = \"s\"\nmeaning = \"m\"\n"
                          "[[rule.when]]\nmetric = \"work.remote_share\"\nabove = 1\n")
                  .find("rules.toml:3: unknown severity \"dire\""),
              std::string::npos);
    EXPECT_NE(parse_error("[[rule]]\nname = \"x\"\nsummary = \"s\"\nmeaning = \"m\"\ntreshold = 1\n"
                          "[[rule.when]]\nmetric = \"work.remote_share\"\nabove = 1\n")
                  .find("rules.toml:5:"),
              std::string::npos);
    EXPECT_NE(parse_error("[[rule]\n").find("rules.toml:1"), std::string::npos);
    for (const char* t : {"nan", "inf", "-inf"}) {
        SCOPED_TRACE(t);
        EXPECT_NE(parse_error(std::string("[[rule]]\nname = \"x\"\nsummary = \"s\"\nmeaning = \"m\"\n[[rule.when]]\n"
                                          "metric = \"work.remote_share\"\nabove = ") + t + "\n")
                      .find("rules.toml:7: \"above\" must be a finite number"),
                  std::string::npos);
    }
}

TEST(DiagnoseRules, RuleFilesBesideTheCatalog) {
    namespace fs = std::filesystem;
    fs::path dir = fs::temp_directory_path() / fmt::format("hl-rules-{}", getpid());
    fs::create_directories(dir);
    std::ofstream(dir / "mine.toml") << "[[rule]]\nname = \"mine\"\nsummary = \"s\"\nmeaning = \"m\"\n"
                                        "fixes = [\"numa-local\"]\n[[rule.when]]\nmetric = \"work.queued_per_s\"\n"
                                        "above = 1\n";
    auto cat = load_catalog(dir.string());
    ASSERT_TRUE(cat) << cat.error().message();
    auto rules = load_rules(*cat, dir.string());
    ASSERT_TRUE(rules) << rules.error().message();
    EXPECT_NE(rules->find("mine"), nullptr);
    std::ofstream(dir / "mine.toml") << "[[rule]]\nname = \"dst-cross-node-handoffs\"\nsummary = \"s\"\n"
                                        "meaning = \"m\"\n[[rule.when]]\nmetric = \"work.queued_per_s\"\nabove = 1\n";
    auto dup = load_rules(*cat, dir.string());
    ASSERT_FALSE(dup);
    EXPECT_NE(dup.error().message().find((dir / "mine.toml").string() + ":1: rule \"dst-cross-node-handoffs\" is "
                                                                        "already defined at builtin:"),
              std::string::npos)
        << dup.error().message();
    fs::remove_all(dir);
}

TEST(DiagnoseMetrics, EveryNameTheRecordingProducesIsInTheTable) {
    Interval iv;
    iv.t_end = 2;
    TargetCounters t;
    t.target = "dst_release";
    t.fidelity = Fidelity::kExact;
    t.calls = {10, 10};
    t.has_latency = true;
    t.lat_count = 2;
    t.has_handoffs = true;
    t.handoffs.tracked = {10, 10};
    t.handoffs.cross_cpu = {1, 1};
    t.handoffs.cross_node = {1, 0};
    iv.d.targets.push_back(t);
    iv.d.has_workq = true;
    iv.d.workq.irqs = {5, 5};
    iv.d.workq.queued = {3, 3};
    iv.d.workq.remote = {1, 0};
    iv.d.workq.funcs["mix_interrupt_randomness"] = 2;
    TrialMetrics m = trial_metrics(iv, {.ops = 4, .seconds = 2, .cpu_seconds = 1, .extra = {{"latency_p50_us", 1}}});
    LineLayout l;
    l.type = "dst_entry";
    add_layout_metrics(m, l);
    m["knob.net.ipv4.tcp_low_latency"] = 0;
    EXPECT_GE(m.size(), 15u);
    for (auto& [name, v] : m)
        EXPECT_TRUE(match_metric_name(name, [](std::string_view s) { return s == "dst_release"; })) << name;
    EXPECT_DOUBLE_EQ(m["handoff.dst_release.cross_node_share"], 1.0 / 20);
    EXPECT_DOUBLE_EQ(m["handoff.dst_release.cross_cpu_share"], 3.0 / 20);
    EXPECT_DOUBLE_EQ(m["work.remote_share"], 1.0 / 6);
    EXPECT_FALSE(match_metric_name("handoff.dst_release"));
    EXPECT_FALSE(match_metric_name("knob.x"));
}

// The three recordings the issue names (tests/fixtures/diagnose/README.md).
TEST(DiagnoseFixtures, Guest61CrossNodeChurnPrescribesNumaLocalAndTheUpgrade) {
    Diagnosis d = diagnose_fixture("guest-6.1-churn-split.json");
    EXPECT_EQ(prescribed(d), (std::set<std::string>{"numa-local", "dst-refcnt-false-sharing"}));
    ASSERT_FALSE(d.findings.empty());
    EXPECT_EQ(d.findings.front().rule, "dst-cross-node-handoffs");
    for (auto& f : d.findings)
        for (auto& a : f.fixes) {
            if (a.fix == "numa-local") {
                EXPECT_EQ(a.confirm, "hotline validate --fix numa-local --scenario tcp-crr --targets dst_release");
            }
            if (a.fix == "dst-refcnt-false-sharing") {
                EXPECT_EQ(a.status, FixStatus::kKernelFixAbsent);
                EXPECT_EQ(a.confirm, "hotline ab --fix dst-refcnt-false-sharing");
            }
        }
}

TEST(DiagnoseFixtures, Guest612SameShapePrescribesNumaLocalOnly) {
    Diagnosis d = diagnose_fixture("guest-6.12-churn-split.json");
    EXPECT_EQ(prescribed(d), (std::set<std::string>{"numa-local"}));
}

TEST(DiagnoseFixtures, QuietHostHasNoFindingAndSaysWhy) {
    Diagnosis d = diagnose_fixture("host-quiet.json");
    EXPECT_TRUE(d.findings.empty());
    EXPECT_FALSE(d.quiet.empty());
    EXPECT_FALSE(d.refused.empty());
    std::ostringstream os;
    render_diagnosis_text(os, d);
    EXPECT_NE(os.str().find("nothing found"), std::string::npos) << os.str();
    EXPECT_NE(os.str().find("mechanisms this kernel refused:"), std::string::npos) << os.str();
    nlohmann::json j = to_json(d);
    EXPECT_EQ(j["schema"], kFindingsSchema);
    EXPECT_TRUE(j["findings"].empty());
}

// Found by fuzz_recording: a recording is outside input, so a field of the wrong
// type (here a duplicate "schema" key whose last value is an object, and a
// stored applicability with a string where a boolean belongs) is an error
// naming the recording, not an exception that ends the process.
TEST(DiagnoseInput, WrongTypedFieldsAreErrorsNotCrashes) {
    auto dup = nlohmann::json::parse(R"({"schema": "hotline.recording", "schema": {"release": "6.12"}})");
    auto r = input_from_recording(dup, "dup.json");
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message().find("dup.json: not a hotline recording"), std::string::npos) << r.error().message();

    auto base = nlohmann::json::parse(
        R"({"schema": "hotline.recording", "analysis": {"diagnosis": {"metrics": {}, "applicability": {}}}})");
    for (const char* bad : {R"({"numa-local": {"applicable": "yes"}})", R"({"numa-local": {"checks": [1]}})",
                            R"({"numa-local": {"reasons": [false]}})", R"({"numa-local": {"carries_fix": 1}})",
                            R"([])"}) {
        auto doc = base;
        doc["analysis"]["diagnosis"]["applicability"] = nlohmann::json::parse(bad);
        auto in = input_from_recording(doc, "typed.json");
        ASSERT_FALSE(in) << bad;
        EXPECT_NE(in.error().message().find("typed.json"), std::string::npos) << in.error().message();
    }
    auto doc = base;
    doc["analysis"]["diagnosis"]["metrics"] = "not metrics";
    auto in = input_from_recording(doc, "metrics.json");
    ASSERT_FALSE(in);
    EXPECT_NE(in.error().message().find("wrong type"), std::string::npos) << in.error().message();
}

// docs/diagnose.md's table of built-in rules names exactly the built-in rules, in their order.
TEST(DiagnoseRules, DocsListEveryBuiltinRule) {
    auto doc_text = read_file(std::string(HOTLINE_FIXTURES) + "/../../docs/diagnose.md");
    ASSERT_TRUE(doc_text) << doc_text.error().message();
    std::istringstream doc(*doc_text);
    std::vector<std::string> listed;
    bool in_table = false;
    for (std::string line; std::getline(doc, line);) {
        if (line.rfind("| built-in rule |", 0) == 0) in_table = true;
        else if (line.empty()) in_table = false;
        else if (in_table && line.rfind("| `", 0) == 0) listed.push_back(line.substr(3, line.find('`', 3) - 3));
    }
    auto rules = RuleSet::builtin(catalog());
    ASSERT_TRUE(rules);
    std::vector<std::string> built_in;
    for (auto& r : rules->rules()) built_in.push_back(r.name);
    EXPECT_EQ(listed, built_in) << "docs/diagnose.md's rule table and src/diagnose/builtin_rules.toml differ";
}

// A `hotline discover` recording: the rule on discover.*.<metric> judged once per
// struct type, its finding naming the type, who touched it and the lines holding
// what every user writes; a type with a rule of its own (dst_entry) judged by
// that rule, with the catalog fix for it.
TEST(DiagnoseDiscover, EachTypeAboveTheThresholdIsAFindingNamingItsLinesAndAttachPoints) {
    auto d = diagnose_doc(recording({type_json("task_struct", 120000, 60000, 0), type_json("sock", 500000, 100, 0),
                                     type_json("timer_list", 3000, 1500, 0)}));
    auto found = of_rule(d, "discovered-type-handoffs");
    ASSERT_EQ(found.size(), 2u);
    const Finding& task = *found[0];
    EXPECT_EQ(task.summary, "objects of struct task_struct move between CPUs");
    EXPECT_NE(task.meaning.find("No catalog fix names task_struct."), std::string::npos) << task.meaning;
    EXPECT_NE(task.meaning.find("line 0: usage (refcount_t)"), std::string::npos) << task.meaning;
    EXPECT_EQ(task.meaning.find("line 1:"), std::string::npos) << "a line without refcounts, atomics or locks";
    EXPECT_NE(task.meaning.find("Touched by: tracepoint sched_waking arg 0"), std::string::npos) << task.meaning;
    ASSERT_EQ(task.evidence.size(), 2u);
    EXPECT_EQ(task.evidence[0].metric, "discover.task_struct.handoffs_per_s");
    EXPECT_EQ(task.evidence[0].mechanism, "discover");
    EXPECT_EQ(found[1]->summary, "objects of struct timer_list move between CPUs");
    // sock: 100 handoffs/s of 500,000 touches, below both thresholds.
    for (const Finding* f : found) EXPECT_EQ(f->summary.find("sock"), std::string::npos);
}

TEST(DiagnoseDiscover, DstEntryIsJudgedByItsOwnRuleWithTheCatalogFix) {
    auto d = diagnose_doc(recording(nlohmann::json::array({type_json("dst_entry", 200000, 50000, 20000)})));
    EXPECT_TRUE(of_rule(d, "discovered-type-handoffs").empty()) << "dst_entry has a rule of its own";
    auto own = of_rule(d, "discovered-dst-cross-node");
    ASSERT_EQ(own.size(), 1u);
    ASSERT_EQ(own[0]->fixes.size(), 2u);
    EXPECT_EQ(own[0]->fixes[0].fix, "numa-local");
    EXPECT_EQ(own[0]->fixes[1].fix, "rps-node");
}

TEST(DiagnoseDiscover, ARecordingWithoutDiscoverJudgesNoTypeRule) {
    auto doc = recording(nlohmann::json::array());
    doc.erase("discover");
    auto d = diagnose_doc(doc);
    EXPECT_TRUE(of_rule(d, "discovered-type-handoffs").empty());
    for (const auto& u : d.unjudged) EXPECT_EQ(u.rule.find("discovered-"), std::string::npos) << u.rule;
}

// A fix that runs live is confirmed on the recorded command, typed as a shell
// needs it; one that needs hotline's scenario keeps the scenario form.
TEST(DiagnoseConfirm, LiveFixesAreConfirmedOnTheRecordedCommandAndScenarioFixesInTheirScenario) {
    auto cat = FixCatalog::builtin();
    ASSERT_TRUE(cat);
    RuleDef rule;
    FixAdvice a;
    set_confirmation(a, *cat->find("rfs"), rule, {});
    EXPECT_EQ(a.confirm, "hotline validate --fix rfs --live --allow-global --targets dst_release --observe 10s");
    set_confirmation(a, *cat->find("rfs"), rule, {"wrk", "-c", "8", "http://h/a b", "it's"});
    EXPECT_EQ(a.confirm, "hotline validate --fix rfs --live --allow-global --targets dst_release -- wrk -c 8 "
                         "'http://h/a b' 'it'\\''s'");
    set_confirmation(a, *cat->find("placement"), rule, {"./svc", "--port=80"});
    EXPECT_EQ(a.confirm, "hotline validate --fix placement --live --targets dst_release -- ./svc --port=80");
    set_confirmation(a, *cat->find("placement"), rule, {});
    EXPECT_EQ(a.confirm, "hotline validate --fix placement --scenario tcp-crr --targets dst_release");
    set_confirmation(a, *cat->find("cpu-local"), rule, {"./svc"});
    EXPECT_EQ(a.confirm, "hotline validate --fix cpu-local --scenario tcp-crr --targets dst_release");
    set_confirmation(a, *cat->find("rfs"), rule, {"printf", "\x1b[2J"});
    EXPECT_EQ(a.confirm.find('\x1b'), std::string::npos) << "a control character reached the confirmation";
}
